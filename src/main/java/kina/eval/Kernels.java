package kina.eval;

import java.util.Arrays;
import kina.ir.DType;
import kina.ir.Payload;
import kina.ir.Perm;
import kina.ir.Placement;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * The host kernels: one static method per instruction, over {@link Tensor}s, computing the output
 * type from the inputs. The interpreter and the AD oracle both call these, so each result's bits
 * are a pure function of the operands' bits (DESIGN §4.1).
 *
 * <p>Bit discipline. {@code r(x)} is {@code (double) (float) x} for F32 and {@code x} for F64:
 * every floating operation's result is rounded with r, so F32 arithmetic is IEEE single precision
 * bit for bit. Transcendentals are {@link StrictMath} then r. No fused multiply-add anywhere: a
 * product is rounded, then added, and the sum rounded. Reductions run sequentially in increasing
 * index, starting from the first element (an empty reduction is +0.0). Each kernel states its
 * order in one comment.
 *
 * <p>Kernels assume well-typed operands (kina.check) but still check what would otherwise index
 * outside a buffer: shapes of operands and every index value read from an I64 tensor. Violations
 * throw an unlocated {@link EvalError}; nothing throws ArrayIndexOutOfBoundsException.
 *
 * <p>Discrete tensors (I64, I1) run through the data-movement kernels (reshape, transpose,
 * broadcast, gather, take_along_axis, the scatters) and through neg/add/sub/mul/sum/matmul with
 * wrapping long arithmetic; exp, log, div, softmax and log_softmax refuse them by name.
 */
public final class Kernels {
    private Kernels() {}

    // ---- rounding and checks ------------------------------------------------------------------

    /** r(x): x rounded to float for F32, x itself for every other dtype. */
    public static double round(DType d, double x) { return d == DType.F32 ? (double) (float) x : x; }

    /**
     * Refuses a type the host does not run: {@code <op>: the host interpreter does not run @device
     * values}, or {@code <op>: the host interpreter does not run BF16} (also F16, F8E4M3, F8E5M2).
     */
    public static void requireHost(String op, TensorType t) {
        if (t.placement() == Placement.DEVICE)
            throw new EvalError(op + ": the host interpreter does not run @device values");
        if (!t.dtype().hostRunnable())
            throw new EvalError(op + ": the host interpreter does not run " + t.dtype());
    }

    private static void check(boolean ok, String message) {
        if (!ok) throw new EvalError(message);
    }

    private static int volume(String op, Shape s) {
        long v;
        try {
            v = s.vol();
        } catch (ArithmeticException e) {
            throw new EvalError(op + ": shape " + s + " is too large for the host");
        }
        check(v <= Integer.MAX_VALUE - 8, op + ": shape " + s + " is too large for the host");
        return (int) v;
    }

    private static void requireFloating(String op, Tensor x) {
        check(x.isFloating(), op + ": the host runs " + op + " on F32 and F64, not " + x.dtype());
    }

    private static void requireIndices(String op, Tensor idx) {
        check(idx.dtype() == DType.I64, op + ": indices must be I64, not " + idx.dtype());
    }

    private static void requireAxis(String op, int axis, int rank) {
        check(axis >= 0 && axis < rank, op + ": axis " + axis + " out of range for rank " + rank);
    }

    private static void sameType(String op, Tensor a, Tensor b) {
        check(a.type().equals(b.type()), op + ": operand types differ: " + a.type() + " and " + b.type());
    }

    private static Tensor make(TensorType t, double[] floats) { return Tensor.ofFloats(t, floats); }

    private static Tensor make(TensorType t, long[] ints) { return Tensor.ofInts(t, ints); }

    /** Product of dims [from, to). */
    private static int prod(Shape s, int from, int to) {
        long p = 1;
        for (int i = from; i < to; i++) p *= s.dim(i);
        return (int) p;
    }

