package kina.model;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;

/**
 * A byte-level BPE in llama2.c's layout: id 0 {@code <unk>}, 1 BOS, 2 EOS, ids 3…258 the raw
 * bytes {@code <0x00>}…{@code <0xFF>} (the byte fallback, so every input encodes), then pieces:
 * single characters, then the merges, each scored −(its merge index). Encoding is run.c's
 * algorithm exactly (so kina and run.c split a prompt alike): each UTF-8 character becomes its
 * piece, or its bytes when it has none; then, while any adjacent pair's concatenated piece is in
 * the vocabulary, the pair whose piece scores highest (the leftmost on a tie) is merged. A heap
 * makes that O(n log n) rather than run.c's O(n²).
 *
 * <p>{@link #train} learns the merges from a text: the text is cut into chunks (a space starts
 * one, every other whitespace byte is one by itself), so no piece holds a space except first, and
 * the most frequent adjacent pair over all chunks (the smallest ids on a tie) is merged until the
 * vocabulary is full; pairs with a raw byte are never merged. scripts/reference_bpe.py is the same
 * algorithm in Python, and the tests hold both to the same vocabulary and encodings.
 */
public final class BpeTokenizer implements Tokenizer {
    /** The special ids and the first raw byte id of the layout. */
    public static final int UNK = 0, BOS = 1, EOS = 2, BYTE0 = 3, FIRST_PIECE = BYTE0 + 256;

    private static final byte[][] SPECIALS = {"<unk>".getBytes(StandardCharsets.US_ASCII),
            "\n<s>\n".getBytes(StandardCharsets.US_ASCII), "\n</s>\n".getBytes(StandardCharsets.US_ASCII)};

    private final byte[][] pieces;
    private final float[] scores;
    private final Map<String, Integer> ids = new HashMap<>();   // a piece as run.c compares it → its first id
    // memos of the two lookups encoding repeats: a character's bytes, and an adjacent pair of ids
    private final Map<Long, Integer> charIds = new java.util.concurrent.ConcurrentHashMap<>(), pairIds = new java.util.concurrent.ConcurrentHashMap<>();

    private final boolean chunkSafe;
    private final Map<String, int[]> chunkIds = new java.util.concurrent.ConcurrentHashMap<>();
    private static final int CHUNK_MEMO = 1 << 20;

    private BpeTokenizer(byte[][] pieces, float[] scores) {
        this.pieces = pieces;
        this.scores = scores;
        for (int i = 0; i < pieces.length; i++) ids.putIfAbsent(key(pieces[i], pieces[i].length), i);
        boolean safe = true;
        for (int i = BYTE0; i < pieces.length && safe; i++) safe = chunkSafe(pieces[i]);
        this.chunkSafe = safe;
    }

    /**
     * Whether no merge can cross a chunk boundary ({@link #chunks}): no space but first, no other
     * whitespace or NUL but alone. True of every vocabulary {@link #train} makes; then a text
     * encodes chunk by chunk, each distinct chunk once, with run.c's result.
     */
    private static boolean chunkSafe(byte[] p) {
        for (int k = 0; k < p.length; k++) {
            if (p[k] == ' ' && k > 0 || p[k] == 0) return false;
            if (other(p[k]) && p.length > 1) return false;
        }
        return true;
    }

    /** The byte piece of b: {@code <0xXX>}, upper-case hex as sentencepiece writes it. */
    static byte[] bytePiece(int b) { return String.format("<0x%02X>", b).getBytes(StandardCharsets.US_ASCII); }

    /** Whether pieces follow the layout: at least 259 ids, ids 3…258 the byte pieces. */
    static String layoutProblem(byte[][] pieces) {
        if (pieces.length < FIRST_PIECE) return "has " + pieces.length + " pieces; a byte-level BPE has at least " + FIRST_PIECE;
        for (int b = 0; b < 256; b++)
            if (!Arrays.equals(pieces[BYTE0 + b], bytePiece(b)))
                return "piece " + (BYTE0 + b) + " is '" + new String(pieces[BYTE0 + b], StandardCharsets.ISO_8859_1)
                        + "', not " + new String(bytePiece(b), StandardCharsets.US_ASCII) + " (ids 3…258 must be the bytes)";
        return null;
    }

