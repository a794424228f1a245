package kina.kernels;

import jdk.incubator.vector.FloatVector;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** KinaMath.exp: the lanewise form equals the scalar bit for bit (cold and after C2), and stays within 1 ulp. */
class KinaMathTest {
    static volatile float SINK;

    /** Special and boundary inputs: zeros, infinities, NaN payloads, the overflow and underflow edges. */
    static final float[] SPECIAL = {
        0f, -0f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN,
        Float.intBitsToFloat(0x7fc0_1234), Float.intBitsToFloat(0xffc0_0001), Float.intBitsToFloat(0x7f80_0001),
        Float.MAX_VALUE, -Float.MAX_VALUE, Float.MIN_VALUE, -Float.MIN_VALUE, Float.MIN_NORMAL, -Float.MIN_NORMAL,
        1f, -1f, 0.5f, -0.5f, 1e-8f, -1e-8f, 0.34657359f, -0.34657359f, 0.6931472f, -0.6931472f,
        88.72283f, Math.nextUp(88.72283f), 88.7228394f, Math.nextUp(88.7228394f), 88.8f, 89f, 89.5f, 100f, 1e30f,
        -87.33654f, Math.nextDown(-87.33654f), -87.3365479f, -100f, -103.27893f, -103.972076f, Math.nextUp(-103.972076f),
        Math.nextDown(-103.972076f), -103.97208f, -104f, -104.5f, -150f, -1e30f,
    };

    static int bits(float f) { return Float.floatToRawIntBits(f); }

    /** Distance in ulps between two non-NaN floats (+0 and −0 are 0 apart; +∞ is one past MAX_VALUE). */
    static long ulps(float a, float b) {
        int ia = bits(a), ib = bits(b);
        long la = ia < 0 ? -(long) (ia & 0x7fff_ffff) : ia, lb = ib < 0 ? -(long) (ib & 0x7fff_ffff) : ib;
        return Math.abs(la - lb);
    }

