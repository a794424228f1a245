package kina.model;

import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.IntConsumer;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.TensorType;
import kina.plan.Plan;

/**
 * Autoregressive generation from a trained StoryLM, each next token drawn from
 * softmax(logits / temperature) restricted to the top k, with a seeded generator.
 *
 * <p>With the KV cache (the default) the window program {@link StoryLm#prefill} runs once on the
 * prompt (its last seq tokens) and fills every layer's keys and values; then each token is one
 * {@link StoryLm#decodeStep} (the new token against the cached keys and values, which the step's
 * compiled plan carries from run to run), whose logits equal the window program's bit for bit. When
 * the cache is full the window slides: the last seq/2 tokens are prefilled again, from position 0.
 * The full-window mode reruns {@link StoryLm#logits} on the last seq tokens for every token, the
 * window sliding by one (left-aligned; causal attention makes the padding after the last real
 * token irrelevant): the reference the cache is tested against, slower by about the window length.
 */
public final class Sampler {
    /** How each token's logits are computed. */
    public enum Mode { KV_CACHE, FULL_WINDOW }

    private final Config c;
    private final Map<String, Tensor> weights;
    private final Mode mode;
    private final Plan window;             // logits (full window) or prefill (KV cache)
    private final Plan decode;             // null in the full-window mode
    private final Tensor cos, sin;
    private final Tensor[] cosRow, sinRow, maskRow, oneHot;
    private final List<String> caches;

    /** A KV-cache sampler. */
    public Sampler(Config c, Map<String, Tensor> weights) { this(c, weights, Mode.KV_CACHE); }

    public Sampler(Config c, Map<String, Tensor> weights, Mode mode) {
        this.c = c;
        this.weights = weights;
        this.mode = mode;
        Tensor[] t = Rope.tables(c);
        this.cos = t[0];
        this.sin = t[1];
        int l = c.seq(), half = c.headDim() / 2;
        if (mode == Mode.FULL_WINDOW) {
            window = Plan.compile(StoryLm.logits(c));
            decode = null;
            cosRow = sinRow = maskRow = oneHot = null;
            caches = List.of();
            return;
        }
        window = Plan.compile(StoryLm.prefill(c));
        decode = Plan.compile(StoryLm.decodeStep(c, weights));
        Map<String, Integer> carry = new LinkedHashMap<>();
        java.util.ArrayList<String> names = new java.util.ArrayList<>();
        for (int k = 0; k < c.layers(); k++)
            for (String s : new String[] {"k", "v"}) {
                String n = "l" + k + "_" + s + "_cache";
                carry.put(n, 1 + names.size());
                names.add(n);
            }
        caches = List.copyOf(names);
        decode.carry(carry);
        for (String n : caches)
            decode.set(n, kina.eval.Kernels.fill(n.endsWith("_k_cache") ? TensorType.host(DType.F32, c.kvHeads(), c.headDim(), l)
                    : TensorType.host(DType.F32, c.kvHeads(), l, c.headDim()), 0.0));
        // the per-position inputs of the step, made once: RoPE rows and the causal mask
        cosRow = new Tensor[l];
        sinRow = new Tensor[l];
        maskRow = new Tensor[l];
        oneHot = new Tensor[l];
        TensorType row = TensorType.host(DType.F32, 1, half);
        for (int p = 0; p < l; p++) {
            cosRow[p] = Tensor.ofFloats(row, Arrays.copyOfRange(cos.floats(), p * half, (p + 1) * half));
            sinRow[p] = Tensor.ofFloats(row, Arrays.copyOfRange(sin.floats(), p * half, (p + 1) * half));
            double[] m = new double[l];
            for (int j = p + 1; j < l; j++) m[j] = -1e9;
            maskRow[p] = Tensor.ofFloats(TensorType.host(DType.F32, 1, l), m);
            double[] e = new double[l];
            e[p] = 1;
            oneHot[p] = Tensor.ofFloats(TensorType.host(DType.F32, 1, l), e);
        }
    }

    public Mode mode() { return mode; }

