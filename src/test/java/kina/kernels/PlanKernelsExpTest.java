package kina.kernels;

import java.util.SplittableRandom;
import kina.eval.ElementwiseKernels;
import kina.eval.RowKernels;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Instr;
import org.junit.jupiter.api.Test;

/**
 * The vectorised exp kernels of PlanKernels (exp, sigmoid, silu, swiglu, softmax, log_softmax)
 * against their Kernels twins (attention's: FlashAttentionTest) at F32, raw bits, at lengths around the lane
 * count (vector body plus scalar tail) and with special values, cold and after a warm-up.
 */
class PlanKernelsExpTest {
    static final float[] SPECIAL = {0f, -0f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN,
        Float.MAX_VALUE, -Float.MAX_VALUE, Float.MIN_VALUE, -Float.MIN_VALUE, 88.8f, -88.8f, -103.97f, -110f, 1e-8f};

    static final int[] LENGTHS = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 257};

    static float[] random(int n, SplittableRandom r, boolean specials) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) (r.nextGaussian() * (i % 4 == 0 ? 30 : 3));
            if (specials && r.nextInt(8) == 0) x[i] = SPECIAL[r.nextInt(SPECIAL.length)];
        }
        return x;
    }

    static Tensor tensor(float[] x, long... dims) {
        double[] d = new double[x.length];
        for (int i = 0; i < x.length; i++) d[i] = x[i];
        return Tensor.of(DType.F32, dims, d);
    }

    static void assertBits(float[] got, int n, Tensor want, String what) { assertBits(got, n, want, what, false); }

    /**
     * Raw bits, except that with {@code anyNaN} two NaNs match: silu and swiglu multiply a NaN by
     * another NaN (x·σ(x) with x NaN), and which operand's sign and payload a product of two NaNs
     * keeps follows the JIT's operand order (Java leaves it open), in the scalar code as in lanes;
     * softmax's row max is a Math.max fold, whose NaN payload changes with the JIT tier.
     */
    static void assertBits(float[] got, int n, Tensor want, String what, boolean anyNaN) {
        for (int i = 0; i < n; i++) {
            float w = (float) want.floats()[i];
            if (anyNaN && Float.isNaN(w) && Float.isNaN(got[i])) continue;
            if (Float.floatToRawIntBits(got[i]) != Float.floatToRawIntBits(w))
                throw new AssertionError(what + " element " + i + ": plan " + got[i] + ", interpreter " + w);
        }
    }

    /** One round over every kernel and length; returns a value so the JIT keeps the work. */
    static void round(SplittableRandom r, boolean specials) {
        for (int n : LENGTHS) {
            float[] x = random(n, r, specials), b = random(n, r, specials), y = new float[n + 3];
            Tensor tx = tensor(x, n), tb = tensor(b, n);
            PlanKernels.unary(PlanKernels.Unary.EXP, x, y, 0, n);
            assertBits(y, n, ElementwiseKernels.exp(tx), "exp n=" + n);
            PlanKernels.unary(PlanKernels.Unary.SIGMOID, x, y, 0, n);
            assertBits(y, n, ElementwiseKernels.sigmoid(tx), "sigmoid n=" + n);
            PlanKernels.unary(PlanKernels.Unary.SILU, x, y, 0, n);
            assertBits(y, n, ElementwiseKernels.silu(tx), "silu n=" + n, true);
            PlanKernels.binary(PlanKernels.Binary.SWIGLU, x, b, y, 0, n);
            assertBits(y, n, ElementwiseKernels.swiglu(tx, tb), "swiglu n=" + n, true);
            for (int rows : new int[] {1, 3}) {
                float[] a = random(rows * n, r, specials), s = new float[rows * n];
                Tensor ta = tensor(a, rows, n), tt = tensor(a, n, rows);
                PlanKernels.softmax(a, s, rows, n, 1, false);
                assertBits(s, rows * n, RowKernels.softmax(ta, 1), "softmax rows=" + rows + " c=" + n, true);
                PlanKernels.softmax(a, s, rows, n, 1, true);
                assertBits(s, rows * n, RowKernels.logSoftmax(ta, 1), "log_softmax rows=" + rows + " c=" + n, true);
                PlanKernels.softmax(a, s, 1, n, rows, true);                          // a strided axis
                assertBits(s, rows * n, RowKernels.logSoftmax(tt, 0), "log_softmax axis 0, c=" + n, true);
            }
        }
    }

    /**
     * rowMax equals the sequential Math.max fold, bits included (±0 ties), and is NaN where the fold
     * is: which NaN Math.max returns changes with the JIT tier (the same two-NaN fold gave 0x7fc00000 in
     * one method and 0xffc00001 in another, in one run), in the scalar fold itself, so NaN payloads are not compared.
     */
    @Test
    void rowMaxIsTheSequentialFold() {
        SplittableRandom r = new SplittableRandom(5);
        float[] pool = {0f, -0f, 1f, -1f, Float.NaN, Float.intBitsToFloat(0x7fc0_0077), Float.intBitsToFloat(0xffc0_0001),
            Float.NEGATIVE_INFINITY, Float.POSITIVE_INFINITY, -Float.MIN_VALUE};
        for (int rep = 0; rep < 20_000; rep++) {
            int c = 1 + r.nextInt(70), base = r.nextInt(3);
            float[] a = new float[base + c];
            int mode = r.nextInt(4);
            for (int i = 0; i < a.length; i++)
                a[i] = switch (mode) {
                    case 0 -> r.nextBoolean() ? 0f : -0f;                               // only zeros
                    case 1 -> (float) r.nextGaussian();                                 // plain values
                    default -> r.nextInt(mode == 2 ? 40 : 4) == 0 ? pool[r.nextInt(pool.length)] : (float) r.nextGaussian();
                };
            float want = a[base];
            for (int i = 1; i < c; i++) want = Math.max(want, a[base + i]);
            float got = PlanKernels.rowMax(a, base, c);
            if (Float.isNaN(want) ? !Float.isNaN(got) : Float.floatToRawIntBits(got) != Float.floatToRawIntBits(want))
                throw new AssertionError("rowMax c=" + c + " rep " + rep + ": " + got + " vs sequential " + want);
        }
    }

    @Test
    void vectorKernelsEqualTheInterpreterColdAndWarm() {
        SplittableRandom r = new SplittableRandom(11);
        round(r, true);
        round(r, false);
        for (int i = 0; i < 60; i++) round(r, i % 2 == 0);    // warm-up: C2 compiles the kernels
        for (int i = 0; i < 3; i++) round(r, i % 2 == 0);
    }
}