    /** Inputs: the special values, then random bit patterns and random values in [−110, 95]. */
    static float[] inputs(int n, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] x = new float[n];
        System.arraycopy(SPECIAL, 0, x, 0, SPECIAL.length);
        for (int i = SPECIAL.length; i < n; i++)
            x[i] = i % 2 == 0 ? Float.intBitsToFloat(r.nextInt()) : (float) (-110 + 205 * r.nextDouble());
        return x;
    }

    /**
     * Asserts the array forms (whole vectors in lanes, the tail by the scalar) equal the scalar exp
     * element by element on x: exp(x), exp(x − m) and exp(−x), over a length that leaves a tail.
     */
    static void assertLanesEqualScalar(float[] x, String when) {
        int n = x.length - 3;                        // not a multiple of the lanes: the tail runs too
        float[] y = new float[n], ym = new float[n], yn = new float[n];
        float m = 1.25f;
        KinaMath.exp(x, 0, y, 0, n);
        KinaMath.expMinus(x, 0, m, ym, 0, n);
        KinaMath.expNeg(x, 0, yn, 0, n);
        for (int i = 0; i < n; i++) {
            check(when, "exp(x)", x[i], y[i], KinaMath.exp(x[i]));
            check(when, "exp(x - m)", x[i], ym[i], KinaMath.exp(x[i] - m));
            check(when, "exp(-x)", x[i], yn[i], KinaMath.exp(-x[i]));
        }
    }

    static void check(String when, String what, float x, float got, float want) {
        if (bits(got) != bits(want))
            throw new AssertionError(when + ": " + what + " at x = " + x + " (0x" + Integer.toHexString(bits(x)) + "): array form "
                    + got + ", scalar " + want);
    }

    /** Every length up to five pairs of vectors: the two-vector loop, the one-vector loop and the scalar tail in every combination. */
    @Test
    void everyShortLengthEqualsScalar() { assertShortLengthsEqualScalar("cold"); }

    static void assertShortLengthsEqualScalar(String when) {
        float[] x = inputs(1 << 12, 3);
        for (int n = 0; n <= 10 * FloatVector.SPECIES_PREFERRED.length() + 3; n++)
            assertLanesEqualScalar(java.util.Arrays.copyOf(x, n + 3), when + ", length " + n);
    }

    @Test
    void vectorEqualsScalarColdAndAfterWarmUp() {
        float[] x = inputs(1 << 16, 1);
        assertLanesEqualScalar(x, "cold");
        float sink = 0;                                  // ≥ 200k calls of each form: C2 compiles both
        float[] y = new float[x.length];
        for (int rep = 0; rep < 8; rep++) {
            KinaMath.exp(x, 0, y, 0, x.length);
            KinaMath.expMinus(x, 0, 0.5f, y, 0, x.length);
            KinaMath.expNeg(x, 0, y, 0, x.length);
            for (float v : x) sink += KinaMath.exp(v);
        }
        for (int rep = 0; rep < 4; rep++) for (float v : x) sink += KinaMath.exp(v);
        SINK = sink + y[0];                              // keep the warm-up from being optimised away
        assertLanesEqualScalar(x, "warm");
        assertLanesEqualScalar(inputs(1 << 20, 2), "warm, fresh inputs");
        assertShortLengthsEqualScalar("warm");                 // the compiled loops' bounds, every remainder
    }

    @Test
    void specialValues() {
        assertThat(bits(KinaMath.exp(0f))).isEqualTo(bits(1f));
        assertThat(bits(KinaMath.exp(-0f))).isEqualTo(bits(1f));
        assertThat(bits(KinaMath.exp(Float.NEGATIVE_INFINITY))).isEqualTo(bits(0f));
        assertThat(bits(KinaMath.exp(Float.POSITIVE_INFINITY))).isEqualTo(bits(Float.POSITIVE_INFINITY));
        assertThat(bits(KinaMath.exp(-1e30f))).isEqualTo(bits(0f));
        assertThat(bits(KinaMath.exp(-104f))).isEqualTo(bits(0f));
        assertThat(bits(KinaMath.exp(89f))).isEqualTo(bits(Float.POSITIVE_INFINITY));
        assertThat(bits(KinaMath.exp(1e30f))).isEqualTo(bits(Float.POSITIVE_INFINITY));
        assertThat(KinaMath.exp(-103.97f)).isEqualTo(Float.MIN_VALUE);   // the smallest subnormal
        for (float nan : new float[] {Float.NaN, Float.intBitsToFloat(0x7fc0_1234), Float.intBitsToFloat(0xffc0_0001)})
            assertThat(bits(KinaMath.exp(nan))).isEqualTo(bits(nan));
        for (float v : SPECIAL)
            if (!Float.isNaN(v))
                assertThat(ulps(KinaMath.exp(v), (float) StrictMath.exp(v))).as("exp(%s)", v).isLessThanOrEqualTo(1);
    }

    /** Against (float) StrictMath.exp((double) x): at most 1 ulp; most results correctly rounded. */
    @Test
    void withinOneUlpOfStrictMath() {
        SplittableRandom r = new SplittableRandom(7);
        int n = 6_000_000, off = 0;
        long worst = 0;
        for (int i = 0; i < n; i++) {
            float x = switch (i % 3) {
                case 0 -> (float) (-104 + 193 * r.nextDouble());            // uniform in value over [−104, 89]
                case 1 -> Float.intBitsToFloat(r.nextInt(0x42b2_0000));     // uniform in bits over [0, 89]
                default -> -Float.intBitsToFloat(r.nextInt(0x42d0_0000));   // uniform in bits over [−104, 0]
            };
            long u = ulps(KinaMath.exp(x), (float) StrictMath.exp(x));
            if (u > worst) worst = u;
            if (u != 0) off++;
        }
        assertThat(worst).isLessThanOrEqualTo(1);
        assertThat((double) off / n).as("fraction not correctly rounded").isLessThan(0.03);
    }
}
