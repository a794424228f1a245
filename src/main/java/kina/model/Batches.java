package kina.model;

import java.util.Map;
import java.util.SplittableRandom;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.TensorType;

/**
 * A sampler of language-model batches over the tokens of a text (its bytes [from, to), or the ids
 * a tokenizer made of them): each row is a window of {@code seq + 1} consecutive tokens starting
 * at a uniform random offset; the inputs are its first {@code seq} tokens and the targets its
 * last {@code seq} (the next token at every position).
 *
 * <p>The batch for step {@code s} depends only on (seed, s): it is drawn from
 * {@code new SplittableRandom(mix(seed, s))}, so a run resumed at step s sees the batches the
 * uninterrupted run would have seen. {@link #tokens} packs a batch into the I64 tensors a StoryLM
 * program reads.
 */
public final class Batches {
    /**
     * Token ids, int[batch][seq] each; targets[b][t] is the token after inputs[b][t].
     * {@code targetBytes}: how many text bytes the targets stand for (batch × seq for bytes), so a
     * loss per token converts to nats per byte.
     */
    public record Batch(int[][] inputs, int[][] targets, long targetBytes) {}

    private final int[] tokens;
    private final int[] bytesOf;                  // text bytes per token id; null for bytes (one each)
    private final int windows;
    private final int batch;
    private final int seq;
    private final long seed;

    /** Throws DataError when {@code [from, to)} is shorter than seq + 1 bytes; IllegalArgumentException for batch or seq {@code < 1}. */
    public Batches(String name, byte[] bytes, int from, int to, int batch, int seq, long seed) {
        this(name, range(bytes, from, to), null, "bytes", batch, seq, seed);
    }

    /**
     * Batches over token ids; {@code bytesOf[id]} is how many text bytes id stands for. Throws
     * DataError when there are fewer than seq + 1 tokens.
     */
    public Batches(String name, int[] tokens, int[] bytesOf, int batch, int seq, long seed) {
        this(name, tokens, bytesOf, "tokens", batch, seq, seed);
    }

    private Batches(String name, int[] tokens, int[] bytesOf, String unit, int batch, int seq, long seed) {
        if (batch < 1 || seq < 1) throw new IllegalArgumentException("batch " + batch + " and seq " + seq + " must be positive");
        long n = tokens.length;
        if (n < seq + 1L)
            throw new DataError(name, "too short for seq " + seq + ": " + n + " " + unit + ", need at least " + (seq + 1));
        this.tokens = tokens;
        this.bytesOf = bytesOf;
        this.windows = (int) (n - seq);
        this.batch = batch;
        this.seq = seq;
        this.seed = seed;
    }

    public int batch() { return batch; }

    public int seq() { return seq; }

    /** The batch for step {@code step}. */
    public Batch at(long step) { return rows(step, 0, batch); }

    /**
     * Rows [lo, hi) of the batch for step {@code step} (a micro-batch: the rows are those of
     * {@link #at}, so it too depends only on (seed, step, lo, hi)). IllegalArgumentException unless
     * {@code 0 ≤ lo < hi ≤ batch}.
     */
    public Batch rows(long step, int lo, int hi) {
        if (lo < 0 || hi <= lo || hi > batch) throw new IllegalArgumentException("rows [" + lo + ", " + hi + ") outside a batch of " + batch);
        SplittableRandom r = new SplittableRandom(mix(seed, step));
        int[][] in = new int[hi - lo][seq];
        int[][] tg = new int[hi - lo][seq];
        long targetBytes = 0;
        for (int b = 0; b < hi; b++) {
            int start = r.nextInt(windows);                 // every row's draw, so row b is the same whatever lo is
            if (b < lo) continue;
            for (int t = 0; t < seq; t++) {
                in[b - lo][t] = tokens[start + t];
                tg[b - lo][t] = tokens[start + t + 1];
                targetBytes += bytesOf == null ? 1 : bytesOf[tg[b - lo][t]];
            }
        }
        return new Batch(in, tg, targetBytes);
    }

    /** Puts batch {@code b}'s {@code ids} [rows, t] and {@code targets} [rows·t] (I64) into {@code in}: the inputs a StoryLM program reads. */
    public static void tokens(Batch b, int t, Map<String, Tensor> in) {
        int bs = b.inputs().length;
        long[] ids = new long[bs * t], tg = new long[bs * t];
        for (int i = 0; i < bs; i++)
            for (int j = 0; j < t; j++) {
                ids[i * t + j] = b.inputs()[i][j];
                tg[i * t + j] = b.targets()[i][j];
            }
        in.put("ids", Tensor.ofInts(TensorType.host(DType.I64, bs, t), ids));
        in.put("targets", Tensor.ofInts(TensorType.host(DType.I64, (long) bs * t), tg));
    }

    private static int[] range(byte[] bytes, int from, int to) {
        if (from < 0 || to > bytes.length || from > to) throw new IllegalArgumentException("range [" + from + ", " + to + ") outside " + bytes.length + " bytes");
        int[] t = new int[to - from];
        for (int i = 0; i < t.length; i++) t[i] = bytes[from + i] & 0xff;
        return t;
    }

    /** A 64-bit hash of (seed, step): SplitMix64's finalizer over both, so nearby pairs give unrelated streams. */
    public static long mix(long seed, long step) {
        return fmix(fmix(seed) ^ (step * 0x9E3779B97F4A7C15L + 0x632BE59BD9B4E019L));
    }

    private static long fmix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