    /**
     * Reads llama2.c's tokenizer.bin of {@code vocab} ids; {@code where} names it in errors.
     *
     * @throws DataError for a short or corrupt file, or pieces not in the byte-level layout
     */
    public static BpeTokenizer fromLlama2c(String where, byte[] file, int vocab) {
        Object[] read = readLlama2c(where, file, vocab);
        byte[][] pieces = (byte[][]) read[0];
        String problem = layoutProblem(pieces);
        if (problem != null) throw new DataError(where, "not a byte-level BPE kina can use: " + problem);
        return new BpeTokenizer(pieces, (float[]) read[1]);
    }

    /**
     * A BPE of these pieces and scores, as another file holds them (ids 0–2 take kina's special
     * pieces, whatever the file calls them); {@code where} names the file in errors.
     *
     * @throws DataError unless ids 3…258 are the bytes {@code <0x00>}…{@code <0xFF>}
     */
    public static BpeTokenizer of(String where, byte[][] pieces, float[] scores) {
        byte[][] p = pieces.clone();
        for (int i = 0; i < Math.min(BYTE0, p.length); i++) p[i] = SPECIALS[i].clone();
        String problem = layoutProblem(p);
        if (problem != null) throw new DataError(where, "not a byte-level BPE kina can use: " + problem);
        return new BpeTokenizer(p, scores.clone());
    }

    /** {pieces, scores} of a tokenizer.bin with {@code vocab} ids; DataError when it is short or corrupt. */
    static Object[] readLlama2c(String where, byte[] file, int vocab) {
        ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        byte[][] pieces = new byte[vocab][];
        float[] scores = new float[vocab];
        try {
            int max = b.getInt();
            for (int i = 0; i < vocab; i++) {
                scores[i] = b.getFloat();
                int len = b.getInt();
                if (len < 0 || len > max || len > b.remaining())
                    throw new DataError(where, "piece " + i + " has length " + len + " (max token length " + max + ", "
                            + b.remaining() + " bytes left)");
                pieces[i] = new byte[len];
                b.get(pieces[i]);
            }
        } catch (java.nio.BufferUnderflowException e) {
            throw new DataError(where, "ends early: " + file.length + " bytes hold fewer than the model's " + vocab + " pieces");
        }
        if (b.hasRemaining())
            throw new DataError(where, b.remaining() + " bytes after the model's " + vocab + " pieces (a tokenizer of another vocabulary?)");
        return new Object[] {pieces, scores};
    }

    @Override public int vocab() { return pieces.length; }

    @Override public String kind() { return "bpe"; }

    @Override public byte[] piece(int id) { check(id); return pieces[id].clone(); }

    @Override public float score(int id) { check(id); return scores[id]; }

    @Override public byte[] bytes(int id) {
        check(id);
        if (id < BYTE0) return new byte[0];
        if (id < FIRST_PIECE) return new byte[] {(byte) (id - BYTE0)};
        return pieces[id].clone();
    }

    private void check(int id) {
        if (id < 0 || id >= pieces.length) throw new IllegalArgumentException("token id " + id + " outside the vocabulary [0, " + pieces.length + ")");
    }

    /** A piece as run.c's strcmp sees it: its bytes up to the first NUL, one char per byte. */
    private static String key(byte[] b, int len) {
        int n = 0;
        while (n < len && b[n] != 0) n++;
        return new String(b, 0, n, StandardCharsets.ISO_8859_1);
    }

    private int lookup(byte[] b, int len) {
        Integer id = ids.get(key(b, len));
        return id == null ? -1 : id;
    }

    @Override public int[] encode(byte[] utf8) { return encode(utf8, false, false); }

