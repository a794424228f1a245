package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import kina.ir.DType;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/** The fast matmul gives the scalar twin's bits, at any thread count. */
class MatmulTwinTest {
    @Property(tries = 60)
    void fastEqualsScalarBitForBit(@ForAll long seed, @ForAll @IntRange(min = 1, max = 3) int threads) {
        SplittableRandom rng = new SplittableRandom(seed);
        int batch = 1 + rng.nextInt(3), m = 1 + rng.nextInt(37), k = rng.nextInt(70), n = 1 + rng.nextInt(90);
        for (DType d : new DType[] {DType.F32, DType.F64}) {
            double[] a = new double[batch * m * k], b = new double[batch * k * n];
            for (int i = 0; i < a.length; i++) a[i] = Kernels.round(d, rng.nextDouble() * 2 - 1);
            for (int i = 0; i < b.length; i++) b[i] = Kernels.round(d, rng.nextDouble() * 2 - 1);
            if (a.length > 0 && rng.nextBoolean()) a[0] = -0.0;
            Parallel.setThreads(threads);
            double[] fast = d == DType.F32 ? Matmul.f32(a, b, batch, m, k, n) : Matmul.f64(a, b, batch, m, k, n);
            double[] slow = Kernels.matmulScalar(d, a, b, batch, m, k, n);
            for (int i = 0; i < fast.length; i++)
                assertThat(Double.doubleToRawLongBits(fast[i])).as("%s element %d", d, i)
                        .isEqualTo(Double.doubleToRawLongBits(slow[i]));
        }
        Parallel.setThreads(Runtime.getRuntime().availableProcessors());
    }
}
