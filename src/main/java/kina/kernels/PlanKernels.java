package kina.kernels;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import kina.ir.Instr.AttnOpts;

/**
 * The plan's native kernels over raw buffers: F32 as {@code float[]}, F64 as {@code double[]},
 * I64/I1 as {@code long[]}. Each computes exactly the bits of its {@link kina.eval.Kernels} twin:
 * the same operations in the same order, with Java float arithmetic standing for "round each
 * double operation to float" (a double holds the exact sum, difference, product or quotient of two
 * floats closely enough that rounding it once to float is the float operation) and
 * transcendentals as {@code (float) StrictMath.f((double) x)}, except exp: {@link KinaMath#exp(float)},
 * whose lanewise form gives the same bits, so the exp loops run in vector lanes (each lane one
 * independent output; the sums over exps stay sequential scalar folds).
 *
 * <p>Buffers come from the plan's arena and may be longer than the tensor: every kernel takes its
 * element counts as arguments (never {@code array.length}) and writes every output element (stale
 * values from an earlier run must not survive). Work is split over {@link Parallel} by independent
 * outputs only (element ranges, rows, heads), never inside one output's reduction.
 */
public final class PlanKernels {
    private PlanKernels() {}

    /** Elements per parallel chunk of an elementwise kernel. */
    static final int CHUNK = 16_384;

    /** Below this much work (elements × cost) a range stays on the calling thread: waking the pool costs more. */
    static final long PARALLEL_MIN = 1L << 18;

    /** Runs {@code body(from, to)} over [0, n) in chunks, in parallel when large. */
    public static void range(int n, int costPerElement, RangeBody body) {
        int chunks = (n + CHUNK - 1) / CHUNK;
        if (chunks <= 1 || (long) n * costPerElement < PARALLEL_MIN) { body.run(0, n); return; }
        Parallel.forEach(chunks, (long) n * costPerElement, c -> body.run(c * CHUNK, Math.min(n, (c + 1) * CHUNK)));
    }

    /**
     * Runs {@code body(from, to)} over rows [0, n) of {@code width} elements each, in chunks of about
     * {@link #CHUNK} elements (a multiple of 4 rows, which the row kernels take together), in
     * parallel when large. (Row kernels once went through {@link #range} with a row count, so any
     * n ≤ CHUNK, every model's, ran on one thread.)
     */
    static void rows(int n, int width, int costPerElement, RangeBody body) {
        long work = (long) n * Math.max(1, width) * costPerElement;
        int per = Math.max(4, CHUNK / Math.max(1, width) / 4 * 4), chunks = (n + per - 1) / per;
        if (chunks <= 1 || work < PARALLEL_MIN) { body.run(0, n); return; }
        Parallel.forEach(chunks, work, c -> body.run(c * per, Math.min(n, (c + 1) * per)));
    }

    /** A range of independent outputs. */
    public interface RangeBody { void run(int from, int to); }

    // ---- elementwise, F32 -----------------------------------------------------------------------

    /** The unary elementwise instructions with a float-native loop. */
    public enum Unary { NEG, EXP, LOG, SQRT, RSQRT, TANH, SIGMOID, RECIPROCAL, SILU, RELU }

    /** σ(v) = 1 / (1 + exp(−v)), as Kernels.sigmoid at F32. */
    static float sigmoid(float v) { return 1f / (1f + KinaMath.exp(-v)); }

    /** y[i] = f(x[i]) for i in [from, to); as Kernels.neg/exp/log/sqrt/rsqrt/tanh/sigmoid/reciprocal/silu/relu. */
    public static void unary(Unary op, float[] x, float[] y, int from, int to) {
        switch (op) {
            case NEG -> { for (int i = from; i < to; i++) y[i] = -x[i]; }
            case EXP -> KinaMath.exp(x, from, y, from, to - from);
            case LOG -> { for (int i = from; i < to; i++) y[i] = (float) StrictMath.log(x[i]); }
            case SQRT -> { for (int i = from; i < to; i++) y[i] = (float) StrictMath.sqrt(x[i]); }
            case RSQRT -> { for (int i = from; i < to; i++) y[i] = 1f / (float) StrictMath.sqrt(x[i]); }
            case TANH -> { for (int i = from; i < to; i++) y[i] = (float) StrictMath.tanh(x[i]); }
            case SIGMOID -> sigmoidRange(x, y, from, to);
            case RECIPROCAL -> { for (int i = from; i < to; i++) y[i] = 1f / x[i]; }
            case SILU -> siluRange(x, y, from, to);
            case RELU -> { for (int i = from; i < to; i++) y[i] = Math.max(x[i], 0f); }
        }
    }

