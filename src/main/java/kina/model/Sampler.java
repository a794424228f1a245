package kina.model;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.IntConsumer;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.TensorType;
import kina.plan.Plan;

/**
 * Autoregressive generation from a trained StoryLM: the logits program of the config run on the
 * last seq bytes of the text (left-aligned; causal attention makes the padding after the last
 * real byte irrelevant), the next byte drawn from softmax(logits / temperature) restricted to the
 * top k, with a seeded generator. The logits program runs as a compiled {@link Plan} (the
 * interpreter's bits, about 4× faster on medium). No KV cache: each byte reruns the window.
 */
public final class Sampler {
    private final Config c;
    private final Map<String, Tensor> weights;
    private final Plan logits;
    private final Tensor cos, sin;

    public Sampler(Config c, Map<String, Tensor> weights) {
        this.c = c;
        this.weights = weights;
        this.logits = Plan.compile(StoryLm.logits(c));
        Tensor[] t = Trainer.ropeTables(c);
        this.cos = t[0];
        this.sin = t[1];
    }

    /**
     * Appends {@code n} bytes to {@code prompt}; each new byte is passed to {@code emit} as it is drawn.
     *
     * @param temperature > 0; 1 samples the model's distribution, lower is greedier
     * @param topK        only the k most likely bytes are drawn (0: all)
     */
    public int[] generate(int[] prompt, int n, double temperature, int topK, long seed, IntConsumer emit) {
        if (!(temperature > 0)) throw new IllegalArgumentException("temperature must be > 0, got " + temperature);
        SplittableRandom rng = new SplittableRandom(seed);
        int[] text = Arrays.copyOf(prompt, prompt.length + n);
        int len = prompt.length;
        int t = c.seq(), v = c.vocab();
        for (int step = 0; step < n; step++) {
            int from = Math.max(0, len - t), used = len - from;
            long[] ids = new long[t];
            for (int i = 0; i < used; i++) ids[i] = text[from + i];
            Map<String, Tensor> in = new HashMap<>(weights);
            in.put("ids", Tensor.ofInts(TensorType.host(DType.I64, 1, t), ids));
            in.put("cos", cos);
            in.put("sin", sin);
            Tensor out = logits.run(in).getFirst();
            int row = Math.max(0, used - 1);
            double[] p = new double[v];
            double max = Double.NEGATIVE_INFINITY;
            for (int j = 0; j < v; j++) {
                p[j] = used == 0 ? 0 : out.floats()[row * v + j] / temperature;
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
            text[len++] = next;
            emit.accept(next);
        }
        return text;
    }
}
