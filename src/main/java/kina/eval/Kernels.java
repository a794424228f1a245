package kina.eval;

import kina.kernels.KinaMath;
import kina.kernels.Matmul;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Instr.*;
import kina.ir.Let;
import kina.ir.Payload;
import kina.ir.Perm;
import kina.ir.Placement;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Var;

/**
 * The host kernels: one static method per instruction, over {@link Tensor}s, computing the output
 * type from the inputs. The interpreter and the AD oracle both call these, so each result's bits
 * are a pure function of the operands' bits (docs/language.md, "Bits").
 *
 * <p>Bit discipline. {@code r(x)} is {@code (double) (float) x} for F32 and {@code x} for F64:
 * every floating operation's result is rounded with r, so F32 arithmetic is IEEE single precision
 * bit for bit. Transcendentals are {@link StrictMath} then r, except exp at F32, which is
 * {@link KinaMath#exp(float)} (the plan's vector kernels compute the same bits). Matmul and
 * attention's products (its scores and output, {@link #attentionProduct}) use fused multiply-add
 * (one rounding per product-and-add, as {@link Matmul}: exact in every JIT tier, faster and more
 * accurate); everywhere else a product is rounded, then added, and the sum rounded. The
 * compiled plan makes the same choice per kernel. Reductions run sequentially in increasing
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

    // ---- the dispatch ---------------------------------------------------------------------------

    /**
     * The reference kernel of {@code ins}, its operands read through {@code x}: one case per
     * instruction, each a call to its kernel below. The interpreter, the oracle (through
     * {@link Eager}) and the plan's generic kernel all run instructions through here. An Input has
     * no kernel: its payload is supplied by name (the interpreter and the plan bind it).
     */
    public static Tensor apply(Instr ins, Function<Var, Tensor> x) {
        return switch (ins) {
            case Input(var t) -> throw new IllegalArgumentException("input " + t + " is supplied by name, not computed");
            case Literal(var t, var payload) -> literal(t, payload);
            case Fill(var t, var v) -> fill(t, v);
            case Neg(var a) -> neg(x.apply(a));
            case Exp(var a) -> exp(x.apply(a));
            case Log(var a) -> log(x.apply(a));
            case Sqrt(var a) -> sqrt(x.apply(a));
            case Rsqrt(var a) -> rsqrt(x.apply(a));
            case Tanh(var a) -> tanh(x.apply(a));
            case Sigmoid(var a) -> sigmoid(x.apply(a));
            case Reciprocal(var a) -> reciprocal(x.apply(a));
            case Silu(var a) -> silu(x.apply(a));
            case Gelu(var a) -> gelu(x.apply(a));
            case Relu(var a) -> relu(x.apply(a));
            case Softcap(var a, var cap) -> softcap(x.apply(a), cap);
            case ArgMax(var a, var axis) -> argmax(x.apply(a), axis);
            case Clamp(var a, var lo, var hi) -> clamp(x.apply(a), lo, hi);
            case Requant(var a, var shift) -> requant(x.apply(a), shift);
            case Add(var a, var b) -> add(x.apply(a), x.apply(b));
            case Sub(var a, var b) -> sub(x.apply(a), x.apply(b));
            case Mul(var a, var b) -> mul(x.apply(a), x.apply(b));
            case Div(var a, var b) -> div(x.apply(a), x.apply(b));
            case Maximum(var a, var b) -> maximum(x.apply(a), x.apply(b));
            case Greater(var a, var b) -> greater(x.apply(a), x.apply(b));
            case Select(var m, var a, var b) -> select(x.apply(m), x.apply(a), x.apply(b));
            case Swiglu(var g, var u) -> swiglu(x.apply(g), x.apply(u));
            case Instr.Matmul(var a, var b) -> matmul(x.apply(a), x.apply(b));
            case Reshape(var a, var to) -> reshape(x.apply(a), to);
            case Transpose(var a, var perm) -> transpose(x.apply(a), perm);
            case Broadcast(var a, var to) -> broadcast(x.apply(a), to);
            case Sum(var a, var axis, var keep) -> sum(x.apply(a), axis, keep);
            case LogSoftmax(var a, var axis) -> logSoftmax(x.apply(a), axis);
            case Softmax(var a, var axis) -> softmax(x.apply(a), axis);
            case RmsNorm(var a, var w, var r, var eps) -> rmsnorm(x.apply(a), opt(x, w), opt(x, r), eps);
            case LayerNorm(var a, var w, var b, var eps) -> layernorm(x.apply(a), opt(x, w), opt(x, b), eps);
            case L2Norm(var a, var eps) -> l2norm(x.apply(a), eps);
            case Rope(var a, var c, var s, var heads, var rotary, var start) ->
                    rope(x.apply(a), x.apply(c), x.apply(s), heads, rotary, start);
            case Attention(var q, var k, var v, var sinks, var o) -> attention(x.apply(q), x.apply(k), x.apply(v), opt(x, sinks), o);
            case AttentionLse(var q, var k, var sinks, var o) -> attentionLse(x.apply(q), x.apply(k), opt(x, sinks), o);
            case AttentionExp(var q, var k, var lse, var o) -> attentionExp(x.apply(q), x.apply(k), x.apply(lse), o);
            case AttentionGrad(var q, var k, var v, var g, var lse, var d, var o, var wrt) ->
                    attentionGrads(x.apply(q), x.apply(k), x.apply(v), x.apply(g), x.apply(lse), x.apply(d), o,
                            wrt == AttentionGrad.Wrt.Q, wrt == AttentionGrad.Wrt.K, wrt == AttentionGrad.Wrt.V).getFirst();
            case AttentionProduct(var a, var b, var o, var form) -> attentionProduct(x.apply(a), x.apply(b), o, form);
            case TakeAlongAxis(var v, var i, var axis) -> takeAlongAxis(x.apply(v), x.apply(i), axis);
            case Gather(var v, var i) -> gather(x.apply(v), x.apply(i));
            case SetRows(var t, var i, var rows) -> setRows(x.apply(t), x.apply(i), x.apply(rows));
            case ScatterAdd(var u, var i, var dest) -> scatterAdd(x.apply(u), x.apply(i), dest);
            case ScatterAlongAxis(var axis, var u, var i, var dest) -> scatterAlongAxis(axis, x.apply(u), x.apply(i), dest);
            case Fused f -> {
                List<Tensor> out = fused(f, x);
                if (out.size() != 1) throw new IllegalArgumentException(f.op() + " makes " + out.size() + " values: Kernels.fused");
                yield out.getFirst();
            }
        };
    }

    /**
     * The reference kernel of a plan fusion: the composition it stands for, run instruction by
     * instruction in the same order (so its bits are the composition's); its values in the
     * order of {@link Fused#results}.
     */
    public static List<Tensor> fused(Fused ins, Function<Var, Tensor> x) {
        return switch (ins) {
            case MatmulT(var a, var b, var ta, var tb) -> List.of(matmulT(x.apply(a), x.apply(b), ta, tb));
            case MatmulShared(var a, var bs, var ta, var tb) -> {
                List<Tensor> out = new ArrayList<>();
                for (Var b : bs) out.add(matmulT(x.apply(a), x.apply(b), ta, tb));
                yield out;
            }
            case SoftmaxGrad(var p, var dp, var rowSums) -> softmaxGrad(x.apply(p), x.apply(dp), rowSums);
            case AttentionWithLse(var q, var k, var v, var sinks, var o) -> {
                Tensor qt = x.apply(q), kt = x.apply(k), st = opt(x, sinks);
                yield List.of(attention(qt, kt, x.apply(v), st, o), attentionLse(qt, kt, st, o));
            }
            case AttentionBackward(var q, var k, var v, var g, var lse, var d, var o, var dq, var dk, var dv) ->
                    attentionGrads(x.apply(q), x.apply(k), x.apply(v), x.apply(g), x.apply(lse), x.apply(d), o, dq, dk, dv);
            case SwigluSigmoid(var g, var u) -> List.of(swiglu(x.apply(g), x.apply(u)), sigmoid(x.apply(g)));
            case Elementwise(var inputs, var body) -> {
                Map<Var, Tensor> env = new HashMap<>();
                for (int i = 0; i < inputs.size(); i++) env.put(body.params().get(i).name(), x.apply(inputs.get(i)));
                List<Var> result = List.of(body.body().result());
                for (Let l : body.body().lets()) {
                    if (l.rhs() instanceof Rhs.Tuple(var elems)) { result = elems; continue; }
                    env.put(l.var(), apply((Instr) l.rhs(), env::get));
                }
                List<Tensor> out = new ArrayList<>();
                for (Var v : result) out.add(env.get(v));
                yield out;
            }
        };
    }

    /** a @ b with either operand's last two axes swapped first: transpose, then matmul. */
    private static Tensor matmulT(Tensor a, Tensor b, boolean ta, boolean tb) {
        return matmul(ta ? transpose(a, Perm.lastTwo(a.type().rank())) : a, tb ? transpose(b, Perm.lastTwo(b.type().rank())) : b);
    }

    /** The softmax VJP over the last axis as the rule writes it: p ⊙ (dp − broadcast(Σ_last p ⊙ dp)); and the row sums. */
    private static List<Tensor> softmaxGrad(Tensor p, Tensor dp, boolean rowSums) {
        Shape s = p.type().shape();
        Tensor d = sum(mul(p, dp), s.rank() - 1, true);
        Tensor ds = mul(p, sub(dp, broadcast(d, s)));
        return rowSums ? List.of(ds, d) : List.of(ds);
    }

    /** The tensor of an optional operand, or null when absent. */
    private static Tensor opt(Function<Var, Tensor> x, Optional<Var> v) { return v.isPresent() ? x.apply(v.get()) : null; }

    // ---- rounding and checks ------------------------------------------------------------------

    /** r(x): x rounded to float for F32, x itself for every other dtype. */
    public static double round(DType d, double x) { return d == DType.F32 ? (double) (float) x : x; }

    /**
     * exp at dtype d, unrounded: {@link KinaMath#exp(float)} for F32 (x holds a float), else
     * StrictMath.exp (the F64 oracle's exp stays the portable fdlibm one).
     */
    static double exp(DType d, double x) { return d == DType.F32 ? KinaMath.exp((float) x) : StrictMath.exp(x); }

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
    public static String position(Shape s, long flat) {
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

    /** {@code x.exp()}: y_i = r(exp(x_i)), exp as {@link #exp(DType, double)}. Floating only. */
    public static Tensor exp(Tensor x) {
        requireFloating("exp", x);
        DType d = x.dtype();
        double[] a = x.floats(), y = new double[a.length];
        for (int i = 0; i < a.length; i++) y[i] = round(d, exp(d, a[i]));
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
     * Order ({@link Matmul}): acc = −0.0, then acc = fma(a[bt,i,p], b[bt,p,j], acc) for p = 0..K−1
     * in increasing p, in float for F32; K = 0 gives +0.0. A row of outputs is accumulated while
     * walking p, so each output still takes its products in increasing p.
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
     * acc = −0.0; acc = fma(a_ip, b_pj, acc) for p = 0 … K−1 in increasing p (one rounding per step,
     * in float for F32); +0.0 when K = 0.
     */
    public static double[] matmulScalar(DType d, double[] x, double[] y, int batch, int m, int k, int n) {
        double[] z = new double[batch * m * n];                           // +0.0 when K = 0
        if (k == 0) return z;
        for (int bt = 0; bt < batch; bt++)
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++) {
                    int aRow = (bt * m + i) * k, bCol = bt * k * n + j;
                    if (d == DType.F32) {
                        float acc = -0.0f;
                        for (int p = 0; p < k; p++) acc = Math.fma((float) x[aRow + p], (float) y[bCol + p * n], acc);
                        z[(bt * m + i) * n + j] = acc;
                    } else {
                        double acc = -0.0;
                        for (int p = 0; p < k; p++) acc = Math.fma(x[aRow + p], y[bCol + p * n], acc);
                        z[(bt * m + i) * n + j] = acc;
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

    /**
     * {@code x.broadcast(to)} as NumPy broadcasts: x's dims align with the last dims of {@code to},
     * each 1 (expanded) or equal; the leading dims of {@code to} are new axes. A pure copy.
     */
    public static Tensor broadcast(Tensor x, Shape to) {
        Shape s = x.shape();
        check(to.rank() >= s.rank(), "broadcast: " + s + " to " + to + " drops axes");
        int lead = to.rank() - s.rank();
        long[] inStride = s.strides(), src = new long[to.rank()];      // new leading axes: stride 0
        for (int i = 0; i < s.rank(); i++) {
            check(s.dim(i) == 1 || s.dim(i) == to.dim(lead + i), "broadcast: " + s + " does not expand to " + to);
            src[lead + i] = s.dim(i) == 1 ? 0 : inStride[i];
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
     * s = r(s + e_i) in increasing i; y_i = r(e_i / s). Safe softmax: a row whose every element is
     * −inf (fully masked) gives y = +0.0, not NaN, so its gradient y ⊙ (g − Σ g⊙y) is 0 too.
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
                double m = rowMax(a, base, c, inner);
                if (m == Double.NEGATIVE_INFINITY) {             // a fully masked row: probabilities +0, not NaN
                    for (int ci = 0; ci < c; ci++) y[base + ci * inner] = 0.0;
                    continue;
                }
                double sum = expSum(d, a, base, c, inner, m, y);
                for (int ci = 0; ci < c; ci++) y[base + ci * inner] = round(d, y[base + ci * inner] / sum);
            }
        return make(x.type(), y);
    }

    /** max of a row along an axis (c elements, stride inner): sequential Math.max from the first. */
    private static double rowMax(double[] a, int base, int c, int inner) {
        double m = a[base];
        for (int ci = 1; ci < c; ci++) m = Math.max(m, a[base + ci * inner]);
        return m;
    }

    /**
     * Σ e_i with e_i = r(exp(r(x_i − m))), sequential from the first; each e_i is stored in
     * {@code e} (same positions) when it is not null. Shared by softmax and log_softmax.
     */
    private static double expSum(DType d, double[] a, int base, int c, int inner, double m, double[] e) {
        double sum = 0;
        for (int ci = 0; ci < c; ci++) {
            double ei = round(d, exp(d, round(d, a[base + ci * inner] - m)));
            if (e != null) e[base + ci * inner] = ei;
            sum = ci == 0 ? ei : round(d, sum + ei);
        }
        return sum;
    }

    /**
     * {@code x.log_softmax(axis)}, per row along the axis: m = max (as softmax); s = sequential sum
     * (from the first) of r(exp(r(x_i − m))); l = r(log(s)); y_i = r(r(x_i − m) − l). A row whose
     * every element is −inf (fully masked) gives y = −inf, not NaN.
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
                double m = rowMax(a, base, c, inner);
                if (m == Double.NEGATIVE_INFINITY) {             // a fully masked row: log-probabilities −inf, not NaN
                    for (int ci = 0; ci < c; ci++) y[base + ci * inner] = Double.NEGATIVE_INFINITY;
                    continue;
                }
                double l = round(d, StrictMath.log(expSum(d, a, base, c, inner, m, null)));
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

    // ---- transformer vocabulary: unary ----------------------------------------------------------

    /** y_i = f(x_i) for a floating x; f rounds every step it takes with {@code round(d, ·)}. */
    private static Tensor map(String op, Tensor x, java.util.function.DoubleUnaryOperator f) {
        requireFloating(op, x);
        double[] a = x.floats(), y = new double[a.length];
        for (int i = 0; i < a.length; i++) y[i] = f.applyAsDouble(a[i]);
        return make(x.type(), y);
    }

    /** {@code x.sqrt()}: y = r(√x) (StrictMath.sqrt, correctly rounded). */
    public static Tensor sqrt(Tensor x) {
        DType d = x.dtype();
        return map("sqrt", x, v -> round(d, StrictMath.sqrt(v)));
    }

    /** {@code x.rsqrt()}: y = r(1 / r(√x)). */
    public static Tensor rsqrt(Tensor x) {
        DType d = x.dtype();
        return map("rsqrt", x, v -> round(d, 1.0 / round(d, StrictMath.sqrt(v))));
    }

    /** {@code x.tanh()}: y = r(StrictMath.tanh(x)). */
    public static Tensor tanh(Tensor x) {
        DType d = x.dtype();
        return map("tanh", x, v -> round(d, StrictMath.tanh(v)));
    }

    /** σ(x) = r(1 / r(1 + r(exp(−x)))). */
    static double sigmoid(DType d, double v) {
        return round(d, 1.0 / round(d, 1.0 + round(d, exp(d, -v))));
    }

    /** {@code x.sigmoid()}: y = r(1 / r(1 + r(exp(−x)))). */
    public static Tensor sigmoid(Tensor x) {
        DType d = x.dtype();
        return map("sigmoid", x, v -> sigmoid(d, v));
    }

    /** {@code x.reciprocal()}: y = r(1 / x). */
    public static Tensor reciprocal(Tensor x) {
        DType d = x.dtype();
        return map("reciprocal", x, v -> round(d, 1.0 / v));
    }

    /** {@code x.silu()}: y = r(x · σ(x)), σ as {@link #sigmoid}. */
    public static Tensor silu(Tensor x) {
        DType d = x.dtype();
        return map("silu", x, v -> round(d, v * sigmoid(d, v)));
    }

    private static final double GELU_C = Instr.Gelu.GELU_C, GELU_K = Instr.Gelu.GELU_K;

    /**
     * {@code x.gelu()} (tanh approximation): c = r(√(2/π)), K = r(0.044715);
     * z = r(c · r(x + r(K · r(r(x·x)·x)))); y = r(r(0.5·x) · r(1 + r(tanh z))).
     */
    public static Tensor gelu(Tensor x) {
        DType d = x.dtype();
        double c = round(d, GELU_C), k = round(d, GELU_K);
        return map("gelu", x, v -> {
            double x3 = round(d, round(d, v * v) * v);
            double z = round(d, c * round(d, v + round(d, k * x3)));
            return round(d, round(d, 0.5 * v) * round(d, 1.0 + round(d, StrictMath.tanh(z))));
        });
    }

    /** {@code x.relu()}: y = Math.max(x, +0.0) (exact; NaN propagates, −0.0 becomes +0.0); I64: max(x, 0). */
    public static Tensor relu(Tensor x) {
        if (x.dtype() == DType.I64) {
            long[] a = x.ints(), y = new long[a.length];
            for (int i = 0; i < a.length; i++) y[i] = Math.max(a[i], 0);
            return make(x.type(), y);
        }
        return map("relu", x, v -> Math.max(v, 0.0));
    }

    /** {@code x.softcap(cap=C)}: y = r(C' · r(tanh(r(x / C')))), C' = r(C). */
    public static Tensor softcap(Tensor x, double cap) {
        DType d = x.dtype();
        double c = round(d, cap);
        return map("softcap", x, v -> round(d, c * round(d, StrictMath.tanh(round(d, v / c)))));
    }

    /**
     * {@code x.argmax(axis)} → I64 with the axis dropped: the smallest index of the largest element
     * (a NaN counts as the largest; the first NaN wins). An empty axis gives 0.
     */
    public static Tensor argmax(Tensor x, int axis) {
        requireFloating("argmax", x);
        Shape s = x.shape();
        requireAxis("argmax", axis, s.rank());
        int outer = prod(s, 0, axis), c = (int) s.dim(axis), inner = prod(s, axis + 1, s.rank());
        double[] a = x.floats();
        long[] y = new long[outer * inner];
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                int best = 0;
                for (int ci = 1; ci < c; ci++) {
                    double b = a[(o * c + best) * inner + i], v = a[(o * c + ci) * inner + i];
                    if (!Double.isNaN(b) && (Double.isNaN(v) || v > b)) best = ci;
                }
                y[o * inner + i] = best;
            }
        return make(new TensorType(DType.I64, s.drop(axis), x.type().placement()), y);
    }

    /** {@code x.clamp(lo, hi)} on I64: min(max(x, lo), hi). */
    public static Tensor clamp(Tensor x, long lo, long hi) {
        check(x.dtype() == DType.I64, "clamp: the host runs clamp on I64, not " + x.dtype());
        long[] a = x.ints(), y = new long[a.length];
        for (int i = 0; i < a.length; i++) y[i] = Math.min(Math.max(a[i], lo), hi);
        return make(x.type(), y);
    }

    /** {@code x.requant(shift)} on I64: ⌊x / 2^shift⌋ (arithmetic shift right). */
    public static Tensor requant(Tensor x, int shift) {
        check(x.dtype() == DType.I64, "requant: the host runs requant on I64, not " + x.dtype());
        long[] a = x.ints(), y = new long[a.length];
        for (int i = 0; i < a.length; i++) y[i] = a[i] >> shift;
        return make(x.type(), y);
    }

    // ---- transformer vocabulary: binary ---------------------------------------------------------

    /** {@code a.maximum(b)}: y = Math.max(a, b) (exact; NaN propagates; +0.0 above −0.0). */
    public static Tensor maximum(Tensor a, Tensor b) {
        sameType("maximum", a, b);
        requireFloating("maximum", a);
        double[] x = a.floats(), y = b.floats(), z = new double[x.length];
        for (int i = 0; i < x.length; i++) z[i] = Math.max(x[i], y[i]);
        return make(a.type(), z);
    }

    /** {@code a.greater(b)} → I1: 1 where a &gt; b (false for NaN), else 0. */
    public static Tensor greater(Tensor a, Tensor b) {
        sameType("greater", a, b);
        requireFloating("greater", a);
        double[] x = a.floats(), y = b.floats();
        long[] z = new long[x.length];
        for (int i = 0; i < x.length; i++) z[i] = x[i] > y[i] ? 1 : 0;
        return make(a.type().withDType(DType.I1), z);
    }

    /** {@code mask.select(a, b)}: y = a where mask is 1, else b (a copy, no arithmetic). */
    public static Tensor select(Tensor mask, Tensor a, Tensor b) {
        sameType("select", a, b);
        requireFloating("select", a);
        check(mask.dtype() == DType.I1 && mask.shape().equals(a.shape()),
                "select: mask " + mask.type() + " must be I1 of shape " + a.shape());
        long[] m = mask.ints();
        double[] x = a.floats(), y = b.floats(), z = new double[x.length];
        for (int i = 0; i < x.length; i++) z[i] = m[i] != 0 ? x[i] : y[i];
        return make(a.type(), z);
    }

    /** {@code gate.swiglu(up)}: y = r(silu(gate) · up), silu as {@link #silu}. */
    public static Tensor swiglu(Tensor gate, Tensor up) {
        sameType("swiglu", gate, up);
        requireFloating("swiglu", gate);
        DType d = gate.dtype();
        double[] g = gate.floats(), u = up.floats(), y = new double[g.length];
        for (int i = 0; i < g.length; i++) y[i] = round(d, round(d, g[i] * sigmoid(d, g[i])) * u[i]);
        return make(gate.type(), y);
    }

    // ---- transformer vocabulary: norms over the last axis ---------------------------------------

    /**
     * {@code x.rmsnorm(w, r, eps)} per row of width D: u_c = r(x_c + r_c) (x_c without a residual);
     * ss = r(u_0²), then ss = r(ss + r(u_c²)) in increasing c; q = r(1 / r(√r(r(ss / D) + eps)));
     * y_c = r(u_c · q), then r(y_c · w_c) with a weight. {@code weight} and {@code residual} may be null.
     */
    public static Tensor rmsnorm(Tensor x, Tensor weight, Tensor residual, double eps) {
        requireFloating("rmsnorm", x);
        if (residual != null) sameType("rmsnorm", x, residual);
        DType d = x.dtype();
        int dd = (int) x.shape().dim(x.shape().rank() - 1), rows = dd == 0 ? 0 : x.size() / dd;
        if (weight != null) check(weight.size() == dd && weight.dtype() == d, "rmsnorm: weight " + weight.type() + " for width " + dd);
        double e = round(d, eps);
        double[] a = x.floats(), y = new double[a.length], u = new double[dd];
        for (int row = 0; row < rows; row++) {
            int base = row * dd;
            double ss = 0;
            for (int c = 0; c < dd; c++) {
                u[c] = residual == null ? a[base + c] : round(d, a[base + c] + residual.floats()[base + c]);
                double sq = round(d, u[c] * u[c]);
                ss = c == 0 ? sq : round(d, ss + sq);
            }
            double q = round(d, 1.0 / round(d, StrictMath.sqrt(round(d, round(d, ss / dd) + e))));
            for (int c = 0; c < dd; c++) {
                double v = round(d, u[c] * q);
                y[base + c] = weight == null ? v : round(d, v * weight.floats()[c]);
            }
        }
        return make(x.type(), y);
    }

    /**
     * {@code x.layernorm(w, b, eps)} per row of width D: μ = r(Σ x / D) (sequential sum); δ_c = r(x_c − μ);
     * v = r(Σ r(δ_c²) / D); q = r(1 / r(√r(v + eps))); y_c = r(δ_c · q), then r(y_c · w_c), then
     * r(y_c + b_c). {@code weight} and {@code bias} may be null.
     */
    public static Tensor layernorm(Tensor x, Tensor weight, Tensor bias, double eps) {
        requireFloating("layernorm", x);
        DType d = x.dtype();
        int dd = (int) x.shape().dim(x.shape().rank() - 1), rows = dd == 0 ? 0 : x.size() / dd;
        double e = round(d, eps);
        double[] a = x.floats(), y = new double[a.length], dl = new double[dd];
        for (int row = 0; row < rows; row++) {
            int base = row * dd;
            double s = a[base];
            for (int c = 1; c < dd; c++) s = round(d, s + a[base + c]);
            double mu = round(d, s / dd), vs = 0;
            for (int c = 0; c < dd; c++) {
                dl[c] = round(d, a[base + c] - mu);
                double sq = round(d, dl[c] * dl[c]);
                vs = c == 0 ? sq : round(d, vs + sq);
            }
            double q = round(d, 1.0 / round(d, StrictMath.sqrt(round(d, round(d, vs / dd) + e))));
            for (int c = 0; c < dd; c++) {
                double v = round(d, dl[c] * q);
                if (weight != null) v = round(d, v * weight.floats()[c]);
                if (bias != null) v = round(d, v + bias.floats()[c]);
                y[base + c] = v;
            }
        }
        return make(x.type(), y);
    }

    /** {@code x.l2norm(eps)} per row: ss = Σ r(x_c²) (sequential); n = r(√r(ss + eps)); y_c = r(x_c / n). */
    public static Tensor l2norm(Tensor x, double eps) {
        requireFloating("l2norm", x);
        DType d = x.dtype();
        int dd = (int) x.shape().dim(x.shape().rank() - 1), rows = dd == 0 ? 0 : x.size() / dd;
        double e = round(d, eps);
        double[] a = x.floats(), y = new double[a.length];
        for (int row = 0; row < rows; row++) {
            int base = row * dd;
            double ss = 0;
            for (int c = 0; c < dd; c++) {
                double sq = round(d, a[base + c] * a[base + c]);
                ss = c == 0 ? sq : round(d, ss + sq);
            }
            double n = round(d, StrictMath.sqrt(round(d, ss + e)));
            for (int c = 0; c < dd; c++) y[base + c] = round(d, a[base + c] / n);
        }
        return make(x.type(), y);
    }

    // ---- transformer vocabulary: rope and attention ---------------------------------------------

    /**
     * {@code x.rope(cos, sin, heads, rotary, start)}: x σ++[T, H·hd], tables [L, R/2], R = rotary
     * (0: hd). Row t, head h, i &lt; R/2, with c = cos[start + t, i], s = sin[start + t, i],
     * a = x[.., h·hd + i], b = x[.., h·hd + i + R/2]: y_i = r(r(a·c) − r(b·s)),
     * y_{i+R/2} = r(r(b·c) + r(a·s)); dims R..hd−1 of each head are copied.
     */
    public static Tensor rope(Tensor x, Tensor cos, Tensor sin, int heads, int rotary, int start) {
        requireFloating("rope", x);
        Shape s = x.shape();
        int rk = s.rank();
        check(rk >= 2 && cos.type().equals(sin.type()) && cos.shape().rank() == 2 && cos.dtype() == x.dtype(),
                "rope: x " + x.type() + " with tables " + cos.type() + ", " + sin.type());
        int t = (int) s.dim(rk - 2), w = (int) s.dim(rk - 1), hd = w / heads, r = rotary == 0 ? hd : rotary, half = r / 2;
        int l = (int) cos.shape().dim(0);
        check(cos.shape().dim(1) == half && l >= start + t, "rope: tables " + cos.shape() + " for rotary " + r
                + ", start " + start + " and " + t + " rows");
        DType d = x.dtype();
        double[] a = x.floats(), y = a.clone(), cs = cos.floats(), sn = sin.floats();
        int batch = t == 0 || w == 0 ? 0 : a.length / (t * w);
        for (int bt = 0; bt < batch; bt++)
            for (int row = 0; row < t; row++) {
                int base = (bt * t + row) * w, tab = (start + row) * half;
                for (int h = 0; h < heads; h++)
                    for (int i = 0; i < half; i++) {
                        int lo = base + h * hd + i, hi = lo + half;
                        double c = cs[tab + i], sv = sn[tab + i], xa = a[lo], xb = a[hi];
                        y[lo] = round(d, round(d, xa * c) - round(d, xb * sv));
                        y[hi] = round(d, round(d, xb * c) + round(d, xa * sv));
                    }
            }
        return make(x.type(), y);
    }

    /** The attention scale α = r(scale), or r(1/√hd) by default. */
    public static double attentionScale(DType d, Instr.AttnOpts o, long hd) {
        return round(d, o.alpha(hd));
    }

    /**
     * The score of query row qOff against key kOff: dot = Σ_e q_e·k_e, one fma chain from −0.0 in
     * increasing e (as attention_qk; 0 when hd = 0), u = r(dot · α), s = r(C·r(tanh(r(u / C)))) with a
     * softcap C, else u.
     */
    private static double score(DType d, double[] q, int qOff, double[] k, int kOff, int hd, double alpha, double cap) {
        boolean f32 = d == DType.F32;
        double dot = -0.0;
        for (int e = 0; e < hd; e++) dot = fma(f32, q[qOff + e], k[kOff + e], dot);
        if (hd == 0) dot = 0;
        double u = round(d, dot * alpha);
        return cap > 0 ? round(d, cap * round(d, StrictMath.tanh(round(d, u / cap)))) : u;
    }

    /**
     * One query row of attention's online softmax; writes out[yOff, yOff + hd) when y is not null and
     * returns the row's lse. Row {@code row} attends [lo, hi] (hi = min(start + row, L − 1); lo = 0, or
     * max(0, start + row − W + 1) with a window W, or ⌊(start + row)/C⌋·C with a chunk C), visited in
     * key blocks [b·B, b·B + B) ∩ [lo, hi] of B = {@link AttnOpts#KEY_BLOCK}, in increasing b. State: m,
     * l, o_e; with a sink σ it starts at m = σ, l = 1, without one m is the first block's maximum and
     * l = +0.0; o_e starts at −0.0. Per block: its scores s_j ({@link #score}), bm = Math.max over them;
     * if bm &gt; m (a block after the first, or after the sink): c = r(exp(r(m − bm))), l = r(l·c),
     * o_e = r(o_e·c), m = bm; then in increasing j, p = r(exp(r(s_j − m))), l = r(l + p),
     * o_e = fma(p, v_{j,e}, o_e). Then out_e = r(o_e / l) (+0.0 for a row that attends nothing) and
     * lse = r(m + r(log l)) (−∞ for a row with neither a position nor a sink).
     */
    private static double onlineRow(DType d, double[] q, int qOff, double[] k, double[] v, int kBase, int kStride, int hd,
                                    int l, int row, AttnOpts o, double alpha, double cap, double sink, boolean hasSink,
                                    double[] y, int yOff, double[] s) {
        boolean f32 = d == DType.F32;
        int hi = o.hi(row, l);
        long lo = o.lo(row);
        boolean started = hasSink;
        double m = hasSink ? sink : Double.NEGATIVE_INFINITY, z = hasSink ? 1.0 : 0.0;
        if (y != null) Arrays.fill(y, yOff, yOff + hd, -0.0);
        int block = AttnOpts.KEY_BLOCK;
        for (long b0 = lo / block * block; lo <= hi && b0 <= hi; b0 += block) {
            int j0 = (int) Math.max(lo, b0), j1 = (int) Math.min(hi, b0 + block - 1);
            double bm = 0;
            for (int j = j0; j <= j1; j++) {
                s[j - j0] = score(d, q, qOff, k, kBase + j * kStride, hd, alpha, cap);
                bm = j == j0 ? s[0] : Math.max(bm, s[j - j0]);
            }
            if (!started) {
                m = bm;
                started = true;
            } else if (bm > m) {
                double c = round(d, exp(d, round(d, m - bm)));
                z = round(d, z * c);
                if (y != null) for (int e = 0; e < hd; e++) y[yOff + e] = round(d, y[yOff + e] * c);
                m = bm;
            }
            for (int j = j0; j <= j1; j++) {
                double p = round(d, exp(d, round(d, s[j - j0] - m)));
                z = round(d, z + p);
                if (y != null)
                    for (int e = 0, vOff = kBase + j * kStride; e < hd; e++) y[yOff + e] = fma(f32, p, v[vOff + e], y[yOff + e]);
            }
        }
        if (y != null)
            for (int e = 0; e < hd; e++) y[yOff + e] = lo > hi ? 0.0 : round(d, y[yOff + e] / z);
        return started ? round(d, m + round(d, StrictMath.log(z))) : Double.NEGATIVE_INFINITY;
    }

    /** Checks q, k (and v, sinks) against the options; returns {batch, rows, L, hd}. */
    private static int[] attentionDims(String op, Tensor q, Tensor k, Tensor v, Tensor sinks, Instr.AttnOpts o) {
        requireFloating(op, q);
        Shape qs = q.shape(), ks = k.shape();
        int r = qs.rank();
        check(r >= 2 && ks.rank() == r && qs.prefix(r - 2).equals(ks.prefix(r - 2)) && k.dtype() == q.dtype()
                && o.heads() > 0 && o.kvHeads() > 0 && o.heads() % o.kvHeads() == 0,
                op + ": q " + q.type() + " and k " + k.type() + " do not fit heads " + o.heads() + ", kv_heads " + o.kvHeads());
        int rows = (int) qs.dim(r - 2), l = (int) ks.dim(r - 2), hd = (int) (qs.dim(r - 1) / o.heads());
        check(qs.dim(r - 1) == (long) hd * o.heads() && ks.dim(r - 1) == (long) hd * o.kvHeads(),
                op + ": q " + q.type() + " and k " + k.type() + " head widths differ");
        if (v != null) sameType(op, k, v);
        if (sinks != null) check(sinks.size() == o.heads() && sinks.dtype() == q.dtype(), op + ": sinks " + sinks.type());
        int batch = prod(qs, 0, r - 2);
        return new int[] {batch, rows, l, hd};
    }

    /** The type σ++[T, H] of a per-row, per-head value (lse, d) of q σ++[T, H·hd]. */
    private static TensorType rowHeadType(Tensor q, int heads) {
        Shape qs = q.shape();
        return q.type().withShape(qs.prefix(qs.rank() - 1).concat(heads));
    }

    /** Runs {@link #onlineRow} over every (batch, head, row); y (σ++[T, H·hd]) may be null; returns lse σ++[T, H]. */
    private static double[] online(String op, Tensor q, Tensor k, Tensor v, Tensor sinks, Instr.AttnOpts o, double[] y) {
        int[] dims = attentionDims(op, q, k, v, sinks, o);
        int batch = dims[0], rows = dims[1], l = dims[2], hd = dims[3], h = o.heads(), kv = o.kvHeads(), g = h / kv;
        DType d = q.dtype();
        double alpha = attentionScale(d, o, hd), cap = round(d, o.softcap());
        double[] qa = q.floats(), ka = k.floats(), va = v == null ? null : v.floats(), lse = new double[batch * rows * h];
        double[] s = new double[AttnOpts.KEY_BLOCK];
        for (int bt = 0; bt < batch; bt++)
            for (int hh = 0; hh < h; hh++)
                for (int row = 0; row < rows; row++) {
                    int qOff = (bt * rows + row) * h * hd + hh * hd, kBase = bt * l * kv * hd + (hh / g) * hd;
                    lse[(bt * rows + row) * h + hh] = onlineRow(d, qa, qOff, ka, va, kBase, kv * hd, hd, l, row, o, alpha, cap,
                            sinks == null ? 0 : sinks.floats()[hh], sinks != null, y, qOff, s);
                }
        return lse;
    }

    /**
     * {@code q.attention(k, v, sinks, opts)}: q σ++[T, H·hd], k, v σ++[L, KV·hd], sinks [H] or null.
     * Query head h reads kv head h / (H/KV). Per row and head, the online softmax of {@link #onlineRow}.
     */
    public static Tensor attention(Tensor q, Tensor k, Tensor v, Tensor sinks, Instr.AttnOpts o) {
        double[] y = new double[q.size()];
        online("attention", q, k, v, sinks, o, y);
        return make(q.type(), y);
    }

    /** AttentionLse: σ++[T, H] of each row's lse, as {@link #attention} computes it ({@link #onlineRow}). */
    public static Tensor attentionLse(Tensor q, Tensor k, Tensor sinks, Instr.AttnOpts o) {
        return make(rowHeadType(q, o.heads()), online("attention_lse", q, k, null, sinks, o, null));
    }

    /** Whether query row {@code row} attends key position j. */
    private static boolean attended(Instr.AttnOpts o, int row, int j, int l) {
        return j >= o.lo(row) && j <= o.hi(row, l);
    }

    /** Checks a σ++[T, H] operand of the attention backward against q σ++[T, H·hd]. */
    private static void rowHeads(String op, String what, Tensor x, Tensor q, int heads) {
        check(x.type().equals(rowHeadType(q, heads)), op + ": " + what + " " + x.type() + " is not " + rowHeadType(q, heads));
    }

    /**
     * AttentionExp: σ++[H, T, L], p = r(exp(r(s − lse))) at each attended pair ({@link #score}), +0.0
     * at every other pair.
     */
    public static Tensor attentionExp(Tensor q, Tensor k, Tensor lse, Instr.AttnOpts o) {
        int[] dims = attentionDims("attention_exp", q, k, null, null, o);
        int batch = dims[0], rows = dims[1], l = dims[2], hd = dims[3], h = o.heads(), kv = o.kvHeads(), g = h / kv;
        rowHeads("attention_exp", "lse", lse, q, h);
        DType d = q.dtype();
        double alpha = attentionScale(d, o, hd), cap = round(d, o.softcap());
        Shape qs = q.shape();
        TensorType out = q.type().withShape(qs.prefix(qs.rank() - 2).concat(h, rows, l));
        double[] qa = q.floats(), ka = k.floats(), ls = lse.floats(), y = new double[volume("attention_exp", out.shape())];
        for (int bt = 0; bt < batch; bt++)
            for (int hh = 0; hh < h; hh++)
                for (int t = 0; t < rows; t++) {
                    int qOff = (bt * rows + t) * h * hd + hh * hd, kBase = bt * l * kv * hd + (hh / g) * hd;
                    double m = ls[(bt * rows + t) * h + hh];
                    for (int j = (int) o.lo(t), end = o.hi(t, l); j <= end; j++)
                        y[((bt * h + hh) * rows + t) * l + j] = round(d, exp(d, round(d, score(d, qa, qOff, ka, kBase + j * kv * hd, hd, alpha, cap) - m)));
                }
        return make(out, y);
    }

    /**
     * attention_dq, attention_dk, attention_dv ({@link Instr.AttentionGrad}): those asked for, in that
     * order. Per attended pair (t, j) of head h (kv head c = h / (H/KV)): p = r(exp(r(s − lse_t)))
     * ({@link #score}; u = r(dot·α) its scaled dot), dp = Σ_e g_{t,e}·v_{j,e} (one fma chain from −0.0
     * in increasing e), ds = r(p·r(dp − d_t)), du = r(ds·r(1 − r(th·th))) with th = r(tanh(r(u / C)))
     * under a softcap C, else ds. Chains (fma, from −0.0): dq_{t,e} over the attended j in increasing
     * j of du·k_{j,e}; dk_{j,e} of du·q_{t,e} and dv_{j,e} of p·g_{t,e} over the heads of c in
     * increasing h, then the rows attending j in increasing t; a chain with no term is +0.0. Then
     * dq = r(α·chain), dk = r(α·chain), dv = chain.
     */
    public static List<Tensor> attentionGrads(Tensor q, Tensor k, Tensor v, Tensor g, Tensor lse, Tensor dd, Instr.AttnOpts o,
                                              boolean wantQ, boolean wantK, boolean wantV) {
        String op = wantQ ? "attention_dq" : wantK ? "attention_dk" : "attention_dv";
        int[] dims = attentionDims(op, q, k, v, null, o);
        int batch = dims[0], rows = dims[1], l = dims[2], hd = dims[3], h = o.heads(), kv = o.kvHeads(), grp = h / kv;
        sameType(op, q, g);
        rowHeads(op, "lse", lse, q, h);
        rowHeads(op, "d", dd, q, h);
        DType d = q.dtype();
        boolean f32 = d == DType.F32;
        double alpha = attentionScale(d, o, hd), cap = round(d, o.softcap());
        double[] qa = q.floats(), ka = k.floats(), va = v.floats(), ga = g.floats(), ls = lse.floats(), da = dd.floats();
        double[] dq = new double[qa.length], dk = new double[ka.length], dv = new double[ka.length];
        boolean[] anyQ = new boolean[qa.length], anyK = new boolean[ka.length];
        Arrays.fill(dq, -0.0);
        Arrays.fill(dk, -0.0);
        Arrays.fill(dv, -0.0);
        int kStride = kv * hd, qStride = h * hd;
        // bt, h, t, j in increasing order: dq_t's terms come in increasing j, dk_j's and dv_j's in increasing (h, t)
        for (int bt = 0; bt < batch; bt++)
            for (int hh = 0; hh < h; hh++)
                for (int t = 0; t < rows; t++) {
                    int qOff = (bt * rows + t) * qStride + hh * hd, kBase = bt * l * kStride + (hh / grp) * hd;
                    double m = ls[(bt * rows + t) * h + hh], dt = da[(bt * rows + t) * h + hh];
                    for (int j = (int) o.lo(t), end = o.hi(t, l); j <= end; j++) {
                        int kOff = kBase + j * kStride;
                        double sc = score(d, qa, qOff, ka, kOff, hd, alpha, cap);
                        double p = round(d, exp(d, round(d, sc - m)));
                        anyQ[qOff] = true;
                        anyK[kOff] = true;
                        if (wantV)
                            for (int e = 0; e < hd; e++) dv[kOff + e] = fma(f32, p, ga[qOff + e], dv[kOff + e]);
                        if (!wantQ && !wantK) continue;
                        double dp = -0.0;
                        for (int e = 0; e < hd; e++) dp = fma(f32, ga[qOff + e], va[kOff + e], dp);
                        if (hd == 0) dp = 0;
                        double du = round(d, p * round(d, dp - dt));
                        if (cap > 0) {
                            double dot = -0.0;
                            for (int e = 0; e < hd; e++) dot = fma(f32, qa[qOff + e], ka[kOff + e], dot);
                            if (hd == 0) dot = 0;
                            double th = round(d, StrictMath.tanh(round(d, round(d, dot * alpha) / cap)));
                            du = round(d, du * round(d, 1 - round(d, th * th)));
                        }
                        if (wantQ) for (int e = 0; e < hd; e++) dq[qOff + e] = fma(f32, du, ka[kOff + e], dq[qOff + e]);
                        if (wantK) for (int e = 0; e < hd; e++) dk[kOff + e] = fma(f32, du, qa[qOff + e], dk[kOff + e]);
                    }
                }
        List<Tensor> out = new ArrayList<>();
        if (wantQ) out.add(make(q.type(), scaled(d, dq, anyQ, hd, alpha)));
        if (wantK) out.add(make(k.type(), scaled(d, dk, anyK, hd, alpha)));
        if (wantV) out.add(make(k.type(), scaled(d, dv, anyK, hd, Double.NaN)));
        return out;
    }

    /** Each head's chains of hd values (anyAt[first] marks one with a term): r(α·chain), or the chain for α NaN; +0.0 with no term. */
    private static double[] scaled(DType d, double[] chain, boolean[] anyAt, int hd, double alpha) {
        for (int i = 0; i < chain.length; i += Math.max(hd, 1))
            for (int e = 0; e < hd; e++)
                chain[i + e] = !anyAt[i] ? 0.0 : Double.isNaN(alpha) ? chain[i + e] : round(d, alpha * chain[i + e]);
        return chain;
    }

    /**
     * AttentionProduct ({@link Instr.AttentionProduct}, forms QK, PK, PQ): sums over attended pairs only,
     * each output one fma chain from −0.0 (F32: Math.fma on floats, one rounding per term) in the order of
     * the instruction's docstring; an output with no term is +0.0, as are QK's pairs that are not attended.
     */
    public static Tensor attentionProduct(Tensor a, Tensor b, Instr.AttnOpts o, Instr.AttentionProduct.Form form) {
        String op = form.op();
        requireFloating(op, a);
        check(b.dtype() == a.dtype(), op + ": a " + a.type() + " and b " + b.type() + " differ in dtype");
        DType d = a.dtype();
        boolean f32 = d == DType.F32;
        int h = o.heads(), kv = o.kvHeads(), g = h / kv;
        double[] x = a.floats(), w = b.floats();
        return switch (form) {
            case QK -> {                                        // a σ++[T, H·hd], b σ++[L, KV·hd] → σ++[H, T, L]
                int[] dims = attentionDims(op, a, b, null, null, o);
                int batch = dims[0], rows = dims[1], l = dims[2], hd = dims[3];
                Shape as = a.shape();
                TensorType out = a.type().withShape(as.prefix(as.rank() - 2).concat(h, rows, l));
                double[] y = new double[batch * h * rows * l];
                for (int bt = 0; bt < batch; bt++)
                    for (int hh = 0; hh < h; hh++)
                        for (int t = 0; t < rows; t++)
                            for (int j = (int) o.lo(t), end = o.hi(t, l); j <= end; j++) {
                                int ao = (bt * rows + t) * h * hd + hh * hd, bo = (bt * l + j) * kv * hd + (hh / g) * hd;
                                double acc = f32 ? -0.0f : -0.0;
                                for (int e = 0; e < hd; e++) acc = fma(f32, x[ao + e], w[bo + e], acc);
                                y[((bt * h + hh) * rows + t) * l + j] = hd == 0 ? 0.0 : acc;
                            }
                yield make(out, y);
            }
            case PK, PQ -> {                                    // a σ++[H, T, L]
                Shape as = a.shape(), bs = b.shape();
                int r = bs.rank();
                check(as.rank() == r + 1 && as.dim(r - 2) == h, op + ": a " + a.type() + " is not σ++[" + h + ", T, L]");
                int rows = (int) as.dim(r - 1), l = (int) as.dim(r), batch = prod(bs, 0, r - 2);
                boolean pk = form == Instr.AttentionProduct.Form.PK;
                int hd = (int) (bs.dim(r - 1) / (pk ? kv : h));
                check(bs.dim(r - 2) == (pk ? l : rows), op + ": a " + a.type() + " and b " + b.type() + " do not fit");
                Shape lead = bs.prefix(r - 2);
                if (pk) {                                       // b σ++[L, KV·hd] → σ++[T, H·hd]
                    double[] y = new double[batch * rows * h * hd];
                    for (int bt = 0; bt < batch; bt++)
                        for (int t = 0; t < rows; t++)
                            for (int hh = 0; hh < h; hh++) {
                                int lo = (int) Math.min(o.lo(t), (long) l), hi = o.hi(t, l), so = ((bt * h + hh) * rows + t) * l;
                                for (int e = 0; e < hd; e++) {
                                    double acc = f32 ? -0.0f : -0.0;
                                    for (int j = lo; j <= hi; j++) acc = fma(f32, x[so + j], w[(bt * l + j) * kv * hd + (hh / g) * hd + e], acc);
                                    y[(bt * rows + t) * h * hd + hh * hd + e] = lo > hi ? 0.0 : acc;
                                }
                            }
                    yield make(b.type().withShape(lead.concat(rows, (long) h * hd)), y);
                }
                double[] y = new double[batch * l * kv * hd];   // b σ++[T, H·hd] → σ++[L, KV·hd]
                for (int bt = 0; bt < batch; bt++)
                    for (int j = 0; j < l; j++)
                        for (int c = 0; c < kv; c++)
                            for (int e = 0; e < hd; e++) {
                                double acc = f32 ? -0.0f : -0.0;
                                boolean any = false;
                                for (int hh = c * g; hh < (c + 1) * g; hh++)
                                    for (int t = 0; t < rows; t++) {
                                        if (!attended(o, t, j, l)) continue;
                                        acc = fma(f32, x[((bt * h + hh) * rows + t) * l + j], w[(bt * rows + t) * h * hd + hh * hd + e], acc);
                                        any = true;
                                    }
                                y[(bt * l + j) * kv * hd + c * hd + e] = any ? acc : 0.0;
                            }
                yield make(b.type().withShape(lead.concat(l, (long) kv * hd)), y);
            }
        };
    }

    /** One fma step of a chain: in float when {@code f32} (operands are floats held in doubles). */
    private static double fma(boolean f32, double x, double y, double acc) {
        return f32 ? Math.fma((float) x, (float) y, (float) acc) : Math.fma(x, y, acc);
    }

    // ---- transformer vocabulary: rows -----------------------------------------------------------

    /**
     * {@code table.set_rows(ids, rows)}: a copy of table [V, D] with row ids[k] replaced by rows[k]
     * (no arithmetic). Every id is checked against [0, V) first, and ids must be distinct:
     * {@code set_rows index out of bounds: …}, {@code set_rows: duplicate index v at ids[k]}.
     */
    public static Tensor setRows(Tensor table, Tensor ids, Tensor rows) {
        requireFloating("set_rows", table);
        requireIndices("set_rows", ids);
        Shape s = table.shape();
        check(s.rank() == 2 && ids.shape().rank() == 1
                && rows.type().equals(table.type().withShape(Shape.of(ids.shape().dim(0), s.dim(1)))),
                "set_rows: table " + table.type() + ", ids " + ids.type() + ", rows " + rows.type());
        checkAll("set_rows", ids, s.dim(0));
        long[] idx = ids.ints();
        java.util.Set<Long> seen = new java.util.HashSet<>();
        for (int i = 0; i < idx.length; i++)
            check(seen.add(idx[i]), "set_rows: duplicate index " + idx[i] + " at ids[" + i + "]");
        int dd = (int) s.dim(1);
        double[] y = table.floats().clone(), r = rows.floats();
        for (int i = 0; i < idx.length; i++) System.arraycopy(r, i * dd, y, (int) idx[i] * dd, dd);
        return make(table.type(), y);
    }
}