    /** The binary elementwise instructions with a native loop. */
    public enum Binary { ADD, SUB, MUL, DIV, MAXIMUM, SWIGLU }

    /** z[i] = a[i] op b[i] for i in [from, to); as Kernels.add/sub/mul/div/maximum/swiglu. */
    public static void binary(Binary op, float[] a, float[] b, float[] z, int from, int to) {
        switch (op) {
            case ADD -> { for (int i = from; i < to; i++) z[i] = a[i] + b[i]; }
            case SUB -> { for (int i = from; i < to; i++) z[i] = a[i] - b[i]; }
            case MUL -> { for (int i = from; i < to; i++) z[i] = a[i] * b[i]; }
            case DIV -> { for (int i = from; i < to; i++) z[i] = a[i] / b[i]; }
            case MAXIMUM -> { for (int i = from; i < to; i++) z[i] = Math.max(a[i], b[i]); }
            case SWIGLU -> swigluRange(a, b, z, from, to);
        }
    }

    // The sigmoid family takes its exps from KinaMath's array form (the one lanewise exp: no vector
    // ever crosses a method call, which C2 would box if it did not inline the callee), then finishes
    // in a second pass over the same elements. y (or z) must not alias the operands (arena buffers
    // never do).

    /** y[i] = σ(x[i]) = 1 / (1 + exp(−x[i])) for i in [from, to): the exps, then the rest, in lanes. */
    static void sigmoidRange(float[] x, float[] y, int from, int to) {
        KinaMath.expNeg(x, from, y, from, to - from);
        int i = from, vEnd = from + FS.loopBound(to - from);
        FloatVector one = FloatVector.broadcast(FS, 1f);
        for (; i < vEnd; i += LANES) one.div(one.add(FloatVector.fromArray(FS, y, i))).intoArray(y, i);
        for (; i < to; i++) y[i] = 1f / (1f + y[i]);
    }

    /**
     * swiglu that also keeps σ(a): s[i] = σ(a[i]) and z[i] = a[i]·s[i]·b[i] for i in [from, to), the
     * roundings of {@link #swigluRange} and {@link #sigmoidRange} (Plan.sharedSigmoids).
     */
    public static void swigluSigmoidRange(float[] a, float[] b, float[] z, float[] s, int from, int to) {
        KinaMath.expNeg(a, from, s, from, to - from);
        int i = from, vEnd = from + FS.loopBound(to - from);
        FloatVector one = FloatVector.broadcast(FS, 1f);
        for (; i < vEnd; i += LANES) {
            FloatVector sv = one.div(one.add(FloatVector.fromArray(FS, s, i)));
            sv.intoArray(s, i);
            FloatVector.fromArray(FS, a, i).mul(sv).mul(FloatVector.fromArray(FS, b, i)).intoArray(z, i);
        }
        for (; i < to; i++) {
            float sv = 1f / (1f + s[i]);
            s[i] = sv;
            z[i] = (a[i] * sv) * b[i];
        }
    }

    /** y[i] = x[i] · σ(x[i]) for i in [from, to). */
    static void siluRange(float[] x, float[] y, int from, int to) {
        KinaMath.expNeg(x, from, y, from, to - from);
        int i = from, vEnd = from + FS.loopBound(to - from);
        FloatVector one = FloatVector.broadcast(FS, 1f);
        for (; i < vEnd; i += LANES)
            FloatVector.fromArray(FS, x, i).mul(one.div(one.add(FloatVector.fromArray(FS, y, i)))).intoArray(y, i);
        for (; i < to; i++) y[i] = x[i] * (1f / (1f + y[i]));
    }

    /** z[i] = (g · σ(g)) · u[i], g = a[i], for i in [from, to). */
    static void swigluRange(float[] a, float[] b, float[] z, int from, int to) {
        KinaMath.expNeg(a, from, z, from, to - from);
        int i = from, vEnd = from + FS.loopBound(to - from);
        FloatVector one = FloatVector.broadcast(FS, 1f);
        for (; i < vEnd; i += LANES)
            FloatVector.fromArray(FS, a, i).mul(one.div(one.add(FloatVector.fromArray(FS, z, i))))
                    .mul(FloatVector.fromArray(FS, b, i)).intoArray(z, i);
        for (; i < to; i++) z[i] = (a[i] * (1f / (1f + z[i]))) * b[i];
    }