    /**
     * Appends {@code n} tokens to {@code prompt} (at least one token); each new token is passed to
     * {@code emit} as it is drawn.
     *
     * @param temperature ≥ 0; 1 samples the model's distribution, lower is greedier, and 0 is greedy:
     *                    the most likely token every time (the first of equals), as {@code topK} 1 is
     * @param topK        only the k most likely tokens are drawn (0: all; 1: greedy, whatever the temperature)
     */
    public int[] generate(int[] prompt, int n, double temperature, int topK, long seed, IntConsumer emit) {
        if (!(temperature >= 0 && temperature < Double.POSITIVE_INFINITY))
            throw new IllegalArgumentException("temperature must be finite and >= 0, got " + temperature);
        if (prompt.length == 0) throw new IllegalArgumentException("the prompt needs at least one token");
        SplittableRandom rng = new SplittableRandom(seed);
        int[] text = Arrays.copyOf(prompt, prompt.length + n);
        int len = prompt.length;
        int t = c.seq(), v = c.vocab();
        int pos = -1;                                  // KV cache: the position of text[len - 1], once prefilled
        double[] row = new double[v];
        for (int step = 0; step < n; step++) {
            if (mode == Mode.FULL_WINDOW) {
                int from = Math.max(0, len - t), used = len - from;
                Tensor out = window.run(windowInputs(text, from, used)).getFirst();
                System.arraycopy(out.floats(), (used - 1) * v, row, 0, v);
            } else if (pos < 0 || pos + 1 >= t) {
                // prefill the prompt's last seq tokens, or slide: the last seq/2 again from position 0
                int keep = pos < 0 ? Math.min(len, t) : Math.max(1, t / 2), from = len - keep;
                System.arraycopy(prefill(text, from, keep).floats(), (keep - 1) * v, row, 0, v);
                pos = keep - 1;
            } else {
                pos++;
                row = decode(text[len - 1], pos);
            }
            int next = draw(row, temperature, topK, rng);
            text[len++] = next;
            emit.accept(next);
        }
        return text;
    }

    /**
     * One decode step (KV-cache mode): the logits [V] of token {@code id} at position {@code pos},
     * whose key and value it writes into the cache; positions before pos must hold the context.
     */
    public double[] decode(int id, int pos) {
        if (decode == null) throw new IllegalStateException("a full-window sampler has no decode step");
        if (pos < 0 || pos >= c.seq()) throw new IllegalArgumentException("position " + pos + " outside the window [0, " + c.seq() + ")");
        return decode.run(stepInputs(id, pos)).getFirst().floats();
    }

    /**
     * Runs the window program on tokens [from, from + used) of text at positions 0 … used − 1 and
     * answers its logits [seq, V]; in KV-cache mode it also fills the cache with their keys and values.
     */
    public Tensor prefill(int[] text, int from, int used) {
        List<Tensor> out = window.run(windowInputs(text, from, used));
        if (decode != null) for (int k = 0; k < caches.size(); k++) decode.set(caches.get(k), out.get(1 + k));
        return out.getFirst();
    }

    private Map<String, Tensor> windowInputs(int[] text, int from, int used) {
        long[] ids = new long[c.seq()];
        for (int i = 0; i < used; i++) ids[i] = text[from + i];
        Map<String, Tensor> in = new HashMap<>(weights);
        in.put("ids", Tensor.ofInts(TensorType.host(DType.I64, 1, c.seq()), ids));
        in.put("cos", cos);
        in.put("sin", sin);
        return in;
    }

    private Map<String, Tensor> stepInputs(int id, int pos) {
        Map<String, Tensor> in = new HashMap<>();
        in.put("id", Tensor.ofInts(TensorType.host(DType.I64, 1), new long[] {id}));
        in.put("onehot", oneHot[pos]);
        in.put("cos", cosRow[pos]);
        in.put("sin", sinRow[pos]);
        in.put("mask", maskRow[pos]);
        return in;
    }

    /** A token from softmax(row / temperature) over the top k; the most likely (the first of equals) for temperature 0 or k = 1. */
    private static int draw(double[] logits, double temperature, int topK, SplittableRandom rng) {
        int v = logits.length;
        if (temperature == 0 || topK == 1) {
            int best = 0;
            for (int j = 1; j < v; j++) if (logits[j] > logits[best]) best = j;
            return best;
        }
        double[] p = new double[v];
        double max = Double.NEGATIVE_INFINITY;
        for (int j = 0; j < v; j++) {
            p[j] = logits[j] / temperature;
            max = Math.max(max, p[j]);
        }
        if (topK > 0 && topK < v) {
            double[] sorted = p.clone();
            Arrays.sort(sorted);
            double cut = sorted[v - topK];
            for (int j = 0; j < v; j++) if (p[j] < cut) p[j] = Double.NEGATIVE_INFINITY;
        }
        double z = 0;
        for (int j = 0; j < v; j++) { p[j] = Math.exp(p[j] - max); z += p[j]; }
        double u = rng.nextDouble() * z, acc = 0;
        int next = v - 1;
        for (int j = 0; j < v; j++) {
            acc += p[j];
            if (u < acc) { next = j; break; }
        }
        return next;
    }
}
