package kina.eval;

import kina.kernels.KinaMath;
import static org.assertj.core.api.Assertions.assertThat;

import kina.ir.DType;
import kina.ir.Perm;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

/** F32 kernels equal plain Java float arithmetic (IEEE single, no fma) in the stated order. */
class KernelsPropertiesTest {

    static float[] randomFloats(java.util.Random r, int n) {
        float[] f = new float[n];
        for (int i = 0; i < n; i++) f[i] = (float) (r.nextGaussian() * Math.pow(10, r.nextInt(7) - 3));
        return f;
    }

    static Tensor f32(long[] dims, float[] f) {
        double[] d = new double[f.length];
        for (int i = 0; i < f.length; i++) d[i] = f[i];
        return Tensor.of(DType.F32, dims, d);
    }

    @Property(tries = 200)
    void matmulF32IsFloatArithmetic(@ForAll @IntRange(min = 1, max = 3) int batch, @ForAll @IntRange(min = 1, max = 4) int m,
                                    @ForAll @IntRange(min = 1, max = 6) int k, @ForAll @IntRange(min = 1, max = 4) int n,
                                    @ForAll @LongRange(min = 0, max = 1_000_000) long seed) {
        java.util.Random r = new java.util.Random(seed);
        float[] a = randomFloats(r, batch * m * k), b = randomFloats(r, batch * k * n);
        Tensor y = ContractionKernels.matmul(f32(new long[] {batch, m, k}, a), f32(new long[] {batch, k, n}, b));
        for (int bt = 0; bt < batch; bt++)
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++) {
                    float acc = -0.0f;                  // Matmul's order: one float fma per p, increasing p
                    for (int p = 0; p < k; p++) acc = Math.fma(a[(bt * m + i) * k + p], b[(bt * k + p) * n + j], acc);
                    assertThat(Float.floatToRawIntBits((float) y.get((bt * m + i) * n + j))).isEqualTo(Float.floatToRawIntBits(acc));
                }
    }

    @Property(tries = 200)
    void sumAndSoftmaxF32AreFloatArithmetic(@ForAll @IntRange(min = 1, max = 3) int rows, @ForAll @IntRange(min = 1, max = 7) int c,
                                            @ForAll @LongRange(min = 0, max = 1_000_000) long seed) {
        java.util.Random r = new java.util.Random(seed);
        float[] x = randomFloats(r, rows * c);
        Tensor t = f32(new long[] {rows, c}, x);
        Tensor s = RowKernels.sum(t, 1, false), sm = RowKernels.softmax(t, 1), ls = RowKernels.logSoftmax(t, 1);
        for (int i = 0; i < rows; i++) {
            float acc = x[i * c], m = x[i * c];
            for (int j = 1; j < c; j++) { acc = acc + x[i * c + j]; m = Math.max(m, x[i * c + j]); }
            assertThat((float) s.get(i)).isEqualTo(acc);
            float[] e = new float[c];
            float z = 0;
            for (int j = 0; j < c; j++) { e[j] = KinaMath.exp(x[i * c + j] - m); z = j == 0 ? e[j] : z + e[j]; }
            float l = (float) StrictMath.log(z);
            for (int j = 0; j < c; j++) {
                assertThat(Float.floatToRawIntBits((float) sm.get(i * c + j))).isEqualTo(Float.floatToRawIntBits(e[j] / z));
                assertThat(Float.floatToRawIntBits((float) ls.get(i * c + j))).isEqualTo(Float.floatToRawIntBits((x[i * c + j] - m) - l));
            }
        }
    }

    @Property(tries = 100)
    void transposeThenInverseIsIdentity(@ForAll @LongRange(min = 0, max = 1_000_000) long seed) {
        java.util.Random r = new java.util.Random(seed);
        long[] dims = {1 + r.nextInt(3), 1 + r.nextInt(3), 1 + r.nextInt(3), 1 + r.nextInt(3)};
        int[] perm = {0, 1, 2, 3};
        for (int i = 3; i > 0; i--) { int j = r.nextInt(i + 1); int tmp = perm[i]; perm[i] = perm[j]; perm[j] = tmp; }
        Tensor x = f32(dims, randomFloats(r, (int) (dims[0] * dims[1] * dims[2] * dims[3])));
        Perm p = Perm.of(perm);
        Tensor y = LayoutKernels.transpose(x, p);
        assertThat(LayoutKernels.transpose(y, p.inverse()).bitEquals(x)).isTrue();
        long[] yd = p.apply(x.type().shape()).dims(), xs = x.type().shape().strides(), at = new long[4];
        for (int k = 0; k < y.size(); k++) {                   // y[i] = x[j] with j_perm[d] = i_d: the data moved, not only the shape
            long rest = k, src = 0;
            for (int d = 3; d >= 0; d--) { at[d] = rest % yd[d]; rest /= yd[d]; }
            for (int d = 0; d < 4; d++) src += at[d] * xs[perm[d]];
            assertThat(y.floats()[k]).isEqualTo(x.floats()[(int) src]);
        }
    }
}