    /** The F64 twin of {@link #binary} for add, sub, mul, div, maximum. */
    public static void binary(Binary op, double[] a, double[] b, double[] z, int from, int to) {
        switch (op) {
            case ADD -> { for (int i = from; i < to; i++) z[i] = a[i] + b[i]; }
            case SUB -> { for (int i = from; i < to; i++) z[i] = a[i] - b[i]; }
            case MUL -> { for (int i = from; i < to; i++) z[i] = a[i] * b[i]; }
            case DIV -> { for (int i = from; i < to; i++) z[i] = a[i] / b[i]; }
            case MAXIMUM -> { for (int i = from; i < to; i++) z[i] = Math.max(a[i], b[i]); }
            case SWIGLU -> {
                for (int i = from; i < to; i++) {
                    double g = a[i];
                    double s = 1.0 / (1.0 + StrictMath.exp(-g));
                    z[i] = (g * s) * b[i];
                }
            }
        }
    }

    // ---- data movement (any buffer kind) ---------------------------------------------------------

    /**
     * The source offset of every output row (row = all output axes but the last) of a strided
     * view, out[o] = x[Σ o_i · stride_i]; the last axis then walks with stride[r − 1].
     */
    public static int[] rowOffsets(long[] outDims, long[] stride) {
        int r = outDims.length;
        if (r == 0) return new int[] {0};
        long rowsL = 1;
        for (int i = 0; i < r - 1; i++) rowsL *= outDims[i];
        int rows = (int) rowsL;
        int[] off = new int[rows];
        long[] o = new long[r - 1];
        long at = 0;
        for (int f = 0; f < rows; f++) {
            off[f] = (int) at;
            for (int i = r - 2; i >= 0; i--) {
                if (++o[i] < outDims[i]) { at += stride[i]; break; }
                at -= (o[i] - 1) * stride[i];
                o[i] = 0;
            }
        }
        return off;
    }

    /** out[row·w + j] = x[off[row] + j·s] (a copy: transpose, broadcast). */
    public static void strided(Object x, Object y, int[] off, int w, int s) {
        switch (x) {
            case float[] a -> {
                float[] b = (float[]) y;
                rows(off.length, w, 1, (f, t) -> {
                    for (int row = f; row < t; row++) {
                        int o = off[row], base = row * w;
                        if (s == 1) System.arraycopy(a, o, b, base, w);
                        else if (s == 0) Arrays.fill(b, base, base + w, a[o]);
                        else for (int j = 0; j < w; j++) b[base + j] = a[o + j * s];
                    }
                });
            }
            case double[] a -> {
                double[] b = (double[]) y;
                for (int row = 0; row < off.length; row++) {
                    int o = off[row], base = row * w;
                    for (int j = 0; j < w; j++) b[base + j] = a[o + j * s];
                }
            }
            case long[] a -> {
                long[] b = (long[]) y;
                for (int row = 0; row < off.length; row++) {
                    int o = off[row], base = row * w;
                    for (int j = 0; j < w; j++) b[base + j] = a[o + j * s];
                }
            }
            default -> throw new IllegalStateException("not a buffer: " + x);
        }
    }

    // ---- reduction -----------------------------------------------------------------------------

    /**
     * As Kernels.sum: out[o, i] = x[o, 0, i], then out = out + x[o, c, i] in increasing c (each
     * element's order unchanged; the loop runs c outside i for locality); c = 0 gives +0.0.
     */
    public static void sum(float[] a, float[] y, int outer, int c, int inner) {
        if (c == 0) { Arrays.fill(y, 0, outer * inner, 0f); return; }
        if (inner == 1) {
            rows(outer, c, 1, (f, t) -> foldRows(a, y, f, t, c));
            return;
        }
        // Column blocks run in parallel (each output's order unchanged): a block walks the c rows
        // contiguously; at most COLS wide, and at least four blocks when inner allows 128-wide ones.
        int cols = Math.min(COLS, Math.max(128, (inner + 3) / 4)), blocks = (inner + cols - 1) / cols;
        rows(outer * blocks, Math.min(cols, inner) * c, 1, (f, t) -> {
            for (int ob = f; ob < t; ob++) {
                int o = ob / blocks, i0 = ob % blocks * cols, w = Math.min(cols, inner - i0);
                int out = o * inner + i0, in = o * c * inner + i0;
                System.arraycopy(a, in, y, out, w);
                for (int ci = 1; ci < c; ci++) {
                    int src = in + ci * inner;
                    for (int i = 0; i < w; i++) y[out + i] += a[src + i];
                }
            }
        });
    }