    /**
     * run.c's {@code encode}: with {@code bos} the BOS id first, with {@code dummyPrefix} (and a
     * non-empty text) the piece of " " next, as run.c does for a prompt.
     */
    public int[] encode(byte[] text, boolean bos, boolean dummyPrefix) {
        if (dummyPrefix && text.length > 0 && lookup(new byte[] {' '}, 1) < 0)
            throw new IllegalStateException("this vocabulary has no piece \" \" for run.c's dummy prefix");
        if (chunkSafe) {
            // the dummy prefix is the piece " ", as a leading space byte would be
            byte[] t = text;
            if (dummyPrefix && text.length > 0) {
                t = new byte[text.length + 1];
                t[0] = ' ';
                System.arraycopy(text, 0, t, 1, text.length);
            }
            int[] out = new int[t.length + 1];
            int n = 0;
            if (bos) out[n++] = BOS;
            for (String c : chunks(t)) {
                int[] ids = chunkIds.get(c);
                if (ids == null) {
                    ids = whole(c.getBytes(StandardCharsets.ISO_8859_1), false, false);
                    if (chunkIds.size() < CHUNK_MEMO) chunkIds.put(c, ids);
                }
                System.arraycopy(ids, 0, out, n, ids.length);
                n += ids.length;
            }
            return Arrays.copyOf(out, n);
        }
        return whole(text, bos, dummyPrefix);
    }

    /** run.c's encode over the whole text at once (what {@link #encode} gives chunk by chunk when the vocabulary allows). */
    int[] whole(byte[] text, boolean bos, boolean dummyPrefix) {
        int[] tok = new int[text.length + 2];
        int n = 0;
        if (bos) tok[n++] = BOS;
        if (dummyPrefix && text.length > 0) tok[n++] = lookup(new byte[] {' '}, 1);
        byte[] buf = new byte[4];
        int len = 0;
        for (int i = 0; i < text.length; i++) {
            if ((text[i] & 0xC0) != 0x80) len = 0;            // not a continuation byte: a new character
            buf[len++] = text[i];
            if (i + 1 < text.length && (text[i + 1] & 0xC0) == 0x80 && len < 4) continue;
            long ck = len;
            for (int k = 0; k < len; k++) ck = ck << 8 | (buf[k] & 0xff);
            int chars = len;
            int id = charIds.computeIfAbsent(ck, _ -> lookup(buf, chars));
            if (id >= 0) tok[n++] = id;
            else for (int k = 0; k < len; k++) tok[n++] = BYTE0 + (buf[k] & 0xff);
            len = 0;
        }
        return merge(Arrays.copyOf(tok, n));
    }

    /** A candidate merge: the pair starting at node {@code left}, of tokens (a, b), into {@code id}. */
    private record Candidate(float score, int left, int a, int b, int id) {}

    /** run.c's merge loop: the best-scoring adjacent pair first, the leftmost on a tie, until none is in the vocabulary. */
    private int[] merge(int[] tok) {
        int n = tok.length;
        int[] next = new int[n], prev = new int[n];
        for (int i = 0; i < n; i++) { next[i] = i + 1 < n ? i + 1 : -1; prev[i] = i - 1; }
        boolean[] dead = new boolean[n];
        PriorityQueue<Candidate> heap = new PriorityQueue<>((x, y) ->
                x.score() != y.score() ? Float.compare(y.score(), x.score()) : Integer.compare(x.left(), y.left()));
        for (int i = 0; i + 1 < n; i++) offer(heap, tok, i, i + 1);
        int alive = n;
        while (!heap.isEmpty()) {
            Candidate c = heap.poll();
            int l = c.left(), r = next[l] < 0 ? -1 : next[l];
            if (dead[l] || r < 0 || tok[l] != c.a() || tok[r] != c.b()) continue;   // stale: a neighbour merged since
            tok[l] = c.id();
            dead[r] = true;
            next[l] = next[r];
            if (next[r] >= 0) prev[next[r]] = l;
            alive--;
            if (prev[l] >= 0) offer(heap, tok, prev[l], l);
            if (next[l] >= 0) offer(heap, tok, l, next[l]);
        }
        int[] out = new int[alive];
        for (int i = 0, k = 0; i < n; i++) if (!dead[i]) out[k++] = tok[i];
        return out;
    }

    private void offer(PriorityQueue<Candidate> heap, int[] tok, int l, int r) {
        int id = pairIds.computeIfAbsent(((long) tok[l] << 32) | tok[r], _ -> {
            byte[] a = pieces[tok[l]], b = pieces[tok[r]];
            int la = cLength(a), lb = cLength(b);
            byte[] ab = Arrays.copyOf(a, la + lb);
            System.arraycopy(b, 0, ab, la, lb);
            return lookup(ab, ab.length);
        });
        if (id >= 0 && scores[id] > -1e10f) heap.add(new Candidate(scores[id], l, tok[l], tok[r], id));
    }

