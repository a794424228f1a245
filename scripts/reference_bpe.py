#!/usr/bin/python3
"""Reference fixtures for kina's byte-level BPE (kina.model.BpeTokenizer).

Run from the repository root (needs Debian's python3-sentencepiece for the second fixture):

    /usr/bin/python3 scripts/reference_bpe.py

1. bpe_kina_v400.bin: the tokenizer kina's training algorithm makes from bpe_train.txt with 400
   ids, written here from the description alone (chunks: a space starts one, every other
   whitespace byte is one; characters as llama2.c's run.c reads UTF-8; ids 0-2 <unk>, <s>, </s>;
   3-258 the bytes <0x00>..<0xFF>; then the characters seen twice or more (and " "), most
   frequent first while they fit, ordered by their bytes; then merges of the most frequent
   adjacent pair over all chunks (the smallest ids on a tie; no pair with a raw byte), each new
   piece scored -(its merge index), a piece that exists already reused).
2. bpe_sentencepiece_v400.bin: a sentencepiece BPE (byte fallback, identity normalization)
   trained on the same text, exported as llama2.c's tokenizer.py exports tokenizer.model.
3. bpe_encodings.json: for test strings, run.c's encode (written here as run.c does it, O(n^2))
   with both tokenizers, and sentencepiece's own encode with its model.

tokenizer.bin: int32 max token length, then per id float32 score, int32 length, bytes.
"""
import json
import os
import struct
import sys
import tempfile

OUT = "src/test/resources/fixtures/bpe"
TEXT = os.path.join(OUT, "bpe_train.txt")
VOCAB = 400

STRINGS = [
    "The man who was there said that he would go.",
    "  two spaces, a tab\tand\nnew lines\n\n",
    "caf\u00e9 \u20ac5 na\u00efve \U0001F600!",
    "",
    "x",
    "Mr. Thompson's 1961 report -- \"unusual\" (they said); 42% of it.",
]


def chunks(text):
    out, start = [], 0
    other = b"\n\t\r\x0b\x0c"
    for i in range(len(text) + 1):
        end = i == len(text)
        cut = end or ((text[i] & 0xC0) != 0x80 and (text[i] == 0x20 or text[i] in other or (i > 0 and text[i - 1] in other)))
        if cut and i > start:
            out.append(text[start:i])
            start = i
    return out


def characters(chunk):
    out, start, n = [], 0, 0
    for i in range(len(chunk)):
        if (chunk[i] & 0xC0) != 0x80:
            start, n = i, 0
        n += 1
        if i + 1 < len(chunk) and (chunk[i + 1] & 0xC0) == 0x80 and n < 4:
            continue
        out.append(chunk[start:i + 1])
        start, n = i + 1, 0
    return out