    /** Most columns per parallel block of a sum over a middle axis. */
    private static final int COLS = 1024;

    /**
     * y[o] = a[o·c] + a[o·c + 1] + … in increasing index (each row's sequential fold), rows o in
     * [from, to). Four rows advance together: four independent chains hide the add latency that a
     * single fold waits on, and no row's order changes.
     */
    static void foldRows(float[] a, float[] y, int from, int to, int c) {
        int o = from;
        for (; o + 4 <= to; o += 4) {
            int b0 = o * c, b1 = b0 + c, b2 = b1 + c, b3 = b2 + c;
            float s0 = a[b0], s1 = a[b1], s2 = a[b2], s3 = a[b3];
            for (int ci = 1; ci < c; ci++) { s0 += a[b0 + ci]; s1 += a[b1 + ci]; s2 += a[b2 + ci]; s3 += a[b3 + ci]; }
            y[o] = s0; y[o + 1] = s1; y[o + 2] = s2; y[o + 3] = s3;
        }
        for (; o < to; o++) {
            int base = o * c;
            float acc = a[base];
            for (int ci = 1; ci < c; ci++) acc += a[base + ci];
            y[o] = acc;
        }
    }

    /**
     * A softmax's backward over rows of c (Plan.softmaxGrads): d[o] = m_0 + m_1 + … in increasing j
     * with m_j = p_j·dp_j, then ds_j = p_j·(dp_j − d[o]): each value rounded as the separate mul,
     * sum, sub and mul steps round it (F32). d may be null (not needed); c = 0 gives
     * d = +0.0. Four rows' folds advance together (as {@link #foldRows}); the second pass is in lanes.
     */
    public static void softmaxGrad(float[] p, float[] dp, float[] ds, float[] d, int rows, int c) {
        if (c == 0) { if (d != null) Arrays.fill(d, 0, rows, 0f); return; }
        rows(rows, c, 4, (from, to) -> softmaxGradRows(p, dp, ds, d, from, to, c));
    }

    private static void softmaxGradRows(float[] p, float[] dp, float[] ds, float[] d, int from, int to, int c) {
        int o = from;
        for (; o + 4 <= to; o += 4) {
            int b0 = o * c, b1 = b0 + c, b2 = b1 + c, b3 = b2 + c;
            float s0 = p[b0] * dp[b0], s1 = p[b1] * dp[b1], s2 = p[b2] * dp[b2], s3 = p[b3] * dp[b3];
            for (int j = 1; j < c; j++) {
                s0 += p[b0 + j] * dp[b0 + j];
                s1 += p[b1 + j] * dp[b1 + j];
                s2 += p[b2 + j] * dp[b2 + j];
                s3 += p[b3 + j] * dp[b3 + j];
            }
            if (d != null) { d[o] = s0; d[o + 1] = s1; d[o + 2] = s2; d[o + 3] = s3; }
            softmaxGradRow(p, dp, ds, b0, c, s0);
            softmaxGradRow(p, dp, ds, b1, c, s1);
            softmaxGradRow(p, dp, ds, b2, c, s2);
            softmaxGradRow(p, dp, ds, b3, c, s3);
        }
        for (; o < to; o++) {
            float s = dot(p, dp, o * c, c);
            if (d != null) d[o] = s;
            softmaxGradRow(p, dp, ds, o * c, c, s);
        }
    }

    private static float dot(float[] p, float[] dp, int base, int c) {
        float s = p[base] * dp[base];
        for (int j = 1; j < c; j++) s += p[base + j] * dp[base + j];
        return s;
    }

    /** ds[base + j] = p·(dp − t) for j < c, in lanes. */
    private static void softmaxGradRow(float[] p, float[] dp, float[] ds, int base, int c, float t) {
        int j = 0;
        for (int end = FS.loopBound(c); j < end; j += LANES) {
            FloatVector pv = FloatVector.fromArray(FS, p, base + j), s = FloatVector.fromArray(FS, dp, base + j).sub(t);
            pv.mul(s).intoArray(ds, base + j);
        }
        for (; j < c; j++) ds[base + j] = p[base + j] * (dp[base + j] - t);
    }

