#!/usr/bin/python3
"""Hugging Face LlamaForCausalLM directories for kina's import, and their logits (NumPy, float64).

Run from the repository root:

    /usr/bin/python3 scripts/reference_hf_import.py

Writes three small models under src/test/resources/fixtures/hf-import/, each from seeded random
weights, in the layout transformers reads (config.json with LlamaConfig's fields, safetensors with
LlamaForCausalLM's tensor names, Linear weights out x in), written here from that description:

  f32-gqa-bpe        F32; 4 query heads over 2 kv heads, head_dim given, rope_theta 500000,
                     rms_norm_eps 1e-6, an untied lm_head; a tokenizer.json in Llama 2's form
                     (a BPE with byte fallback, the normalizer Prepend("▁") + Replace(" ", "▁"),
                     merges as "a b" strings) over a small vocabulary built here
  bf16-tied-sharded  BF16 in two shards with model.safetensors.index.json; tie_word_embeddings
                     (no lm_head tensor); vocab 256 and no tokenizer.json
  f16-mha            F16; 2 heads; a byte-level tokenizer.json (256 byte tokens, the space as ▁)

and for each logits.npy: the logits of IDS at every position, computed from the stored values
(widened to float64) with transformers' conventions: x = embed_tokens[ids]; per layer
x += o_proj(attn(rope(q_proj h), rope(k_proj h), v_proj h)) with h = RMSNorm(x), RoPE by rotate_half
on half-split pairs at pos * rope_theta^(-2i/head_dim), causal softmax at 1/sqrt(head_dim), query
head j reading kv head j // (heads / kv_heads); x += down(silu(gate h) * up h) with
h = RMSNorm(x); logits = lm_head(RMSNorm(x)), lm_head = embed_tokens when tied. RMSNorm is
w * x / sqrt(mean(x^2) + rms_norm_eps).
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_interop import hf_logits  # noqa: E402

DIR = "src/test/resources/fixtures/hf-import"
IDS = [84, 104, 101, 32, 109, 97, 110, 32, 119, 104, 111, 32, 115, 97, 105, 100]
SPACE = "\u2581"


def stored(a, dtype):
    """(safetensors dtype name, little-endian bytes, the values as stored, float64)."""
    t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))
    if dtype == "F32":
        return "F32", t.numpy().astype("<f4").tobytes(), t.double().numpy()
    tt = t.to(torch.float16 if dtype == "F16" else torch.bfloat16)
    raw = tt.view(torch.int16).numpy().astype("<i2").tobytes()
    return dtype, raw, tt.double().numpy()


def write_safetensors(path, tensors):
    """tensors: list of (name, dtype, shape, raw bytes), written in order."""
    header, offset = {}, 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for _, _, _, raw in tensors:
            f.write(raw)


def model(name, cfg, dtype, seed, shards=1, tokenizer=None):
    out = os.path.join(DIR, name)
    os.makedirs(out, exist_ok=True)
    rng = np.random.RandomState(seed)
    d, f, heads, kv, layers, vocab = (cfg[k] for k in ("hidden_size", "intermediate_size", "num_attention_heads",
                                                       "num_key_value_heads", "num_hidden_layers", "vocab_size"))
    hd = cfg.get("head_dim", d // heads)

    def mat(o, i):
        return rng.standard_normal((o, i)) / math.sqrt(i)

    def gain(n):
        return 1 + 0.2 * rng.standard_normal(n)

    named = [("model.embed_tokens.weight", rng.standard_normal((vocab, d)))]
    for l in range(layers):
        p = "model.layers.%d." % l
        named += [(p + "input_layernorm.weight", gain(d)), (p + "self_attn.q_proj.weight", mat(heads * hd, d)),
                  (p + "self_attn.k_proj.weight", mat(kv * hd, d)), (p + "self_attn.v_proj.weight", mat(kv * hd, d)),
                  (p + "self_attn.o_proj.weight", mat(d, heads * hd)), (p + "post_attention_layernorm.weight", gain(d)),
                  (p + "mlp.gate_proj.weight", mat(f, d)), (p + "mlp.up_proj.weight", mat(f, d)), (p + "mlp.down_proj.weight", mat(d, f))]
    named.append(("model.norm.weight", gain(d)))
    if not cfg["tie_word_embeddings"]:
        named.append(("lm_head.weight", 3 * mat(vocab, d)))
    tensors, values = [], {}
    for n, a in named:
        dt, raw, v = stored(a, dtype)
        tensors.append((n, dt, a.shape, raw))
        values[n] = v
    if shards == 1:
        write_safetensors(os.path.join(out, "model.safetensors"), tensors)
    else:
        per = (len(tensors) + shards - 1) // shards
        weight_map = {}
        for s in range(shards):
            file = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
            part = tensors[s * per:(s + 1) * per]
            write_safetensors(os.path.join(out, file), part)
            for n, _, _, _ in part:
                weight_map[n] = file
        size = sum(len(raw) for _, _, _, raw in tensors)
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as fh:
            json.dump({"metadata": {"total_size": size}, "weight_map": weight_map}, fh, indent=2)
    with open(os.path.join(out, "config.json"), "w") as fh:
        json.dump(cfg, fh, indent=2)
    if tokenizer is not None:
        with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as fh:
            json.dump(tokenizer, fh, indent=2, ensure_ascii=False)
    logits = hf_logits(values, cfg, IDS)
    np.save(os.path.join(out, "logits.npy"), logits)
    print("wrote", out, logits.shape, "max |logit| %.3f" % np.abs(logits).max())


def llama_config(**kw):
    c = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu", "attention_bias": False,
         "mlp_bias": False, "max_position_embeddings": 64, "torch_dtype": "float32"}
    c.update(kw)
    return c


def byte_tokenizer():
    vocab = {("<0x%02X>" % b if b != 0x20 else SPACE): b for b in range(256)}
    return {"version": "1.0", "added_tokens": [], "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": SPACE},
            "pre_tokenizer": None, "decoder": None,
            "model": {"type": "BPE", "unk_token": None, "byte_fallback": True, "fuse_unk": True, "vocab": vocab, "merges": []}}


def bpe_tokenizer():
    """Llama 2's form over a small vocabulary: specials, the bytes, characters, then merged tokens
    scored by their order; the merges are every split of a merged token into two tokens, by score."""
    pieces = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    chars = sorted(set("The quick brown fox jumps over the lazy dog, and a man who said so.".replace(" ", SPACE)))
    pieces += chars
    merged = [SPACE + "t", "he", SPACE + "the", "an", SPACE + "a", "nd", SPACE + "and", "o" + SPACE, "ou", "er", SPACE + "s", "ai", SPACE + "sai",
              SPACE + "said", "wh", SPACE + "wh", SPACE + "who", "ma", SPACE + "man"]
    score = {p: 0.0 for p in pieces}
    for i, m in enumerate(merged):
        score[m] = -float(i)
    pieces += merged
    vocab = {p: i for i, p in enumerate(pieces)}
    merges = []
    for m in merged:                                        # by score, highest first
        for k in range(1, len(m)):
            a, b = m[:k], m[k:]
            if a in vocab and b in vocab:
                merges.append(a + " " + b)
    added = [{"id": i, "content": p, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
             for i, p in enumerate(pieces[:3])]
    return {"version": "1.0", "added_tokens": added,
            "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": SPACE},
                                                               {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]},
            "pre_tokenizer": None,
            "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
                                                         {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": True, "byte_fallback": True, "vocab": vocab, "merges": merges}}


def main():
    bpe = bpe_tokenizer()
    model("f32-gqa-bpe", llama_config(hidden_size=32, intermediate_size=48, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                      num_hidden_layers=2, vocab_size=len(bpe["model"]["vocab"]), rms_norm_eps=1e-6, rope_theta=500000.0,
                                      tie_word_embeddings=False, bos_token_id=1, eos_token_id=2),
          "F32", 31, tokenizer=bpe)
    model("bf16-tied-sharded", llama_config(hidden_size=32, intermediate_size=40, num_attention_heads=2, num_key_value_heads=2,
                                            num_hidden_layers=2, vocab_size=256, rms_norm_eps=1e-5, rope_theta=10000.0,
                                            tie_word_embeddings=True, torch_dtype="bfloat16"),
          "BF16", 32, shards=2)
    model("f16-mha", llama_config(hidden_size=32, intermediate_size=48, num_attention_heads=2, num_key_value_heads=2, head_dim=16,
                                  num_hidden_layers=2, vocab_size=256, rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                                  torch_dtype="float16"),
          "F16", 33, tokenizer=byte_tokenizer())


if __name__ == "__main__":
    main()