    private static int cLength(byte[] b) {
        int n = 0;
        while (n < b.length && b[n] != 0) n++;
        return n;
    }

    // ---- training -------------------------------------------------------------------------------

    /**
     * Learns a vocabulary of {@code vocab} ids from {@code text}: the specials, the 256 bytes, the
     * characters seen at least twice (most frequent first while they fit, ordered by their bytes),
     * then merges.
     *
     * @throws DataError when vocab is below 260 or the text has too few distinct pairs to fill it
     */
    public static BpeTokenizer train(byte[] text, int vocab) {
        if (vocab < FIRST_PIECE + 1)
            throw new DataError("--vocab " + vocab, "a byte-level BPE needs at least " + (FIRST_PIECE + 1)
                    + " ids (3 specials, 256 bytes, and the space)");
        Map<String, Integer> chunks = new LinkedHashMap<>();
        for (String c : chunks(text)) chunks.merge(c, 1, Integer::sum);
        Map<String, Long> chars = new HashMap<>();
        for (Map.Entry<String, Integer> e : chunks.entrySet())
            for (String u : characters(e.getKey())) chars.merge(u, (long) e.getValue(), Long::sum);
        List<Map.Entry<String, Long>> seen = new ArrayList<>(chars.entrySet());
        seen.removeIf(e -> e.getValue() < 2 && !e.getKey().equals(" "));
        seen.sort((x, y) -> !x.getValue().equals(y.getValue()) ? Long.compare(y.getValue(), x.getValue()) : x.getKey().compareTo(y.getKey()));
        List<String> base = new ArrayList<>();
        base.add(" ");                                          // run.c's dummy prefix needs a piece " "
        for (Map.Entry<String, Long> e : seen)
            if (base.size() < vocab - FIRST_PIECE && !e.getKey().equals(" ")) base.add(e.getKey());
        base.sort(null);

        List<byte[]> pieces = new ArrayList<>(List.of(SPECIALS));
        List<Float> scores = new ArrayList<>(List.of(0f, 0f, 0f));
        for (int b = 0; b < 256; b++) { pieces.add(bytePiece(b)); scores.add(0f); }
        Map<String, Integer> id = new HashMap<>();
        for (String u : base) {
            id.put(u, pieces.size());
            pieces.add(u.getBytes(StandardCharsets.ISO_8859_1));
            scores.add(0f);
        }

        // each distinct chunk as a sequence of ids, weighted by how often it occurs
        int words = chunks.size();
        int[][] seq = new int[words][];
        long[] freq = new long[words];
        int w = 0;
        for (Map.Entry<String, Integer> e : chunks.entrySet()) {
            List<Integer> s = new ArrayList<>();
            for (String u : characters(e.getKey())) {
                Integer i = id.get(u);
                if (i != null) s.add(i);
                else for (byte b : u.getBytes(StandardCharsets.ISO_8859_1)) s.add(BYTE0 + (b & 0xff));
            }
            seq[w] = s.stream().mapToInt(Integer::intValue).toArray();
            freq[w++] = e.getValue();
        }
        Map<Long, Long> count = new HashMap<>();
        Map<Long, Set<Integer>> where = new HashMap<>();
        // every count a pair has had, largest first (then the smallest pair); an entry whose count is no longer the pair's is skipped
        PriorityQueue<long[]> top = new PriorityQueue<>((x, y) -> x[0] != y[0] ? Long.compare(y[0], x[0]) : Long.compare(x[1], y[1]));
        Set<Long> changed = new HashSet<>();
        for (int i = 0; i < words; i++) addPairs(seq[i], freq[i], i, count, where, +1, changed);
        int merges = 0;
        while (pieces.size() < vocab) {
            for (long k : changed) {
                Long c = count.get(k);
                if (c != null) top.add(new long[] {c, k});
            }
            changed.clear();
            long best = -1, bestCount = 0;
            while (!top.isEmpty()) {
                long[] e = top.poll();
                Long c = count.get(e[1]);
                if (c != null && c == e[0]) { best = e[1]; bestCount = c; break; }
            }
            if (bestCount <= 0)
                throw new DataError("--vocab " + vocab, "the training text has only enough distinct pairs for " + pieces.size() + " ids");
            int a = (int) (best >>> 32), b = (int) best;
            byte[] pa = pieces.get(a), pb = pieces.get(b), pab = Arrays.copyOf(pa, pa.length + pb.length);
            System.arraycopy(pb, 0, pab, pa.length, pb.length);
            String k = new String(pab, StandardCharsets.ISO_8859_1);
            Integer t = id.get(k);
            if (t == null) {
                t = pieces.size();
                id.put(k, t);
                pieces.add(pab);
                scores.add((float) -merges);
            }
            merges++;
            for (int i : where.remove(best)) {
                if (!contains(seq[i], a, b)) continue;
                addPairs(seq[i], freq[i], i, count, where, -1, changed);
                seq[i] = replace(seq[i], a, b, t);
                addPairs(seq[i], freq[i], i, count, where, +1, changed);
            }
            count.remove(best);
            changed.remove(best);
        }
        float[] sc = new float[scores.size()];
        for (int i = 0; i < sc.length; i++) sc[i] = scores.get(i);
        return new BpeTokenizer(pieces.toArray(byte[][]::new), sc);
    }