    /** The F64 twin of {@link #sum}. */
    public static void sum(double[] a, double[] y, int outer, int c, int inner) {
        if (c == 0) { Arrays.fill(y, 0, outer * inner, 0d); return; }
        for (int o = 0; o < outer; o++) {
            int out = o * inner, in = o * c * inner;
            System.arraycopy(a, in, y, out, inner);
            for (int ci = 1; ci < c; ci++) {
                int src = in + ci * inner;
                for (int i = 0; i < inner; i++) y[out + i] += a[src + i];
            }
        }
    }

    // ---- fused row-wise --------------------------------------------------------------------------

    /** As Kernels.logSoftmax / softmax along an axis (outer, c, inner). */
    public static void softmax(float[] a, float[] y, int outer, int c, int inner, boolean log) {
        if (c == 0) return;
        if (inner == 1) { rows(outer, c, 4, (f, t) -> softmaxRows(a, y, f, t, c, log)); return; }
        rows(outer * inner, c, 4, (f, t) -> {
            for (int oi = f; oi < t; oi++) {
                int o = oi / inner, i = oi % inner, base = o * c * inner + i;
                float m = a[base];
                for (int ci = 1; ci < c; ci++) m = Math.max(m, a[base + ci * inner]);
                if (m == Float.NEGATIVE_INFINITY) {                 // fully masked: as Kernels.softmax / logSoftmax
                    for (int ci = 0; ci < c; ci++) y[base + ci * inner] = log ? Float.NEGATIVE_INFINITY : 0f;
                    continue;
                }
                float sum = 0;
                for (int ci = 0; ci < c; ci++) {
                    float e = KinaMath.exp(a[base + ci * inner] - m);
                    if (!log) y[base + ci * inner] = e;
                    sum = ci == 0 ? e : sum + e;
                }
                if (log) {
                    float l = (float) StrictMath.log(sum);
                    for (int ci = 0; ci < c; ci++) y[base + ci * inner] = (a[base + ci * inner] - m) - l;
                } else {
                    for (int ci = 0; ci < c; ci++) y[base + ci * inner] = y[base + ci * inner] / sum;
                }
            }
        });
    }

    /**
     * The sequential fold m = a[base], then m = Math.max(m, a[base + i]) for i = 1 … c − 1, in
     * lanes when the vector body holds no NaN. Without NaN, Math.max is the maximum of a total order
     * (−0 below +0, distinct bits distinct elements), so any grouping returns the same element,
     * bits included; the scalar tail then folds on from it, which keeps the first NaN of the tail
     * exactly as the sequential fold does. A NaN in the body: the sequential fold itself. (Which
     * NaN a Math.max of two NaNs returns varies with the JIT tier, in the scalar fold too: the
     * discipline holds NaN-ness there, not payloads.)
     */
    static float rowMax(float[] a, int base, int c) {
        int vc = c / LANES * LANES;
        if (vc >= 2 * LANES) {
            // Lanewise max is Math.max per lane, so a NaN anywhere in the body leaves a NaN lane.
            FloatVector mv = FloatVector.fromArray(FS, a, base);
            for (int ci = LANES; ci < vc; ci += LANES) mv = mv.max(FloatVector.fromArray(FS, a, base + ci));
            float m = mv.lane(0);
            boolean nan = m != m;
            for (int k = 1; k < LANES; k++) { float l = mv.lane(k); nan |= l != l; m = Math.max(m, l); }
            if (!nan) {
                for (int ci = vc; ci < c; ci++) m = Math.max(m, a[base + ci]);
                return m;
            }
        }
        float m = a[base];
        for (int ci = 1; ci < c; ci++) m = Math.max(m, a[base + ci]);
        return m;
    }

    /** Rows that softmaxRows takes together: their sequential sums run as independent chains. */
    static final int ROW_BLOCK = 4;

