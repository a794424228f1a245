package kina.plan;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import kina.eval.KinaMath;
import kina.eval.Parallel;

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
final class PlanKernels {
    private PlanKernels() {}

    /** Elements per parallel chunk of an elementwise kernel. */
    static final int CHUNK = 16_384;

    /** Below this much work (elements × cost) a range stays on the calling thread: waking the pool costs more. */
    static final long PARALLEL_MIN = 1L << 18;

    /** Runs {@code body(from, to)} over [0, n) in chunks, in parallel when large. */
    static void range(int n, int costPerElement, RangeBody body) {
        int chunks = (n + CHUNK - 1) / CHUNK;
        if (chunks <= 1 || (long) n * costPerElement < PARALLEL_MIN) { body.run(0, n); return; }
        Parallel.forEach(chunks, (long) n * costPerElement, c -> body.run(c * CHUNK, Math.min(n, (c + 1) * CHUNK)));
    }

    /** A range of independent outputs. */
    interface RangeBody { void run(int from, int to); }

    // ---- elementwise, F32 -----------------------------------------------------------------------

    /** The unary elementwise instructions with a float-native loop. */
    enum Unary { NEG, EXP, LOG, SQRT, RSQRT, TANH, SIGMOID, RECIPROCAL, SILU, RELU }

    /** σ(v) = 1 / (1 + exp(−v)), as Kernels.sigmoid at F32. */
    static float sigmoid(float v) { return 1f / (1f + KinaMath.exp(-v)); }

    /** {@link #sigmoid(float)} lanewise: the same operations, so the same bits in every lane. */
    static FloatVector sigmoid(FloatVector v) {
        FloatVector one = FloatVector.broadcast(FS, 1f);
        return one.div(one.add(KinaMath.exp(v.neg())));
    }

