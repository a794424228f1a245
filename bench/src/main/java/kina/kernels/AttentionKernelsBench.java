package kina.kernels;

import java.util.SplittableRandom;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;

/**
 * The plan's causal attention kernels on one layer of a StoryLM config (default medium: batch 8,
 * 256 rows and keys, 8 heads of 32), µs per call: the forward (output and P), the backward's
 * products, and attention_qk + softmax_grad (+ attention_pk) as separate kernels against the one-pass
 * qkSoftmaxGrad (without and with dq).
 * In package kina.kernels for the package-private kernels. Run (after bench/matmul.sh's builds):
 *
 *   java --add-modules jdk.incubator.vector -cp bench/target/benchmarks.jar:target/kina.jar \
 *       org.openjdk.jmh.Main AttentionKernelsBench -p threads=1
 */
public class AttentionKernelsBench extends kina.bench.KernelBench {
    /** batch x rows x heads x head width. */
    @Param({"8x256x8x32"})
    public String geometry;

    private PlanKernels.Attn g;
    private float[] q, k, v, y, probs, dp, ds, dq;
    private int rows;

    @Setup
    public void setup() {
        String[] d = geometry.split("x");
        int b = Integer.parseInt(d[0]), h = Integer.parseInt(d[2]), hd = Integer.parseInt(d[3]);
        rows = b * h * Integer.parseInt(d[1]);
        int t = Integer.parseInt(d[1]);
        g = new PlanKernels.Attn(b, t, t, hd, h, h, 0, 0, 0, (float) (1 / Math.sqrt(hd)), 0f);
        SplittableRandom r = new SplittableRandom(42);
        q = new float[b * t * h * hd];
        k = new float[q.length];
        v = new float[q.length];
        for (float[] x : new float[][] {q, k, v}) for (int i = 0; i < x.length; i++) x[i] = (float) (r.nextDouble() * 2 - 1);
        y = new float[q.length];
        dq = new float[q.length];
        probs = new float[b * h * t * t];
        dp = new float[probs.length];
        ds = new float[probs.length];
        Parallel.setThreads(threads);
        PlanKernels.attention(g, q, k, v, null, y, probs, null, false);
    }

    @Benchmark public float[] forwardWithProbs() { PlanKernels.attention(g, q, k, v, null, y, probs, null, false); return y; }

    /** As the plan runs it when only masked readers take P (Plan.attendedOnly). */
    @Benchmark public float[] forwardWithAttendedProbs() { PlanKernels.attention(g, q, k, v, null, y, probs, null, true); return y; }

    @Benchmark public float[] qkThenSoftmaxGrad() {
        AttentionProducts.qk(g, q, v, dp);
        PlanKernels.softmaxGrad(probs, dp, ds, null, rows, g.l());
        return ds;
    }

    @Benchmark public float[] qkSoftmaxGrad() { AttentionProducts.qkSoftmaxGrad(g, q, v, probs, ds, null, null, null, null, null, null, false); return ds; }

    /** What the plan ran before qk_softmax_grad took dq in: the one-pass kernel, then attention_pk over ds. */
    @Benchmark public float[] qkSoftmaxGradThenPk() {
        AttentionProducts.qkSoftmaxGrad(g, q, v, probs, ds, null, null, null, null, null, null, false);
        AttentionProducts.pk(g, ds, k, dq);
        return dq;
    }

    @Benchmark public float[] qkSoftmaxGradWithPk() { AttentionProducts.qkSoftmaxGrad(g, q, v, probs, ds, null, k, dq, null, null, null, false); return dq; }

    /** As the plan runs it when only masked readers take ds (Plan.attendedOnly). */
    @Benchmark public float[] qkSoftmaxGradWithPkAttendedOnly() { AttentionProducts.qkSoftmaxGrad(g, q, v, probs, ds, null, k, dq, null, null, null, true); return dq; }

    @Benchmark public float[] pk() { AttentionProducts.pk(g, probs, k, dq); return dq; }

    @Benchmark public float[] pq() { AttentionProducts.pq(g, probs, q, dq); return dq; }
}