    /**
     * {@link #softmax} of contiguous rows [from, to) of width c: the same steps; the max (see
     * {@link #rowMax}), the exps and the last pass in vector lanes, each row's sum a sequential
     * scalar fold ({@link #foldRows}, several rows side by side).
     */
    static void softmaxRows(float[] a, float[] y, int from, int to, int c, boolean log) {
        Scratch sc = Scratch.get();                     // the exps' rows (log_softmax: never y, the last pass still reads x)
        float[] e = sc.rowsA = Scratch.atLeast(sc.rowsA, ROW_BLOCK * c), m = sc.rowM, sum = sc.rowS;
        for (int r0 = from; r0 < to; r0 += ROW_BLOCK) {
            int rows = Math.min(ROW_BLOCK, to - r0);
            for (int r = 0; r < rows; r++) {
                int base = (r0 + r) * c;
                m[r] = rowMax(a, base, c);
                KinaMath.expMinus(a, base, m[r], e, r * c, c);
            }
            foldRows(e, sum, 0, rows, c);
            for (int r = 0; r < rows; r++) {
                int base = (r0 + r) * c;
                if (m[r] == Float.NEGATIVE_INFINITY) java.util.Arrays.fill(y, base, base + c, log ? Float.NEGATIVE_INFINITY : 0f);   // fully masked
                else if (log) logSoftmaxTail(a, base, c, m[r], (float) StrictMath.log(sum[r]), y);
                else divideRow(e, r * c, c, sum[r], y, base);
            }
        }
    }

    /** y[base + i] = (a[base + i] − m) − l for i in [0, c). */
    static void logSoftmaxTail(float[] a, int base, int c, float m, float l, float[] y) {
        int ci = 0;
        for (; ci + LANES <= c; ci += LANES) FloatVector.fromArray(FS, a, base + ci).sub(m).sub(l).intoArray(y, base + ci);
        for (; ci < c; ci++) y[base + ci] = (a[base + ci] - m) - l;
    }

    /** y[yo + i] = e[eo + i] / z for i in [0, c). */
    static void divideRow(float[] e, int eo, int c, float z, float[] y, int yo) {
        int ci = 0;
        for (; ci + LANES <= c; ci += LANES) FloatVector.fromArray(FS, e, eo + ci).div(z).intoArray(y, yo + ci);
        for (; ci < c; ci++) y[yo + ci] = e[eo + ci] / z;
    }

    /**
     * As Kernels.rmsnorm over rows of width dd: u = x (+ residual); ss = Σ u² sequential;
     * q = 1 / √(ss / dd + eps); y = u·q (·w). {@code w} and {@code res} may be null.
     */
    public static void rmsnorm(float[] a, float[] w, float[] res, float[] y, int rows, int dd, float eps) {
        rows(rows, dd, 4, (f, t) -> {
            Scratch sc = Scratch.get();
            float[] u = sc.rowsA = Scratch.atLeast(sc.rowsA, ROW_BLOCK * dd), sq = sc.rowsB = Scratch.atLeast(sc.rowsB, ROW_BLOCK * dd), ss = sc.rowS;
            for (int r0 = f; r0 < t; r0 += ROW_BLOCK) {
                int n = Math.min(ROW_BLOCK, t - r0);
                for (int r = 0; r < n; r++) squares(a, res, (r0 + r) * dd, dd, u, sq, r * dd);
                foldRows(sq, ss, 0, n, dd);                    // Σ u² per row, sequential, rows side by side
                for (int r = 0; r < n; r++) {
                    float q = 1f / (float) StrictMath.sqrt(ss[r] / dd + eps);
                    scaleRow(u, r * dd, q, w, y, (r0 + r) * dd, dd);
                }
            }
        });
    }

    /** u[o + c] = a[base + c] (+ res[base + c]), sq[o + c] = u² (rounded), c in [0, dd). */
    static void squares(float[] a, float[] res, int base, int dd, float[] u, float[] sq, int o) {
        int c = 0;
        for (; c + LANES <= dd; c += LANES) {
            FloatVector uc = FloatVector.fromArray(FS, a, base + c);
            if (res != null) uc = uc.add(FloatVector.fromArray(FS, res, base + c));
            uc.intoArray(u, o + c);
            uc.mul(uc).intoArray(sq, o + c);
        }
        for (; c < dd; c++) {
            float uc = res == null ? a[base + c] : a[base + c] + res[base + c];
            u[o + c] = uc;
            sq[o + c] = uc * uc;
        }
    }