    /** y[i] = f(x[i]) for i in [from, to); as Kernels.neg/exp/log/sqrt/rsqrt/tanh/sigmoid/reciprocal/silu/relu. */
    static void unary(Unary op, float[] x, float[] y, int from, int to) {
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
    enum Binary { ADD, SUB, MUL, DIV, MAXIMUM, SWIGLU }

    /** z[i] = a[i] op b[i] for i in [from, to); as Kernels.add/sub/mul/div/maximum/swiglu. */
    static void binary(Binary op, float[] a, float[] b, float[] z, int from, int to) {
        switch (op) {
            case ADD -> { for (int i = from; i < to; i++) z[i] = a[i] + b[i]; }
            case SUB -> { for (int i = from; i < to; i++) z[i] = a[i] - b[i]; }
            case MUL -> { for (int i = from; i < to; i++) z[i] = a[i] * b[i]; }
            case DIV -> { for (int i = from; i < to; i++) z[i] = a[i] / b[i]; }
            case MAXIMUM -> { for (int i = from; i < to; i++) z[i] = Math.max(a[i], b[i]); }
            case SWIGLU -> swigluRange(a, b, z, from, to);
        }
    }

    // The lanewise sigmoid loops live in small methods of their own: C2 then inlines the vector exp
    // into the loop; inside the big switch it did not, and every vector crossing the call was boxed.

    /** y[i] = σ(x[i]) for i in [from, to): lanes, then the scalar tail. */
    static void sigmoidRange(float[] x, float[] y, int from, int to) {
        int vEnd = from + (to - from) / LANES * LANES;
        for (int i = from; i < vEnd; i += LANES) sigmoid(FloatVector.fromArray(FS, x, i)).intoArray(y, i);
        for (int i = vEnd; i < to; i++) y[i] = sigmoid(x[i]);
    }

    /** y[i] = x[i] · σ(x[i]) for i in [from, to). */
    static void siluRange(float[] x, float[] y, int from, int to) {
        int vEnd = from + (to - from) / LANES * LANES;
        for (int i = from; i < vEnd; i += LANES) {
            FloatVector v = FloatVector.fromArray(FS, x, i);
            v.mul(sigmoid(v)).intoArray(y, i);
        }
        for (int i = vEnd; i < to; i++) { float v = x[i]; y[i] = v * sigmoid(v); }
    }

    /** z[i] = (g · σ(g)) · u[i], g = a[i], for i in [from, to). */
    static void swigluRange(float[] a, float[] b, float[] z, int from, int to) {
        int vEnd = from + (to - from) / LANES * LANES;
        for (int i = from; i < vEnd; i += LANES) {
            FloatVector g = FloatVector.fromArray(FS, a, i);
            g.mul(sigmoid(g)).mul(FloatVector.fromArray(FS, b, i)).intoArray(z, i);
        }
        for (int i = vEnd; i < to; i++) { float g = a[i]; z[i] = (g * sigmoid(g)) * b[i]; }
    }

    /** The F64 twin of {@link #binary} for add, sub, mul, div, maximum. */
    static void binary(Binary op, double[] a, double[] b, double[] z, int from, int to) {
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
    static int[] rowOffsets(long[] outDims, long[] stride) {
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
    static void strided(Object x, Object y, int[] off, int w, int s) {
        switch (x) {
            case float[] a -> {
                float[] b = (float[]) y;
                range(off.length, w, (f, t) -> {
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
    static void sum(float[] a, float[] y, int outer, int c, int inner) {
        if (c == 0) { Arrays.fill(y, 0, outer * inner, 0f); return; }
        if (inner == 1) {
            range(outer, c, (f, t) -> foldRows(a, y, f, t, c));
            return;
        }
        for (int o = 0; o < outer; o++) {
            int out = o * inner, in = o * c * inner;
            System.arraycopy(a, in, y, out, inner);
            for (int ci = 1; ci < c; ci++) {
                int src = in + ci * inner;
                for (int i = 0; i < inner; i++) y[out + i] += a[src + i];
            }
        }
    }

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

    /** The F64 twin of {@link #sum}. */
    static void sum(double[] a, double[] y, int outer, int c, int inner) {
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
    static void softmax(float[] a, float[] y, int outer, int c, int inner, boolean log) {
        if (c == 0) return;
        if (inner == 1) { range(outer, c * 4, (f, t) -> softmaxRows(a, y, f, t, c, log)); return; }
        range(outer * inner, c * 4, (f, t) -> {
            for (int oi = f; oi < t; oi++) {
                int o = oi / inner, i = oi % inner, base = o * c * inner + i;
                float m = a[base];
                for (int ci = 1; ci < c; ci++) m = Math.max(m, a[base + ci * inner]);
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

    /** Per-thread scratch rows of softmax's exps (log_softmax: never y, the last pass still reads x). */
    private static final ThreadLocal<float[]> EXP_ROWS = ThreadLocal.withInitial(() -> new float[0]);

    /** Rows that softmaxRows takes together: their sequential sums run as independent chains. */
    static final int ROW_BLOCK = 4;

    /**
     * {@link #softmax} of contiguous rows [from, to) of width c: the same steps; the max (see
     * {@link #rowMax}), the exps and the last pass in vector lanes, each row's sum a sequential
     * scalar fold ({@link #foldRows}, several rows side by side).
     */
    static void softmaxRows(float[] a, float[] y, int from, int to, int c, boolean log) {
        float[] e = EXP_ROWS.get();
        if (e.length < ROW_BLOCK * c) { e = new float[ROW_BLOCK * c]; EXP_ROWS.set(e); }
        float[] m = new float[ROW_BLOCK], sum = new float[ROW_BLOCK];
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
                if (log) logSoftmaxTail(a, base, c, m[r], (float) StrictMath.log(sum[r]), y);
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
    static void rmsnorm(float[] a, float[] w, float[] res, float[] y, int rows, int dd, float eps) {
        range(rows, dd * 4, (f, t) -> {
            float[] u = new float[ROW_BLOCK * dd], sq = new float[ROW_BLOCK * dd], ss = new float[ROW_BLOCK];
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
    static void rope(float[] a, float[] cs, float[] sn, float[] y, int batch, int t, int w, int heads, int hd, int half, int start) {
        System.arraycopy(a, 0, y, 0, batch * t * w);
        range(batch * t, w * 4, (f, to) -> {
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
    record Attn(int batch, int rows, int l, int hd, int heads, int kv, int start, int window, int chunk,
                float alpha, float cap) {
        int groups() { return heads / kv; }

        long lo(int row) {
            long last = (long) start + row;
            return window > 0 ? Math.max(0, last - window + 1) : chunk > 0 ? last / chunk * chunk : 0;
        }

        int hi(int row) { return (int) Math.min((long) start + row, l - 1L); }
    }

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int LANES = FS.length();

    /** Per-thread scratch of the attention kernels: [0] = p (l), [1] = kᵀ of one head (hd·l). */
    private static final ThreadLocal<float[][]> SCRATCH = ThreadLocal.withInitial(() -> new float[2][0]);

    private static float[][] scratch(int l, int hd) {
        float[][] sc = SCRATCH.get();
        if (sc[0].length < l) sc[0] = new float[l];
        if (sc[1].length < l * hd) sc[1] = new float[l * hd];
        return sc;
    }

    /** kt[e·l + j] = k[kBase + j·kStride + e]: one head's keys transposed, j in [0, l). */
    static void transposeKeys(float[] k, int kBase, int kStride, int l, int hd, float[] kt) {
        for (int j = 0; j < l; j++) {
            int kOff = kBase + j * kStride;
            for (int e = 0; e < hd; e++) kt[e * l + j] = k[kOff + e];
        }
    }

    /** p[j] = q·k_j for j in [lo, hi]: q[0]·k[0], then + q[e]·k[e] in increasing e, LANES keys side by side. */
    static void dotsT(float[] q, int qOff, float[] kt, int l, int hd, int lo, int hi, float[] p) {
        int j = lo;
        for (; j + 4 * LANES <= hi + 1; j += 4 * LANES) {  // four independent chains at once
            float q0 = q[qOff];
            FloatVector a0 = FloatVector.fromArray(FS, kt, j).mul(q0), a1 = FloatVector.fromArray(FS, kt, j + LANES).mul(q0),
                    a2 = FloatVector.fromArray(FS, kt, j + 2 * LANES).mul(q0), a3 = FloatVector.fromArray(FS, kt, j + 3 * LANES).mul(q0);
            for (int e = 1; e < hd; e++) {
                float qe = q[qOff + e];
                int r = e * l + j;
                a0 = a0.add(FloatVector.fromArray(FS, kt, r).mul(qe));
                a1 = a1.add(FloatVector.fromArray(FS, kt, r + LANES).mul(qe));
                a2 = a2.add(FloatVector.fromArray(FS, kt, r + 2 * LANES).mul(qe));
                a3 = a3.add(FloatVector.fromArray(FS, kt, r + 3 * LANES).mul(qe));
            }
            a0.intoArray(p, j);
            a1.intoArray(p, j + LANES);
            a2.intoArray(p, j + 2 * LANES);
            a3.intoArray(p, j + 3 * LANES);
        }
        for (; j + LANES <= hi + 1; j += LANES) {
            FloatVector acc = FloatVector.fromArray(FS, kt, j).mul(q[qOff]);
            for (int e = 1; e < hd; e++) acc = acc.add(FloatVector.fromArray(FS, kt, e * l + j).mul(q[qOff + e]));
            acc.intoArray(p, j);
        }
        for (; j <= hi; j++) {
            float dot = q[qOff] * kt[j];
            for (int e = 1; e < hd; e++) dot = dot + q[qOff + e] * kt[e * l + j];
            p[j] = dot;
        }
    }

    /**
     * As Kernels.probsRow, in float, with the keys transposed ({@code kt} from {@link #transposeKeys}): the dot
     * products of LANES consecutive keys run side by side in vector lanes, each still
     * q[0]·k[0], then + q[e]·k[e] for e = 1, 2, … (lanewise mul and add round as the scalar ones).
     */
    static float probsRowT(Attn g, float[] q, int qOff, float[] kt, int row, float sink, boolean hasSink, float[] p) {
        int l = g.l(), hi = g.hi(row), hd = g.hd();
        Arrays.fill(p, 0, l, 0f);
        int lo = (int) g.lo(row);
        if (hd > 0 && lo <= hi) dotsT(q, qOff, kt, l, hd, lo, hi, p);
        float m = hasSink ? sink : Float.NEGATIVE_INFINITY;
        boolean any = hasSink;
        float alpha = g.alpha(), cap = g.cap();
        if (cap > 0 || hd == 0) {
            for (int j = lo; j <= hi; j++) {
                float u = (hd > 0 ? p[j] : 0f) * alpha;
                float sc = cap > 0 ? cap * (float) StrictMath.tanh(u / cap) : u;
                p[j] = sc;
                m = any ? Math.max(m, sc) : sc;
                any = true;
            }
        } else if (lo <= hi) {                         // the same scores and max, in lanes (see rowMax)
            int j = lo;
            for (; j + LANES <= hi + 1; j += LANES) FloatVector.fromArray(FS, p, j).mul(alpha).intoArray(p, j);
            for (; j <= hi; j++) p[j] = p[j] * alpha;
            float pm = rowMax(p, lo, hi + 1 - lo);
            m = any ? Math.max(m, pm) : pm;
            any = true;
        }
        if (!any) return 0f;
        float es = hasSink ? KinaMath.exp(sink - m) : 0f, z = es;
        int j = lo;
        KinaMath.expMinus(p, lo, m, p, lo, hi + 1 - lo);
        boolean first = !hasSink;
        for (j = lo; j <= hi; j++) {                    // Z: a sequential fold in increasing j
            z = first ? p[j] : z + p[j];
            first = false;
        }
        for (j = lo; j + LANES <= hi + 1; j += LANES) FloatVector.fromArray(FS, p, j).div(z).intoArray(p, j);
        for (; j <= hi; j++) p[j] = p[j] / z;
        return hasSink ? es / z : 0f;
    }

    /**
     * As Kernels.attention: per (batch, head) in parallel, rows in order; out[e] = p[lo]·v[lo, e],
     * then + p[j]·v[j, e] for j = lo + 1 … hi (lanes over e).
     */
    static void attention(Attn g, float[] qa, float[] ka, float[] va, float[] sinks, float[] y) {
        int rows = g.rows(), l = g.l(), hd = g.hd(), h = g.heads(), kv = g.kv(), grp = g.groups();
        int vStride = kv * hd;
        Parallel.forEach(g.batch() * h, (long) g.batch() * h * rows * l * hd * 2, bh -> {
            int bt = bh / h, hh = bh % h;
            float[][] sc = scratch(l, hd);
            float[] p = sc[0], kt = sc[1];
            int kBase = bt * l * kv * hd + (hh / grp) * hd;
            transposeKeys(ka, kBase, vStride, l, hd, kt);
            for (int row = 0; row < rows; row++) {
                int qOff = (bt * rows + row) * h * hd + hh * hd;
                probsRowT(g, qa, qOff, kt, row, sinks == null ? 0f : sinks[hh], sinks != null, p);
                int lo = (int) g.lo(row), hi = g.hi(row);
                if (lo > hi) { Arrays.fill(y, qOff, qOff + hd, 0f); continue; }
                pvRow(p, lo, hi, va, kBase, vStride, hd, y, qOff);
            }
        });
    }

    /** y[qOff + e] = p[lo]·v[lo, e], then + p[j]·v[j, e] for j = lo + 1 … hi (lanes over e). */
    static void pvRow(float[] p, int lo, int hi, float[] va, int kBase, int vStride, int hd, float[] y, int qOff) {
        int e = 0;
        for (; e + 4 * LANES <= hd; e += 4 * LANES) {  // four independent chains at once
            int v0 = kBase + lo * vStride + e;
            float p0 = p[lo];
            FloatVector a0 = FloatVector.fromArray(FS, va, v0).mul(p0), a1 = FloatVector.fromArray(FS, va, v0 + LANES).mul(p0),
                    a2 = FloatVector.fromArray(FS, va, v0 + 2 * LANES).mul(p0), a3 = FloatVector.fromArray(FS, va, v0 + 3 * LANES).mul(p0);
            for (int j = lo + 1; j <= hi; j++) {
                int vj = kBase + j * vStride + e;
                float pj = p[j];
                a0 = a0.add(FloatVector.fromArray(FS, va, vj).mul(pj));
                a1 = a1.add(FloatVector.fromArray(FS, va, vj + LANES).mul(pj));
                a2 = a2.add(FloatVector.fromArray(FS, va, vj + 2 * LANES).mul(pj));
                a3 = a3.add(FloatVector.fromArray(FS, va, vj + 3 * LANES).mul(pj));
            }
            a0.intoArray(y, qOff + e);
            a1.intoArray(y, qOff + e + LANES);
            a2.intoArray(y, qOff + e + 2 * LANES);
            a3.intoArray(y, qOff + e + 3 * LANES);
        }
        for (; e + LANES <= hd; e += LANES) {
            FloatVector acc = FloatVector.fromArray(FS, va, kBase + lo * vStride + e).mul(p[lo]);
            for (int j = lo + 1; j <= hi; j++) acc = acc.add(FloatVector.fromArray(FS, va, kBase + j * vStride + e).mul(p[j]));
            acc.intoArray(y, qOff + e);
        }
        for (; e < hd; e++) {
            float acc = p[lo] * va[kBase + lo * vStride + e];
            for (int j = lo + 1; j <= hi; j++) acc = acc + p[j] * va[kBase + j * vStride + e];
            y[qOff + e] = acc;
        }
    }

    /** As Kernels.attentionProbs: σ++[H, rows, l] probabilities, or σ++[H, rows, 1] sink shares. */
    static void attentionProbs(Attn g, float[] qa, float[] ka, float[] sinks, boolean sinkColumn, float[] y) {
        int rows = g.rows(), l = g.l(), hd = g.hd(), h = g.heads(), kv = g.kv(), grp = g.groups();
        int width = sinkColumn ? 1 : l;
        Parallel.forEach(g.batch() * h, (long) g.batch() * h * rows * l * hd, bh -> {
            int bt = bh / h, hh = bh % h;
            float[][] sc = scratch(l, hd);
            float[] p = sc[0], kt = sc[1];
            int kBase = bt * l * kv * hd + (hh / grp) * hd;
            transposeKeys(ka, kBase, kv * hd, l, hd, kt);
            for (int row = 0; row < rows; row++) {
                int qOff = (bt * rows + row) * h * hd + hh * hd;
                float ps = probsRowT(g, qa, qOff, kt, row, sinks == null ? 0f : sinks[hh], sinks != null, p);
                int oOff = ((bt * h + hh) * rows + row) * width;
                if (sinkColumn) y[oOff] = ps;
                else System.arraycopy(p, 0, y, oOff, l);
            }
        });
    }

    // ---- indexing (indices checked by the caller) ---------------------------------------------------

    /** True when idx[0, n) all lie in [0, bound). */
    static boolean inRange(long[] idx, int n, long bound) {
        for (int i = 0; i < n; i++) if (idx[i] < 0 || idx[i] >= bound) return false;
        return true;
    }

    /** As Kernels.gather: y[i, :] = values[idx[i], :] (rows of width dd). */
    static void gather(Object values, long[] idx, int n, int dd, Object y) {
        for (int i = 0; i < n; i++) System.arraycopy(values, (int) idx[i] * dd, y, i * dd, dd);
    }

    /** As Kernels.takeAlongAxis: out[o, i] = values[o, idx[o, i], i]. */
    static void takeAlongAxis(float[] v, long[] idx, float[] y, int outer, int c, int inner) {
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                int f = o * inner + i;
                y[f] = v[(int) ((o * (long) c + idx[f]) * inner + i)];
            }
    }

    /** As Kernels.scatterAdd: out = +0.0, then out[idx[i], d] += u[i, d] in row-major order of i, then d. */
    static void scatterAdd(float[] u, long[] idx, int n, int dd, float[] y, int size) {
        Arrays.fill(y, 0, size, 0f);
        for (int i = 0; i < n; i++) {
            int row = (int) idx[i] * dd;
            for (int d = 0; d < dd; d++) y[row + d] += u[i * dd + d];
        }
    }

    /** As Kernels.scatterAlongAxis: out = +0.0, then out[o, idx[o, i], i] = u[o, i]. */
    static void scatterAlongAxis(float[] u, long[] idx, float[] y, int outer, int c, int inner) {
        Arrays.fill(y, 0, outer * c * inner, 0f);
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                int f = o * inner + i;
                y[(int) ((o * (long) c + idx[f]) * inner + i)] = u[f];
            }
    }
}
