package kina.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import kina.eval.ContractionKernels;
import kina.eval.Kernels;
import kina.ir.DType;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/** The fast matmul gives the scalar twin's bits, at any thread count, for plain and transposed operands. */
class MatmulTwinTest {
    @Property(tries = 60)
    void fastEqualsScalarBitForBit(@ForAll long seed, @ForAll @IntRange(min = 1, max = 3) int threads) {
        SplittableRandom rng = new SplittableRandom(seed);
        int batch = 1 + rng.nextInt(3), m = 1 + rng.nextInt(37), k = rng.nextInt(70), n = 1 + rng.nextInt(90);
        check(rng, threads, batch, m, k, n);
    }

    /**
     * Shapes up to ~300 (ragged edges in M and N), both transposes; one draw in four has K past a
     * cache block of {@link Matmul#KC} (chains continued from out), with small M and N to stay quick.
     */
    @Property(tries = 25)
    void largeShapesWithTransposes(@ForAll long seed, @ForAll @IntRange(min = 1, max = 3) int threads) {
        SplittableRandom rng = new SplittableRandom(seed);
        boolean longK = rng.nextInt(4) == 0;
        int batch = 1 + rng.nextInt(2), m = 1 + rng.nextInt(longK ? 60 : 300), n = 1 + rng.nextInt(longK ? 60 : 300);
        int k = longK ? Matmul.KC + 1 + rng.nextInt(300) : 1 + rng.nextInt(300);
        check(rng, threads, batch, m, k, n);
    }

    /** The model's shapes in miniature and exact multiples of the register tile. */
    @Test
    void fixedShapes() {
        SplittableRandom rng = new SplittableRandom(11);
        int[][] shapes = {{1, 96, 256, 32}, {2, 48, 257, 33}, {1, 128, 64, 172}, {4, 64, 32, 64}, {1, 6, 512, 16}, {1, 7, 1, 17},
            {1, 9, Matmul.KC + 1, 20},
            // fewer rows than the tile, B read in place (a decode step): ragged column tails, batches, long K
            {1, 1, 256, 688}, {1, 1, 688, 256}, {8, 1, 32, 256}, {4, 4, 256, 32}, {2, 3, 7, 33}, {1, 2, 1, 9}, {1, 1, Matmul.KC + 5, 70}};
        for (int threads = 1; threads <= 3; threads++)
            for (int[] s : shapes) check(rng, threads, s[0], s[1], s[2], s[3]);
    }

    /**
     * The train step's shape kinds: transposed A read in place (few column panels, ragged last row
     * panel, K over several balanced blocks) or packed (many panels), attention's batched small
     * products, and products large enough to run on 2 threads (Matmul's shared packed B included).
     */
    @Test
    void inPlaceAndPackedForms() {
        SplittableRandom rng = new SplittableRandom(12);
        int[][] shapes = {{4, 128, 128, 32}, {3, 128, 32, 128}, {1, 131, 600, 40}, {1, 33, 513, 129}, {1, 128, 1024, 344},
            {1, 300, 700, 100}, {2, 64, 344, 171},
            // K over several blocks of KC (chains continued from out): A packed, and transposed in place.
            {1, 131, 2 * Matmul.KC + 52, 40}, {1, 33, Matmul.KC + 76, 129}, {1, 20, Matmul.KC + 3, 300},
            // Around the form limits: 4 | 5 column panels (transposed A in place | packed), with ragged rows
            // and lanes; K = 63 | 64 and few panels (a plain A was once read in place from K = 64).
            {2, 41, 63, 100}, {2, 37, 64, 128}, {1, 45, 200, 64}, {1, 43, 130, 70}, {2, 128, 32, 128},
            // 2 threads, one batch element, M ≥ 4·MC and M·K·N ≥ SHARED_MIN: B packed once and shared, row
            // blocks claimed one at a time, the last one ragged (not a multiple of the register tile), A
            // packed, ragged lanes; K over two blocks.
            {1, 401, Matmul.KC + 100, 150}, {1, 403, 1200, 139}, {1, 431, 580, 270}};
        for (int threads = 1; threads <= 2; threads++)
            for (int[] s : shapes) {
                long before = Matmul.SHARED_B_RUNS.sum();
                check(rng, threads, s[0], s[1], s[2], s[3]);
                boolean shared = threads == 2 && s[0] == 1 && s[1] >= 4 * Matmul.MC && (long) s[1] * s[2] * s[3] >= Matmul.SHARED_MIN;
                assertThat(Matmul.SHARED_B_RUNS.sum() > before).as("%s at %d threads took the shared-B path", shape(s[0], s[1], s[2], s[3]), threads)
                        .isEqualTo(shared);
            }
        assertThat(Matmul.SHARED_B_RUNS.sum()).as("the last three shapes take the shared-B path").isPositive();
    }