    /** y[yo + c] = u[uo + c]·q (·w[c]), c in [0, dd). */
    static void scaleRow(float[] u, int uo, float q, float[] w, float[] y, int yo, int dd) {
        int c = 0;
        for (; c + LANES <= dd; c += LANES) {
            FloatVector v = FloatVector.fromArray(FS, u, uo + c).mul(q);
            if (w != null) v = v.mul(FloatVector.fromArray(FS, w, c));
            v.intoArray(y, yo + c);
        }
        for (; c < dd; c++) {
            float v = u[uo + c] * q;
            y[yo + c] = w == null ? v : v * w[c];
        }
    }

    /** As Kernels.rope: x batch·[t, w], tables [L, half]; heads of width hd rotate their first 2·half dims. */
    public static void rope(float[] a, float[] cs, float[] sn, float[] y, int batch, int t, int w, int heads, int hd, int half, int start) {
        rows(batch * t, w, 4, (f, to) -> {
            System.arraycopy(a, f * w, y, f * w, (to - f) * w);          // the dims past the rotary ones pass through
            for (int bt = f; bt < to; bt++) {
                int row = bt % t, base = bt * w, tab = (start + row) * half;
                for (int h = 0; h < heads; h++) ropeHead(a, cs, sn, y, base + h * hd, tab, half);
            }
        });
    }

    /** One head's rotation: y[lo] = xa·c − xb·s, y[hi] = xb·c + xa·s (each product rounded, then the sum), lanes over i. */
    static void ropeHead(float[] a, float[] cs, float[] sn, float[] y, int lo0, int tab, int half) {
        int i = 0;
        for (; i + LANES <= half; i += LANES) {
            FloatVector c = FloatVector.fromArray(FS, cs, tab + i), sv = FloatVector.fromArray(FS, sn, tab + i);
            FloatVector xa = FloatVector.fromArray(FS, a, lo0 + i), xb = FloatVector.fromArray(FS, a, lo0 + half + i);
            xa.mul(c).sub(xb.mul(sv)).intoArray(y, lo0 + i);
            xb.mul(c).add(xa.mul(sv)).intoArray(y, lo0 + half + i);
        }
        for (; i < half; i++) {
            int lo = lo0 + i, hi = lo + half;
            float c = cs[tab + i], sv = sn[tab + i], xa = a[lo], xb = a[hi];
            y[lo] = xa * c - xb * sv;
            y[hi] = xb * c + xa * sv;
        }
    }

    // ---- attention -------------------------------------------------------------------------------

    /** The static geometry of an attention instruction. */
    public record Attn(int batch, int rows, int l, int hd, int heads, int kv, int start, int window, int chunk,
                float alpha, float cap) {
        int groups() { return heads / kv; }

        long lo(int row) { return AttnOpts.lo(start, window, chunk, row); }

        int hi(int row) { return AttnOpts.hi(start, row, l); }
    }

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int LANES = FS.length();

    /** p[from + i] = p[from + i] · s for whole vectors covering [from, from + n) (lanes past n: scratch). */
    static void scaleVec(float[] p, int from, int n, float s) {
        for (int i = 0; i < n; i += LANES) FloatVector.fromArray(FS, p, from + i).mul(s).intoArray(p, from + i);
    }

    /**
     * p[from + i] = p[from + i] · s for i in [0, n) (whole vectors: lanes past n are scratch) and
     * returns {@link #rowMax} of the scaled values, in the same pass.
     */
    static float scaleMax(float[] p, int from, int n, float s) {
        if (n < LANES) {
            scaleVec(p, from, n, s);
            return rowMax(p, from, n);
        }
        FloatVector mv = FloatVector.fromArray(FS, p, from).mul(s);
        mv.intoArray(p, from);
        int i = LANES;
        for (; i + LANES <= n; i += LANES) {
            FloatVector v = FloatVector.fromArray(FS, p, from + i).mul(s);
            v.intoArray(p, from + i);
            mv = mv.max(v);
        }
        if (i < n) {                                   // the tail: scale it, then max in the last LANES scores (max is idempotent: the overlap is harmless)
            FloatVector.fromArray(FS, p, from + i).mul(s).intoArray(p, from + i);
            mv = mv.max(FloatVector.fromArray(FS, p, from + n - LANES));
        }
        float m = mv.lane(0);
        boolean nan = m != m;
        for (int k = 1; k < LANES; k++) { float l = mv.lane(k); nan |= l != l; m = Math.max(m, l); }
        return nan ? rowMax(p, from, n) : m;
    }

