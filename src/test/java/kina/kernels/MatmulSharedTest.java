package kina.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Matmul.sgemmShared: every output has the bits of its own sgemm, at 1 to 3 threads, plain and transposed. */
class MatmulSharedTest {
    @AfterEach void restore() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    @Property(tries = 40)
    void eachOutputEqualsItsOwnProduct(@ForAll long seed, @ForAll @IntRange(min = 1, max = 3) int threads) {
        SplittableRandom rng = new SplittableRandom(seed);
        boolean longK = rng.nextInt(5) == 0;
        int m = 1 + rng.nextInt(longK ? 40 : 260), k = longK ? Matmul.KC + 1 + rng.nextInt(200) : rng.nextInt(300);
        int[] ns = new int[1 + rng.nextInt(4)];
        for (int t = 0; t < ns.length; t++) ns[t] = rng.nextInt(8) == 0 ? 0 : 1 + rng.nextInt(longK ? 50 : 200);
        check(rng, threads, m, k, ns, rng.nextBoolean(), rng.nextBoolean());
    }

    /**
     * The train step's groups (q/k/v and gate/up, forward and weight gradients): each runs its row
     * blocks on both threads at 2 (every one is above Matmul.PARALLEL_MIN) and on one at 1, with
     * the same bits.
     */
    @Test void theModelsShapes() {
        SplittableRandom rng = new SplittableRandom(3);
        int[][] shapes = {{1024, 128, 128, 128, 128}, {1024, 128, 344, 344}, {128, 1024, 128, 128, 128}, {128, 1024, 344, 344},
            {500, 256, 256, 256, 256}, {256, 1100, 300, 300}};
        boolean[][] layouts = {{false, false}, {false, false}, {true, false}, {true, false}, {false, false}, {true, false}};
        for (int threads = 1; threads <= 2; threads++)
            for (int s = 0; s < shapes.length; s++) {
                int[] ns = java.util.Arrays.copyOfRange(shapes[s], 2, shapes[s].length);
                long fanOuts = check(rng, threads, shapes[s][0], shapes[s][1], ns, layouts[s][0], layouts[s][1]);
                long work = (long) shapes[s][0] * shapes[s][1] * java.util.Arrays.stream(ns).sum();
                assertThat(fanOuts > 0).as("shape %d at %d threads fanned out", s, threads)
                        .isEqualTo(threads == 2 && work >= Matmul.PARALLEL_MIN);
            }
    }

    /** Compares the shared products with separate sgemm calls, bit for bit; answers how often the shared call fanned out. */
    private static long check(SplittableRandom rng, int threads, int m, int k, int[] ns, boolean transA, boolean transB) {
        Parallel.setThreads(threads);
        float[] a = random(rng, m * k);
        float[][] bs = new float[ns.length][], want = new float[ns.length][], got = new float[ns.length][];
        for (int t = 0; t < ns.length; t++) {
            bs[t] = random(rng, k * ns[t]);
            want[t] = new float[m * ns[t]];
            got[t] = new float[m * ns[t]];
            java.util.Arrays.fill(got[t], Float.NaN);              // every element written
            Matmul.sgemm(a, transA, bs[t], transB, want[t], 1, m, k, ns[t]);
        }
        long before = Parallel.fanOuts(), oneA = Matmul.SHARED_A_RUNS.sum();
        Matmul.sgemmShared(a, transA, bs, transB, got, m, k, ns);
        long fanOuts = Parallel.fanOuts() - before;
        boolean together = Matmul.VECTOR && m > 0 && k > 0 && !(m < Matmul.MR && !transA && !transB)  // few rows: sgemm's path
                && java.util.Arrays.stream(ns).allMatch(n -> n > 0 && (long) m * k * n >= Matmul.SMALL);   // else sgemm per product
        assertThat(Matmul.SHARED_A_RUNS.sum() > oneA).as("one A packed for all products").isEqualTo(together);
        for (int t = 0; t < ns.length; t++)
            for (int i = 0; i < want[t].length; i++)
                assertThat(Float.floatToRawIntBits(got[t][i])).as("%dx%dx%s %s%s threads %d: output %d element %d", m, k,
                        java.util.Arrays.toString(ns), transA ? "T" : "N", transB ? "T" : "N", threads, t, i)
                        .isEqualTo(Float.floatToRawIntBits(want[t][i]));
        return fanOuts;
    }

    private static float[] random(SplittableRandom rng, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) (rng.nextDouble() * 2 - 1);
        if (n > 0 && rng.nextBoolean()) x[0] = -0.0f;
        return x;
    }
}