    private static void check(SplittableRandom rng, int threads, int batch, int m, int k, int n) {
        try {
            Parallel.setThreads(threads);
            for (DType d : new DType[] {DType.F32, DType.F64}) {
                double[] a = new double[batch * m * k], b = new double[batch * k * n];
                for (int i = 0; i < a.length; i++) a[i] = Kernels.round(d, rng.nextDouble() * 2 - 1);
                for (int i = 0; i < b.length; i++) b[i] = Kernels.round(d, rng.nextDouble() * 2 - 1);
                if (a.length > 0 && rng.nextBoolean()) a[0] = -0.0;
                double[] slow = ContractionKernels.matmulScalar(d, a, b, batch, m, k, n);
                double[] plain = d == DType.F32 ? Matmul.f32(a, b, batch, m, k, n) : Matmul.f64(a, b, batch, m, k, n);
                same(d, "plain " + shape(batch, m, k, n), plain, slow);
                for (int t = 1; t <= 3; t++) {
                    boolean ta = (t & 1) != 0, tb = (t & 2) != 0;
                    double[] sa = ta ? transpose(a, batch, m, k) : a, sb = tb ? transpose(b, batch, k, n) : b;
                    double[] got;
                    if (d == DType.F32) {
                        float[] out = new float[batch * m * n];
                        Matmul.sgemm(floats(sa), ta, floats(sb), tb, out, batch, m, k, n);
                        got = new double[out.length];
                        for (int i = 0; i < out.length; i++) got[i] = out[i];
                    } else {
                        got = new double[batch * m * n];
                        Matmul.dgemm(sa, ta, sb, tb, got, batch, m, k, n);
                    }
                    same(d, "transA=" + ta + " transB=" + tb + " " + shape(batch, m, k, n) + " threads " + threads, got, slow);
                }
            }
        } finally {
            Parallel.setThreads(Runtime.getRuntime().availableProcessors());
        }
    }

    private static String shape(int batch, int m, int k, int n) { return "[" + batch + "," + m + "," + k + "]@[" + k + "," + n + "]"; }

    private static void same(DType d, String what, double[] got, double[] want) {
        assertThat(got).hasSameSizeAs(want);
        for (int i = 0; i < got.length; i++)
            assertThat(Double.doubleToRawLongBits(got[i])).as("%s %s element %d", d, what, i)
                    .isEqualTo(Double.doubleToRawLongBits(want[i]));
    }

    /** x [batch, r, c] → [batch, c, r]. */
    private static double[] transpose(double[] x, int batch, int r, int c) {
        double[] y = new double[x.length];
        for (int bt = 0; bt < batch; bt++)
            for (int i = 0; i < r; i++) for (int j = 0; j < c; j++) y[bt * r * c + j * r + i] = x[bt * r * c + i * c + j];
        return y;
    }

    private static float[] floats(double[] x) {
        float[] y = new float[x.length];
        for (int i = 0; i < x.length; i++) y[i] = (float) x[i];
        return y;
    }
}