    /** p[from + i] = p[from + i] / z for whole vectors covering [from, from + n). */
    static void divVec(float[] p, int from, int n, float z) {
        for (int i = 0; i < n; i += LANES) FloatVector.fromArray(FS, p, from + i).div(z).intoArray(p, from + i);
    }

    /** p[from + i] = exp(p[from + i] − m) for whole vectors covering [from, from + n) (lanewise = scalar exp, bit for bit). */
    static void expMinusVec(float[] p, int from, int n, float m) {
        KinaMath.expMinus(p, from, m, p, from, (n + LANES - 1) / LANES * LANES);   // whole vectors: no scalar tail
    }

    /** Rows whose sequential folds {@link #zFold4} runs side by side. */
    static final int RB = 4;

    /**
     * The sums of RB rows at once: z[i] holds row i's sum so far; adds p[i·ps + j] for j = lo[i] + 1
     * … hi[i] in increasing j, each row's fold sequential as ever, the four chains side by side over
     * the keys all rows share. False (nothing done) when the ranges share no key past every lo.
     */
    static boolean zFold4(float[] p, int ps, int[] lo, int[] hi, float[] z) {
        int top = Math.max(Math.max(lo[0], lo[1]), Math.max(lo[2], lo[3]));
        int bot = Math.min(Math.min(hi[0], hi[1]), Math.min(hi[2], hi[3]));
        if (top > bot) return false;
        for (int i = 0; i < RB; i++) {                 // each row alone up to the shared start
            float zi = z[i];
            for (int j = i * ps + lo[i] + 1, jEnd = i * ps + top + 1; j < jEnd; j++) zi = zi + p[j];
            z[i] = zi;
        }
        float z0 = z[0], z1 = z[1], z2 = z[2], z3 = z[3];
        for (int j = top + 1, jEnd = bot + 1; j < jEnd; j++) {
            z0 = z0 + p[j];
            z1 = z1 + p[ps + j];
            z2 = z2 + p[2 * ps + j];
            z3 = z3 + p[3 * ps + j];
        }
        z[0] = z0; z[1] = z1; z[2] = z2; z[3] = z3;
        for (int i = 0; i < RB; i++) {                 // each row alone past the shared end
            float zi = z[i];
            for (int j = i * ps + bot + 1, jEnd = i * ps + hi[i] + 1; j < jEnd; j++) zi = zi + p[j];
            z[i] = zi;
        }
        return true;
    }

    // ---- indexing (indices checked by the caller) ---------------------------------------------------

    /** True when idx[0, n) all lie in [0, bound). */
    public static boolean inRange(long[] idx, int n, long bound) {
        for (int i = 0; i < n; i++) if (idx[i] < 0 || idx[i] >= bound) return false;
        return true;
    }

    /** As Kernels.gather: y[i, :] = values[idx[i], :] (rows of width dd). */
    public static void gather(Object values, long[] idx, int n, int dd, Object y) {
        for (int i = 0; i < n; i++) System.arraycopy(values, (int) idx[i] * dd, y, i * dd, dd);
    }

    /** As Kernels.takeAlongAxis: out[o, i] = values[o, idx[o, i], i]. */
    public static void takeAlongAxis(float[] v, long[] idx, float[] y, int outer, int c, int inner) {
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                int f = o * inner + i;
                y[f] = v[(int) ((o * (long) c + idx[f]) * inner + i)];
            }
    }

    /** As Kernels.scatterAdd: out = +0.0, then out[idx[i], d] += u[i, d] in row-major order of i, then d. */
    public static void scatterAdd(float[] u, long[] idx, int n, int dd, float[] y, int size) {
        Arrays.fill(y, 0, size, 0f);
        for (int i = 0; i < n; i++) {
            int row = (int) idx[i] * dd;
            for (int d = 0; d < dd; d++) y[row + d] += u[i * dd + d];
        }
    }

    /** As Kernels.scatterAlongAxis: out = +0.0, then out[o, idx[o, i], i] = u[o, i]. */
    public static void scatterAlongAxis(float[] u, long[] idx, float[] y, int outer, int c, int inner) {
        Arrays.fill(y, 0, outer * c * inner, 0f);
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                int f = o * inner + i;
                y[(int) ((o * (long) c + idx[f]) * inner + i)] = u[f];
            }
    }
}
