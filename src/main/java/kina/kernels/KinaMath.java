package kina.kernels;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * kina's own float exp: one algorithm in a scalar and a lanewise form that
 * take the same IEEE operations in the same order, so every lane of the array forms ({@link
 * #exp(float[], int, float[], int, int)}, {@code expMinus}, {@code expNeg}) equals {@link #exp(float)}
 * bit for bit, in every JIT tier. Only float fma, add, sub, mul,
 * min/max, compare/blend, int add/sub/shift and bit reinterpretations are used: each is exactly
 * specified in Java and in the Vector API (unlike {@code Math.exp} or lanewise {@code EXP}). The
 * interpreter's and the plan's F32 kernels both call it; F64 keeps {@link StrictMath#exp}.
 */
public final class KinaMath {
    private KinaMath() {}

    /** Clamp bounds: e^−104 rounds to +0 and e^89 overflows, so clamping changes no result. */
    private static final float LO = -104f, HI = 89f;
    private static final float LOG2E = 0x1.715476p0f;
    /** 1.5·2²³: adding it rounds to an integer; its bits minus SHIFT_BITS are that integer. */
    private static final float SHIFT = 0x1.8p23f;
    private static final int SHIFT_BITS = 0x4B40_0000;
    private static final float LN2_HI = 0x1.62e430p-1f, LN2_LO = -0x1.05c610p-29f;
    private static final float C2 = 0x1.fffffcp-2f, C3 = 0x1.55548cp-3f, C4 = 0x1.555858p-5f,
            C5 = 0x1.123de0p-7f, C6 = 0x1.6ac73cp-10f;

    /**
     * e^x for a float: within 1 ulp of the correctly rounded result (accuracy below);
     * exp(±0) = 1, exp(−∞) = +0, exp(+∞) = +∞, exp(NaN) = x itself.
     *
     * <p>Algorithm. x is clamped to [−104, 89] (outside it the result is already +0 or +∞).
     * n = round-to-nearest-even(x·log2e) by t = fma(x, LOG2E, 1.5·2²³), n = t − 1.5·2²³ (|x·log2e| ≤ 151,
     * so t's ulp is 1 and the subtraction is exact). Cody–Waite: r = fma(n, −LN2_HI, x) (exact: LN2_HI
     * has 24 bits, the result is a multiple of 2⁻²⁵ below 0.35), r = fma(n, −LN2_LO, r).
     * e^r ≈ 1 + r + c2·r² + … + c6·r⁶ by Horner with fma. The result p·2ⁿ multiplies by 2^⌊n/2⌋, then
     * by 2^(n − ⌊n/2⌋), each built from exponent bits: both factors are normal for n in [−150, 128], the
     * first product is exact and the second rounds once, so subnormal results round correctly and
     * overflow gives +∞. NaN returns x itself (payload kept); −∞ gives +0; +∞ gives +∞.
     *
     * <p>Constants. LOG2E, LN2_HI = float(ln 2), LN2_LO = float(ln 2 − LN2_HI). c2…c6: a relative-error
     * Remez (minimax) fit of e^r on [−0.3466, 0.3466] (ln2/2 plus a margin for n rounded from float
     * x·LOG2E) with c0 = c1 = 1 fixed, computed with mpmath at 40 digits; each coefficient rounded to
     * float in turn from c2 up, the later ones refitted after each rounding. The float polynomial's
     * relative error is 3.2·10⁻⁹ (0.03 ulp of 1).
     *
     * <p>Accuracy, measured against (float) StrictMath.exp((double) x) over all 2³² inputs: at most
     * 1 ulp everywhere; 10,566,634 results (0.47% of the floats in [−104, 89], where most are tiny and
     * give 1) are 1 ulp off, the rest correctly rounded; over values drawn uniformly from [−104, 89],
     * 2.3% are 1 ulp off. The lanewise form equals the scalar one on all 2³² inputs (AVX2, C2;
     * rechecked for exp(x) and exp(−x) after the loop took two vectors per iteration and
     * after its clamp became compare-and-blend: bench/ExpExhaustive.java, 0 mismatches).
     */
    public static float exp(float x) {
        float xc = Math.min(Math.max(x, LO), HI);
        float t = Math.fma(xc, LOG2E, SHIFT);
        float n = t - SHIFT;
        float r = Math.fma(n, -LN2_HI, xc);
        r = Math.fma(n, -LN2_LO, r);
        float p = Math.fma(C6, r, C5);
        p = Math.fma(p, r, C4);
        p = Math.fma(p, r, C3);
        p = Math.fma(p, r, C2);
        p = Math.fma(p, r, 1f);
        p = Math.fma(p, r, 1f);
        int k = Float.floatToRawIntBits(t) - SHIFT_BITS;
        int k1 = k >> 1, k2 = k - k1;
        float y = p * Float.intBitsToFloat((k1 + 127) << 23) * Float.intBitsToFloat((k2 + 127) << 23);
        return x != x ? x : y;
    }

    /** y[yOff + i] = exp(x[xOff + i]) for i in [0, n): whole vectors in lanes, then {@link #exp(float)}. */
    public static void exp(float[] x, int xOff, float[] y, int yOff, int n) { expLoop(PLAIN, x, xOff, 0f, y, yOff, n); }

    /** y[yOff + i] = exp(x[xOff + i] − m) for i in [0, n) (a float subtraction, then exp). */
    public static void expMinus(float[] x, int xOff, float m, float[] y, int yOff, int n) { expLoop(MINUS, x, xOff, m, y, yOff, n); }

    /** y[yOff + i] = exp(−x[xOff + i]) for i in [0, n) (sigmoid's exp). */
    public static void expNeg(float[] x, int xOff, float[] y, int yOff, int n) { expLoop(NEG, x, xOff, 0f, y, yOff, n); }

    private static final int PLAIN = 0, MINUS = 1, NEG = 2;

    /**
     * The one lanewise exp: {@link #exp(float)}'s operations in the same order on every lane of
     * whole vectors (so each lane equals the scalar bit for bit: lanewise compare and blend, fma,
     * sub, mul, integer add and shifts are exact), the rest by {@link #exp(float)}. The vector code lives in
     * this loop and nowhere else, on purpose: a vector handed to or returned from a method C2 did
     * not inline is boxed, and C2 declines to inline a method it already compiled on its own when
     * that code is big; a lanewise exp in a helper method ran boxed (allocating) in the steady state.
     * Callers pass arrays.
     */
    private static void expLoop(int mode, float[] x, int xOff, float m, float[] y, int yOff, int n) {
        VectorSpecies<Float> s = FS;
        int v = s.loopBound(n), i = 0;
        FloatVector lo = FloatVector.broadcast(s, LO), hi = FloatVector.broadcast(s, HI), log2e = FloatVector.broadcast(s, LOG2E),
                shift = FloatVector.broadcast(s, SHIFT), ln2Hi = FloatVector.broadcast(s, -LN2_HI), ln2Lo = FloatVector.broadcast(s, -LN2_LO),
                c2 = FloatVector.broadcast(s, C2), c3 = FloatVector.broadcast(s, C3), c4 = FloatVector.broadcast(s, C4),
                c5 = FloatVector.broadcast(s, C5), c6 = FloatVector.broadcast(s, C6), one = FloatVector.broadcast(s, 1f);
        // Two vectors per iteration, their chains interleaved: one vector's exp is a long dependency
        // chain (clamp, reduction, six fmas, scaling) that fills the FP scheduler; two independent
        // ones keep both FMA pipes busy. Each lane still takes exp(float)'s operations in order.
        int v2 = n - n % (2 * s.length());
        for (; i < v2; i += 2 * s.length()) {
            FloatVector xa = FloatVector.fromArray(s, x, xOff + i), xb = FloatVector.fromArray(s, x, xOff + i + s.length());
            FloatVector va = mode == MINUS ? xa.sub(m) : mode == NEG ? xa.neg() : xa;
            FloatVector vb = mode == MINUS ? xb.sub(m) : mode == NEG ? xb.neg() : xb;
            // The clamp by compare and blend: lanewise max/min carry Math.max's NaN and ±0 rules (five
            // instructions each on AVX2); here a NaN lane stays NaN and is replaced by x at the end, and the
            // bounds are not zeros, so every other lane gets Math.min(Math.max(x, LO), HI) exactly.
            FloatVector ca = va.blend(lo, va.compare(VectorOperators.LT, lo)), cb = vb.blend(lo, vb.compare(VectorOperators.LT, lo));
            ca = ca.blend(hi, ca.compare(VectorOperators.GT, hi)); cb = cb.blend(hi, cb.compare(VectorOperators.GT, hi));
            FloatVector ta = ca.fma(log2e, shift), tb = cb.fma(log2e, shift);
            FloatVector na = ta.sub(shift), nb = tb.sub(shift);
            FloatVector ra = na.fma(ln2Hi, ca), rb = nb.fma(ln2Hi, cb);
            ra = na.fma(ln2Lo, ra); rb = nb.fma(ln2Lo, rb);
            FloatVector pa = c6.fma(ra, c5), pb = c6.fma(rb, c5);
            pa = pa.fma(ra, c4); pb = pb.fma(rb, c4);
            pa = pa.fma(ra, c3); pb = pb.fma(rb, c3);
            pa = pa.fma(ra, c2); pb = pb.fma(rb, c2);
            pa = pa.fma(ra, one); pb = pb.fma(rb, one);
            pa = pa.fma(ra, one); pb = pb.fma(rb, one);
            IntVector ka = ((IntVector) ta.reinterpretAsInts()).sub(SHIFT_BITS), kb = ((IntVector) tb.reinterpretAsInts()).sub(SHIFT_BITS);
            IntVector ka1 = ka.lanewise(VectorOperators.ASHR, 1), kb1 = kb.lanewise(VectorOperators.ASHR, 1);
            IntVector ka2 = ka.sub(ka1), kb2 = kb.sub(kb1);
            FloatVector sa1 = (FloatVector) ka1.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
            FloatVector sb1 = (FloatVector) kb1.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
            FloatVector sa2 = (FloatVector) ka2.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
            FloatVector sb2 = (FloatVector) kb2.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
            FloatVector ya = pa.mul(sa1).mul(sa2), yb = pb.mul(sb1).mul(sb2);
            ya.blend(va, va.compare(VectorOperators.NE, va)).intoArray(y, yOff + i);
            yb.blend(vb, vb.compare(VectorOperators.NE, vb)).intoArray(y, yOff + i + s.length());
        }
        for (; i < v; i += s.length()) {
            FloatVector x0 = FloatVector.fromArray(s, x, xOff + i);
            FloatVector xv = mode == MINUS ? x0.sub(m) : mode == NEG ? x0.neg() : x0;
            FloatVector xc = xv.blend(lo, xv.compare(VectorOperators.LT, lo));        // the clamp as above
            xc = xc.blend(hi, xc.compare(VectorOperators.GT, hi));
            FloatVector t = xc.fma(log2e, shift);
            FloatVector nn = t.sub(shift);
            FloatVector r = nn.fma(ln2Hi, xc);
            r = nn.fma(ln2Lo, r);
            FloatVector p = c6.fma(r, c5);
            p = p.fma(r, c4);
            p = p.fma(r, c3);
            p = p.fma(r, c2);
            p = p.fma(r, one);
            p = p.fma(r, one);
            IntVector k = ((IntVector) t.reinterpretAsInts()).sub(SHIFT_BITS);
            IntVector k1 = k.lanewise(VectorOperators.ASHR, 1), k2 = k.sub(k1);
            FloatVector s1 = (FloatVector) k1.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
            FloatVector s2 = (FloatVector) k2.add(127).lanewise(VectorOperators.LSHL, 23).reinterpretAsFloats();
            FloatVector yv = p.mul(s1).mul(s2);
            yv.blend(xv, xv.compare(VectorOperators.NE, xv)).intoArray(y, yOff + i);
        }
        for (; i < n; i++) {
            float xi = x[xOff + i];
            y[yOff + i] = exp(mode == MINUS ? xi - m : mode == NEG ? -xi : xi);
        }
    }

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
}