def train(text, vocab):
    counts = {}
    for c in chunks(text):
        counts[c] = counts.get(c, 0) + 1
    chars = {}
    for c, f in counts.items():
        for u in characters(c):
            chars[u] = chars.get(u, 0) + f
    seen = sorted(((f, u) for u, f in chars.items() if f >= 2 and u != b" "), key=lambda e: (-e[0], e[1]))
    base = [b" "] + [u for f, u in seen][:max(0, vocab - 259 - 1)]
    base.sort()
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [b"<0x%02X>" % b for b in range(256)] + base
    scores = [0.0] * len(pieces)
    ids = {p: i for i, p in enumerate(pieces) if i >= 259}
    words = []
    for c, f in counts.items():
        s = []
        for u in characters(c):
            if u in ids:
                s.append(ids[u])
            else:
                s.extend(3 + b for b in u)
        words.append([s, f])
    merges = 0
    while len(pieces) < vocab:
        pairs = {}
        for s, f in words:
            for i in range(len(s) - 1):
                if s[i] >= 259 and s[i + 1] >= 259:
                    pairs[(s[i], s[i + 1])] = pairs.get((s[i], s[i + 1]), 0) + f
        if not pairs:
            raise SystemExit("too few pairs")
        (a, b), _ = min(pairs.items(), key=lambda e: (-e[1], e[0]))
        piece = pieces[a] + pieces[b]
        t = ids.get(piece)
        if t is None:
            t = len(pieces)
            ids[piece] = t
            pieces.append(piece)
            scores.append(float(-merges))
        merges += 1
        for w in words:
            s, out, i = w[0], [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(t)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            w[0] = out
    return pieces, scores


def write_bin(path, pieces, scores):
    with open(path, "wb") as f:
        f.write(struct.pack("<i", max(len(p) for p in pieces)))
        for p, s in zip(pieces, scores):
            f.write(struct.pack("<fi", s, len(p)))
            f.write(p)


def read_bin(path, vocab):
    with open(path, "rb") as f:
        data = f.read()
    at, pieces, scores = 4, [], []
    for _ in range(vocab):
        s, n = struct.unpack_from("<fi", data, at)
        at += 8
        pieces.append(data[at:at + n])
        scores.append(s)
        at += n
    return pieces, scores


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def run_c_encode(pieces, scores, text, bos, dummy):
    """llama2.c run.c's encode(), line for line (C strings: a piece ends at its first NUL)."""
    cstr = [p.split(b"\0")[0] for p in pieces]
    lookup = {}
    for i, p in enumerate(cstr):
        lookup.setdefault(p, i)
    tokens = []
    if bos:
        tokens.append(1)
    if dummy and text:
        tokens.append(lookup[b" "])
    buf, i = b"", 0
    while i < len(text):
        if (text[i] & 0xC0) != 0x80:
            buf = b""
        buf += text[i:i + 1]
        if i + 1 < len(text) and (text[i + 1] & 0xC0) == 0x80 and len(buf) < 4:
            i += 1
            continue
        if buf in lookup:
            tokens.append(lookup[buf])
        else:
            tokens.extend(b + 3 for b in buf)
        buf = b""
        i += 1
    while True:
        best, best_id, best_idx = f32(-1e10), -1, -1
        for k in range(len(tokens) - 1):
            j = lookup.get(cstr[tokens[k]] + cstr[tokens[k + 1]], -1)
            if j != -1 and f32(scores[j]) > best:
                best, best_id, best_idx = f32(scores[j]), j, k
        if best_idx == -1:
            break
        tokens[best_idx:best_idx + 2] = [best_id]
    return tokens


def sentencepiece_fixture(text_path, bin_path):
    import sentencepiece as spm
    with tempfile.TemporaryDirectory() as d:
        prefix = os.path.join(d, "sp")
        spm.SentencePieceTrainer.train(input=text_path, model_prefix=prefix, model_type="bpe", vocab_size=VOCAB,
                                       byte_fallback=True, character_coverage=1.0, normalization_rule_name="identity",
                                       remove_extra_whitespaces=False, split_digits=False, max_sentence_length=100000,
                                       num_threads=1, minloglevel=2)
        sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
        pieces, scores = [], []
        for i in range(sp.vocab_size()):
            t = sp.id_to_piece(i)
            if i == sp.bos_id():
                t = "\n<s>\n"
            elif i == sp.eos_id():
                t = "\n</s>\n"
            pieces.append(t.replace("\u2581", " ").encode("utf-8"))
            scores.append(sp.get_score(i))
        write_bin(bin_path, pieces, scores)
        return sp, pieces, scores


def main():
    with open(TEXT, "rb") as f:
        text = f.read()
    pieces, scores = train(text, VOCAB)
    kina_bin = os.path.join(OUT, "bpe_kina_v400.bin")
    write_bin(kina_bin, pieces, scores)
    sp_bin = os.path.join(OUT, "bpe_sentencepiece_v400.bin")
    sp, sp_pieces, sp_scores = sentencepiece_fixture(TEXT, sp_bin)
    cases = []
    for s in STRINGS:
        b = s.encode("utf-8")
        sp_ids = sp.encode(s)
        runc_sp = run_c_encode(sp_pieces, sp_scores, b, False, True)
        cases.append({"text": s,
                      "kina": run_c_encode(pieces, scores, b, False, False),
                      "kina_bos_dummy": run_c_encode(pieces, scores, b, True, True),
                      "sentencepiece": sp_ids,
                      "runc_with_sentencepiece_bin": runc_sp})
        if runc_sp != sp_ids:
            print("note: run.c's encode differs from sentencepiece's on %r" % s, file=sys.stderr)
    with open(os.path.join(OUT, "bpe_encodings.json"), "w") as f:
        json.dump({"vocab": VOCAB, "train": "bpe_train.txt", "cases": cases}, f, indent=1, ensure_ascii=True)
        f.write("\n")
    # sanity: the text round-trips through the kina tokenizer's pieces
    ids = run_c_encode(pieces, scores, text[:2000], False, False)
    decoded = b"".join(bytes([t - 3]) if 3 <= t < 259 else pieces[t] for t in ids)
    assert decoded == text[:2000]
    print("wrote %s, %s and bpe_encodings.json" % (kina_bin, sp_bin))


if __name__ == "__main__":
    main()