    /** Adds (sign +1) or removes (−1) the mergeable adjacent pairs of one chunk. */
    private static void addPairs(int[] s, long f, int word, Map<Long, Long> count, Map<Long, Set<Integer>> where, int sign,
                                 Set<Long> changed) {
        for (int i = 0; i + 1 < s.length; i++) {
            if (s[i] < FIRST_PIECE || s[i + 1] < FIRST_PIECE) continue;   // raw bytes and specials never merge
            long key = ((long) s[i] << 32) | s[i + 1];
            count.merge(key, sign * f, (x, y) -> x + y == 0 ? null : x + y);
            changed.add(key);
            if (sign > 0) where.computeIfAbsent(key, _ -> new HashSet<>()).add(word);
        }
    }

    private static boolean contains(int[] s, int a, int b) {
        for (int i = 0; i + 1 < s.length; i++) if (s[i] == a && s[i + 1] == b) return true;
        return false;
    }

    /** s with each non-overlapping (a, b), left to right, replaced by t. */
    private static int[] replace(int[] s, int a, int b, int t) {
        int[] out = new int[s.length];
        int n = 0;
        for (int i = 0; i < s.length; i++) {
            if (i + 1 < s.length && s[i] == a && s[i + 1] == b) { out[n++] = t; i++; }
            else out[n++] = s[i];
        }
        return Arrays.copyOf(out, n);
    }

    /**
     * The chunks of a text, one char per byte: a space starts a chunk; any other whitespace byte
     * is a chunk of its own (a stray continuation byte stays with the byte before it, as run.c
     * reads it into that character).
     */
    static List<String> chunks(byte[] text) {
        List<String> out = new ArrayList<>();
        int start = 0;
        for (int i = 0; i <= text.length; i++) {
            boolean end = i == text.length;
            boolean cut = end || (text[i] & 0xC0) != 0x80 && (text[i] == ' ' || other(text[i]) || i > 0 && other(text[i - 1]));
            if (cut && i > start) {
                out.add(new String(text, start, i - start, StandardCharsets.ISO_8859_1));
                start = i;
            }
        }
        return out;
    }

    private static boolean other(byte b) { return b == '\n' || b == '\t' || b == '\r' || b == 0x0b || b == 0x0c; }

    /** The characters of a chunk as run.c reads them: a lead byte and at most three continuation bytes. */
    static List<String> characters(String chunk) {
        List<String> out = new ArrayList<>();
        int start = 0, len = 0;
        for (int i = 0; i < chunk.length(); i++) {
            if ((chunk.charAt(i) & 0xC0) != 0x80) { start = i; len = 0; }
            len++;
            if (i + 1 < chunk.length() && (chunk.charAt(i + 1) & 0xC0) == 0x80 && len < 4) continue;
            out.add(chunk.substring(start, i + 1));
            start = i + 1;
            len = 0;
        }
        return out;
    }
}