    /** The row-major multi-index of flat position {@code flat} in {@code s}, as {@code [i, j]}. */
    static String position(Shape s, long flat) {
        long[] idx = new long[s.rank()];
        for (int i = s.rank() - 1; i >= 0; i--) {
            long d = s.dim(i);
            idx[i] = d == 0 ? 0 : flat % d;
            flat = d == 0 ? 0 : flat / d;
        }
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < idx.length; i++) { if (i > 0) b.append(", "); b.append(idx[i]); }
        return b.append(']').toString();
    }

    /**
     * Reads index {@code flat} of {@code idx} and checks {@code 0 ≤ v < bound}; otherwise
     * {@code <what> index out of bounds: indices[i, j] = v, not in [0, bound)}.
     */
    private static int index(String what, Tensor idx, int flat, long bound) {
        long v = idx.ints()[flat];
        if (v < 0 || v >= bound)
            throw new EvalError(what + " index out of bounds: indices" + position(idx.shape(), flat)
                    + " = " + v + ", not in [0, " + bound + ")");
        return (int) v;
    }

    /** Checks every index first, so a trap happens before any output is written. */
    private static void checkAll(String what, Tensor idx, long bound) {
        for (int i = 0; i < idx.size(); i++) index(what, idx, i, bound);
    }

    // ---- constants ----------------------------------------------------------------------------

    /** {@code fill(T, v)}: every element r(v) (discrete: v must be an integer; I1: 0 or 1). */
    public static Tensor fill(TensorType t, double v) {
        requireHost("fill", t);
        int n = volume("fill", t.shape());
        if (t.dtype().floating()) {
            double[] d = new double[n];
            Arrays.fill(d, round(t.dtype(), v));
            return make(t, d);
        }
        long[] l = new long[n];
        Arrays.fill(l, discrete("fill", t.dtype(), v));
        return make(t, l);
    }

    /** A literal: the payload row-major, each element r(v); the payload size must be the volume. */
    public static Tensor literal(TensorType t, Payload p) {
        requireHost("literal", t);
        int n = volume("literal", t.shape());
        check(p.size() == n, "literal: payload of " + p.size() + " values for " + t + " (volume " + n + ")");
        if (t.dtype().floating()) {
            double[] d = new double[n];
            for (int i = 0; i < n; i++) d[i] = round(t.dtype(), p.at(i));
            return make(t, d);
        }
        long[] l = new long[n];
        for (int i = 0; i < n; i++) l[i] = discrete("literal", t.dtype(), p.at(i));
        return make(t, l);
    }

    private static long discrete(String op, DType d, double v) {
        check(v == Math.rint(v) && Math.abs(v) <= 0x1p53, op + ": " + v + " is not an integer for " + d);
        check(d != DType.I1 || v == 0 || v == 1, op + ": " + v + " is not 0 or 1 for I1");
        return (long) v;
    }

    // ---- unary --------------------------------------------------------------------------------

    /** {@code -x}: y_i = −x_i (exact, sign flipped; discrete: wrapping negation). */
    public static Tensor neg(Tensor x) {
        if (!x.isFloating()) {
            long[] a = x.ints(), y = new long[a.length];
            for (int i = 0; i < a.length; i++) y[i] = -a[i];
            return make(x.type(), y);
        }
        double[] a = x.floats(), y = new double[a.length];
        for (int i = 0; i < a.length; i++) y[i] = -a[i];
        return make(x.type(), y);
    }

    /** {@code x.exp()}: y_i = r(StrictMath.exp(x_i)). Floating only. */
    public static Tensor exp(Tensor x) {
        requireFloating("exp", x);
        DType d = x.dtype();
        double[] a = x.floats(), y = new double[a.length];
        for (int i = 0; i < a.length; i++) y[i] = round(d, StrictMath.exp(a[i]));
        return make(x.type(), y);
    }

    /** {@code x.log()}: y_i = r(StrictMath.log(x_i)). Floating only. */
    public static Tensor log(Tensor x) {
        requireFloating("log", x);
        DType d = x.dtype();
        double[] a = x.floats(), y = new double[a.length];
        for (int i = 0; i < a.length; i++) y[i] = round(d, StrictMath.log(a[i]));
        return make(x.type(), y);
    }

    // ---- binary (same type) -------------------------------------------------------------------

    /** {@code a + b}: y_i = r(a_i + b_i). */
    public static Tensor add(Tensor a, Tensor b) { return binary("add", a, b); }

    /** {@code a - b}: y_i = r(a_i − b_i). */
    public static Tensor sub(Tensor a, Tensor b) { return binary("sub", a, b); }

    /** {@code a * b}: y_i = r(a_i · b_i). */
    public static Tensor mul(Tensor a, Tensor b) { return binary("mul", a, b); }

    /** {@code a / b}: y_i = r(a_i / b_i). Floating only. */
    public static Tensor div(Tensor a, Tensor b) { return binary("div", a, b); }

    /** One elementwise op on operands of one type; each element one double op, then r. */
    private static Tensor binary(String op, Tensor a, Tensor b) {
        sameType(op, a, b);
        if (!a.isFloating()) {
            check(!op.equals("div"), "div: the host runs div on F32 and F64, not " + a.dtype());
            long[] x = a.ints(), y = b.ints(), z = new long[x.length];
            switch (op) {
                case "add" -> { for (int i = 0; i < x.length; i++) z[i] = x[i] + y[i]; }
                case "sub" -> { for (int i = 0; i < x.length; i++) z[i] = x[i] - y[i]; }
                default -> { for (int i = 0; i < x.length; i++) z[i] = x[i] * y[i]; }
            }
            return make(a.type(), z);
        }
        DType d = a.dtype();
        double[] x = a.floats(), y = b.floats(), z = new double[x.length];
        switch (op) {
            case "add" -> { for (int i = 0; i < x.length; i++) z[i] = round(d, x[i] + y[i]); }
            case "sub" -> { for (int i = 0; i < x.length; i++) z[i] = round(d, x[i] - y[i]); }
            case "mul" -> { for (int i = 0; i < x.length; i++) z[i] = round(d, x[i] * y[i]); }
            default -> { for (int i = 0; i < x.length; i++) z[i] = round(d, x[i] / y[i]); }
        }
        return make(a.type(), z);
    }

    // ---- contraction --------------------------------------------------------------------------

    /**
     * {@code a @ b}: σ++[M,K] @ σ++[K,N] → σ++[M,N], rank ≥ 2, equal batch dims σ (no broadcast).
     * Order: out[bt,i,j] = r(a[bt,i,0]·b[bt,0,j]), then for p = 1..K−1 in increasing p,
     * acc = r(acc + r(a[bt,i,p]·b[bt,p,j])); K = 0 gives +0.0. Loops bt-i-p-j: a row of outputs
     * is accumulated while walking p, so each output still adds its products in increasing p.
     */
    public static Tensor matmul(Tensor a, Tensor b) {
        Shape sa = a.shape(), sb = b.shape();
        int r = sa.rank();
        check(r >= 2 && sb.rank() == r, "matmul: ranks " + r + " and " + sb.rank() + " (need equal ranks ≥ 2)");
        check(a.dtype() == b.dtype(), "matmul: dtypes differ: " + a.dtype() + " and " + b.dtype());
        check(sa.prefix(r - 2).equals(sb.prefix(r - 2)) && sa.dim(r - 1) == sb.dim(r - 2),
                "matmul: shapes " + sa + " and " + sb + " do not contract");
        int batch = prod(sa, 0, r - 2), m = (int) sa.dim(r - 2), k = (int) sa.dim(r - 1), n = (int) sb.dim(r - 1);
        TensorType out = a.type().withShape(sa.prefix(r - 2).concat(m, n));
        int size = volume("matmul", out.shape());
        if (!a.isFloating()) {
            long[] x = a.ints(), y = b.ints(), z = new long[size];
            for (int bt = 0; bt < batch; bt++)
                for (int i = 0; i < m; i++) {
                    int aRow = (bt * m + i) * k, zRow = (bt * m + i) * n;
                    for (int p = 0; p < k; p++) {
                        long aip = x[aRow + p];
                        int bRow = (bt * k + p) * n;
                        for (int j = 0; j < n; j++) z[zRow + j] += aip * y[bRow + j];
                    }
                }
            return make(out, z);
        }
        double[] z = a.dtype() == DType.F32 ? Matmul.f32(a.floats(), b.floats(), batch, m, k, n)
                : Matmul.f64(a.floats(), b.floats(), batch, m, k, n);
        return make(out, z);
    }

    /**
     * The scalar twin of the floating matmul: the specification {@link Matmul} is tested against.
     * out[.., i, j] = r(…r(r(a_i0·b_0j) + r(a_i1·b_1j))…) in increasing p; +0.0 when K = 0.
     */
    static double[] matmulScalar(DType d, double[] x, double[] y, int batch, int m, int k, int n) {
        double[] z = new double[batch * m * n];
        for (int bt = 0; bt < batch; bt++)
            for (int i = 0; i < m; i++) {
                int aRow = (bt * m + i) * k, zRow = (bt * m + i) * n;
                for (int p = 0; p < k; p++) {
                    double aip = x[aRow + p];
                    int bRow = (bt * k + p) * n;
                    if (p == 0) {
                        for (int j = 0; j < n; j++) z[zRow + j] = round(d, aip * y[bRow + j]);
                    } else {
                        for (int j = 0; j < n; j++) z[zRow + j] = round(d, z[zRow + j] + round(d, aip * y[bRow + j]));
                    }
                }
            }
        return z;
    }

    // ---- shape --------------------------------------------------------------------------------

    /** {@code x.reshape(to)}: the same row-major elements (a copy), volumes must agree. */
    public static Tensor reshape(Tensor x, Shape to) {
        TensorType out = x.type().withShape(to);
        check(volume("reshape", to) == x.size(), "reshape: " + x.shape() + " to " + to + " changes the volume");
        return x.isFloating() ? make(out, x.floats().clone()) : make(out, x.ints().clone());
    }

    /** {@code x.transpose(perm)}: output axis i is input axis perm[i]; out[o] = x[o permuted back]. */
    public static Tensor transpose(Tensor x, Perm perm) {
        Shape s = x.shape();
        check(perm.rank() == s.rank() && perm.valid(), "transpose: " + perm + " is not a permutation of rank " + s.rank());
        long[] inStride = s.strides(), src = new long[s.rank()];
        for (int i = 0; i < s.rank(); i++) src[i] = inStride[perm.at(i)];
        return strided("transpose", x, x.type().withShape(perm.apply(s)), src);
    }

    /** {@code x.broadcast(to)}: same rank, each source dim 1 (expanded) or equal to the target dim. */
    public static Tensor broadcast(Tensor x, Shape to) {
        Shape s = x.shape();
        check(to.rank() == s.rank(), "broadcast: " + s + " to " + to + " changes the rank");
        long[] inStride = s.strides(), src = new long[s.rank()];
        for (int i = 0; i < s.rank(); i++) {
            check(s.dim(i) == 1 || s.dim(i) == to.dim(i), "broadcast: " + s + " does not expand to " + to);
            src[i] = s.dim(i) == 1 ? 0 : inStride[i];
        }
        return strided("broadcast", x, x.type().withShape(to), src);
    }

    /** out[o] = x[Σ o_i · srcStride_i], walking the output row-major with an odometer. */
    private static Tensor strided(String op, Tensor x, TensorType out, long[] srcStride) {
        int n = volume(op, out.shape());
        int r = out.rank();
        long[] dims = out.shape().dims();
        int[] src = new int[n];
        long[] o = new long[r];
        long at = 0;
        for (int f = 0; f < n; f++) {
            src[f] = (int) at;
            for (int i = r - 1; i >= 0; i--) {
                if (++o[i] < dims[i]) { at += srcStride[i]; break; }
                at -= (o[i] - 1) * srcStride[i];
                o[i] = 0;
            }
        }
        return select(x, out, src);
    }

    /** out[f] = x[src[f]] (any dtype); src entries are in range by construction. */
    private static Tensor select(Tensor x, TensorType out, int[] src) {
        if (x.isFloating()) {
            double[] a = x.floats(), y = new double[src.length];
            for (int f = 0; f < src.length; f++) y[f] = a[src[f]];
            return make(out, y);
        }
        long[] a = x.ints(), y = new long[src.length];
        for (int f = 0; f < src.length; f++) y[f] = a[src[f]];
        return make(out, y);
    }

    // ---- reduction ----------------------------------------------------------------------------

    /**
     * {@code x.sum(axis, keepDims)}: out[a, b] = sequential sum over c = 0..C−1 of x[a, c, b],
     * acc = x[a, 0, b], then acc = r(acc + x[a, c, b]) in increasing c; C = 0 gives +0.0.
     * The axis is kept as size 1 when keepDims, else dropped.
     */
    public static Tensor sum(Tensor x, int axis, boolean keepDims) {
        Shape s = x.shape();
        requireAxis("sum", axis, s.rank());
        int outer = prod(s, 0, axis), c = (int) s.dim(axis), inner = prod(s, axis + 1, s.rank());
        TensorType out = x.type().withShape(keepDims ? s.with(axis, 1) : s.drop(axis));
        if (!x.isFloating()) {
            long[] a = x.ints(), y = new long[outer * inner];
            for (int o = 0; o < outer; o++)
                for (int ci = 0; ci < c; ci++)
                    for (int i = 0; i < inner; i++) y[o * inner + i] += a[(o * c + ci) * inner + i];
            return make(out, y);
        }
        DType d = x.dtype();
        double[] a = x.floats(), y = new double[outer * inner];
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                if (c == 0) continue;                        // +0.0
                double acc = a[o * c * inner + i];
                for (int ci = 1; ci < c; ci++) acc = round(d, acc + a[(o * c + ci) * inner + i]);
                y[o * inner + i] = acc;
            }
        return make(out, y);
    }

    // ---- fused row-wise -----------------------------------------------------------------------

    /**
     * {@code x.softmax(axis)}, per row along the axis: m = max (sequential Math.max from the first
     * element: NaN propagates, +0.0 above −0.0); e_i = r(exp(r(x_i − m))); s = e_0, then
     * s = r(s + e_i) in increasing i; y_i = r(e_i / s).
     */
    public static Tensor softmax(Tensor x, int axis) {
        requireFloating("softmax", x);
        Shape s = x.shape();
        requireAxis("softmax", axis, s.rank());
        int outer = prod(s, 0, axis), c = (int) s.dim(axis), inner = prod(s, axis + 1, s.rank());
        DType d = x.dtype();
        double[] a = x.floats(), y = new double[a.length];
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                if (c == 0) continue;
                int base = o * c * inner + i;
                double m = a[base];
                for (int ci = 1; ci < c; ci++) m = Math.max(m, a[base + ci * inner]);
                double sum = 0;
                for (int ci = 0; ci < c; ci++) {
                    double e = round(d, StrictMath.exp(round(d, a[base + ci * inner] - m)));
                    y[base + ci * inner] = e;
                    sum = ci == 0 ? e : round(d, sum + e);
                }
                for (int ci = 0; ci < c; ci++) y[base + ci * inner] = round(d, y[base + ci * inner] / sum);
            }
        return make(x.type(), y);
    }

    /**
     * {@code x.log_softmax(axis)}, per row along the axis: m = max (as softmax); s = sequential sum
     * (from the first) of r(exp(r(x_i − m))); l = r(log(s)); y_i = r(r(x_i − m) − l).
     */
    public static Tensor logSoftmax(Tensor x, int axis) {
        requireFloating("log_softmax", x);
        Shape s = x.shape();
        requireAxis("log_softmax", axis, s.rank());
        int outer = prod(s, 0, axis), c = (int) s.dim(axis), inner = prod(s, axis + 1, s.rank());
        DType d = x.dtype();
        double[] a = x.floats(), y = new double[a.length];
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                if (c == 0) continue;
                int base = o * c * inner + i;
                double m = a[base];
                for (int ci = 1; ci < c; ci++) m = Math.max(m, a[base + ci * inner]);
                double sum = 0;
                for (int ci = 0; ci < c; ci++) {
                    double e = round(d, StrictMath.exp(round(d, a[base + ci * inner] - m)));
                    sum = ci == 0 ? e : round(d, sum + e);
                }
                double l = round(d, StrictMath.log(sum));
                for (int ci = 0; ci < c; ci++) y[base + ci * inner] = round(d, round(d, a[base + ci * inner] - m) - l);
            }
        return make(x.type(), y);
    }

    // ---- indexing -----------------------------------------------------------------------------

    /**
     * {@code values.take_along_axis(indices, axis)}: values α++[C]++β, I64 indices α++β (the axis
     * dropped) → α++β; out[a ++ b] = values[a ++ [indices[a ++ b]] ++ b]. Every index is checked
     * against [0, C) first: {@code take_along_axis index out of bounds: indices[…] = v, not in [0, C)}.
     * A pure copy (no arithmetic).
     */
    public static Tensor takeAlongAxis(Tensor values, Tensor indices, int axis) {
        Shape s = values.shape();
        requireAxis("take_along_axis", axis, s.rank());
        requireIndices("take_along_axis", indices);
        check(indices.shape().equals(s.drop(axis)),
                "take_along_axis: indices " + indices.shape() + " must be values " + s + " without axis " + axis);
        int outer = prod(s, 0, axis), c = (int) s.dim(axis), inner = prod(s, axis + 1, s.rank());
        checkAll("take_along_axis", indices, c);
        int[] src = new int[outer * inner];
        long[] idx = indices.ints();
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                int f = o * inner + i;
                src[f] = (int) ((o * (long) c + idx[f]) * inner + i);
            }
        return select(values, values.type().withShape(s.drop(axis)), src);
    }

    /**
     * {@code values.gather(indices)}: values [V, D], I64 indices σ → σ++[D];
     * y[i ++ [d]] = values[indices[i], d]. Every index is checked against [0, V) first:
     * {@code gather index out of bounds: indices[…] = v, not in [0, V)}. A pure copy.
     */
    public static Tensor gather(Tensor values, Tensor indices) {
        Shape s = values.shape();
        check(s.rank() == 2, "gather: values must be rank 2 [V, D], not " + s);
        requireIndices("gather", indices);
        long v = s.dim(0);
        int dd = (int) s.dim(1);
        checkAll("gather", indices, v);
        TensorType out = values.type().withShape(indices.shape().concat(dd));
        int n = volume("gather", out.shape());
        int[] src = new int[n];
        long[] idx = indices.ints();
        for (int i = 0; i < idx.length; i++)
            for (int d = 0; d < dd; d++) src[i * dd + d] = (int) idx[i] * dd + d;
        return select(values, out, src);
    }

    // ---- IR-internal adjoints -----------------------------------------------------------------

    /**
     * ScatterAdd(updates σ++[D], I64 indices σ, dest [V, D]) → dest. Order: out starts +0.0
     * everywhere; for each position i of σ in row-major order, for d in increasing order,
     * out[idx[i], d] = r(out[idx[i], d] + updates[i ++ [d]]). Duplicates accumulate in that order;
     * unselected rows stay +0.0. Every index is checked against [0, V) first:
     * {@code scatter_add index out of bounds: indices[…] = v, not in [0, V)}.
     */
    public static Tensor scatterAdd(Tensor updates, Tensor indices, TensorType dest) {
        requireHost("scatter_add", dest);
        requireIndices("scatter_add", indices);
        Shape ds = dest.shape();
        check(ds.rank() == 2, "scatter_add: dest must be rank 2 [V, D], not " + ds);
        check(updates.dtype() == dest.dtype(), "scatter_add: updates " + updates.dtype() + " for dest " + dest.dtype());
        int dd = (int) ds.dim(1);
        check(updates.shape().equals(indices.shape().concat(dd)),
                "scatter_add: updates " + updates.shape() + " must be indices " + indices.shape() + " ++ [" + dd + "]");
        checkAll("scatter_add", indices, ds.dim(0));
        int n = volume("scatter_add", ds);
        long[] idx = indices.ints();
        if (!updates.isFloating()) {
            long[] u = updates.ints(), y = new long[n];
            for (int i = 0; i < idx.length; i++)
                for (int d = 0; d < dd; d++) y[(int) idx[i] * dd + d] += u[i * dd + d];
            return make(dest, y);
        }
        DType dt = dest.dtype();
        double[] u = updates.floats(), y = new double[n];
        for (int i = 0; i < idx.length; i++) {
            int row = (int) idx[i] * dd;
            for (int d = 0; d < dd; d++) y[row + d] = round(dt, y[row + d] + u[i * dd + d]);
        }
        return make(dest, y);
    }

    /**
     * ScatterAlongAxis(axis, updates α++β, I64 indices α++β, dest α++[C]++β) → dest, a select:
     * out[a ++ [c] ++ b] = updates[a ++ b] if indices[a ++ b] == c, else +0.0 (no arithmetic).
     * Every index is checked against [0, C) first:
     * {@code scatter_along_axis index out of bounds: indices[…] = v, not in [0, C)}.
     */
    public static Tensor scatterAlongAxis(int axis, Tensor updates, Tensor indices, TensorType dest) {
        requireHost("scatter_along_axis", dest);
        requireIndices("scatter_along_axis", indices);
        Shape ds = dest.shape();
        requireAxis("scatter_along_axis", axis, ds.rank());
        check(updates.dtype() == dest.dtype(),
                "scatter_along_axis: updates " + updates.dtype() + " for dest " + dest.dtype());
        check(updates.shape().equals(ds.drop(axis)) && indices.shape().equals(ds.drop(axis)),
                "scatter_along_axis: updates " + updates.shape() + " and indices " + indices.shape()
                        + " must be dest " + ds + " without axis " + axis);
        int outer = prod(ds, 0, axis), c = (int) ds.dim(axis), inner = prod(ds, axis + 1, ds.rank());
        checkAll("scatter_along_axis", indices, c);
        int n = volume("scatter_along_axis", ds);
        long[] idx = indices.ints();
        if (!updates.isFloating()) {
            long[] u = updates.ints(), y = new long[n];
            for (int o = 0; o < outer; o++)
                for (int i = 0; i < inner; i++) {
                    int f = o * inner + i;
                    y[(int) ((o * (long) c + idx[f]) * inner + i)] = u[f];
                }
            return make(dest, y);
        }
        double[] u = updates.floats(), y = new double[n];
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                int f = o * inner + i;
                y[(int) ((o * (long) c + idx[f]) * inner + i)] = u[f];
            }
        return make(dest, y);
    }
}
