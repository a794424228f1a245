package kina.eval;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import kina.ir.DType;
import kina.ir.Fusions;
import kina.ir.Instr;
import kina.ir.Instr.*;
import kina.ir.Let;
import kina.ir.Payload;
import kina.ir.Placement;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Var;
import kina.kernels.KinaMath;
import kina.kernels.Matmul;

/**
 * The host kernels: one static method per instruction, over {@link Tensor}s, computing the output
 * type from the inputs, one class per family of {@link Instr} ({@link ElementwiseKernels},
 * {@link ContractionKernels}, {@link LayoutKernels}, {@link RowKernels}, {@link AttentionKernels},
 * {@link IndexingKernels}; the constants and the plan's fusions here), and {@link #apply}, the one
 * dispatch. The interpreter and the AD oracle both call these, so each result's bits are a pure
 * function of the operands' bits.
 *
 * <p>Bit discipline. {@code r(x)} is {@code (double) (float) x} for F32 and {@code x} for F64:
 * every floating operation's result is rounded with r, so F32 arithmetic is IEEE single precision
 * bit for bit. Transcendentals are {@link StrictMath} then r, except exp at F32, which is
 * {@link KinaMath#exp(float)} (the plan's vector kernels compute the same bits). Matmul and
 * attention's products (its scores and output, {@link AttentionKernels#attentionProduct}) use fused multiply-add
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
     * instruction, in the order of {@link Instr}'s families, each a call to its kernel in the
     * family's class. The interpreter, the oracle (through {@link Eager}) and the plan's generic
     * kernel all run instructions through here. An Input has no kernel: its payload is supplied by
     * name (the interpreter and the plan bind it).
     */
    public static Tensor apply(Instr ins, Function<Var, Tensor> x) {
        return switch (ins) {
            // constants
            case Input(var t) -> throw new IllegalArgumentException("input " + t + " is supplied by name, not computed");
            case Literal(var t, var payload) -> literal(t, payload);
            case Fill(var t, var v) -> fill(t, v);
            // unary
            case Neg(var a) -> ElementwiseKernels.neg(x.apply(a));
            case Exp(var a) -> ElementwiseKernels.exp(x.apply(a));
            case Log(var a) -> ElementwiseKernels.log(x.apply(a));
            case Sqrt(var a) -> ElementwiseKernels.sqrt(x.apply(a));
            case Rsqrt(var a) -> ElementwiseKernels.rsqrt(x.apply(a));
            case Tanh(var a) -> ElementwiseKernels.tanh(x.apply(a));
            case Sigmoid(var a) -> ElementwiseKernels.sigmoid(x.apply(a));
            case Reciprocal(var a) -> ElementwiseKernels.reciprocal(x.apply(a));
            case Silu(var a) -> ElementwiseKernels.silu(x.apply(a));
            case Gelu(var a) -> ElementwiseKernels.gelu(x.apply(a));
            case Relu(var a) -> ElementwiseKernels.relu(x.apply(a));
            case Softcap(var a, var cap) -> ElementwiseKernels.softcap(x.apply(a), cap);
            // binary
            case Add(var a, var b) -> ElementwiseKernels.add(x.apply(a), x.apply(b));
            case Sub(var a, var b) -> ElementwiseKernels.sub(x.apply(a), x.apply(b));
            case Mul(var a, var b) -> ElementwiseKernels.mul(x.apply(a), x.apply(b));
            case Div(var a, var b) -> ElementwiseKernels.div(x.apply(a), x.apply(b));
            case Maximum(var a, var b) -> ElementwiseKernels.maximum(x.apply(a), x.apply(b));
            case Greater(var a, var b) -> ElementwiseKernels.greater(x.apply(a), x.apply(b));
            case Select(var m, var a, var b) -> ElementwiseKernels.select(x.apply(m), x.apply(a), x.apply(b));
            case Swiglu(var g, var u) -> ElementwiseKernels.swiglu(x.apply(g), x.apply(u));
            // discrete
            case ArgMax(var a, var axis) -> ElementwiseKernels.argmax(x.apply(a), axis);
            case Clamp(var a, var lo, var hi) -> ElementwiseKernels.clamp(x.apply(a), lo, hi);
            case Requant(var a, var shift) -> ElementwiseKernels.requant(x.apply(a), shift);
            // contraction
            case Instr.Matmul(var a, var b) -> ContractionKernels.matmul(x.apply(a), x.apply(b));
            // layout
            case Reshape(var a, var to) -> LayoutKernels.reshape(x.apply(a), to);
            case Transpose(var a, var perm) -> LayoutKernels.transpose(x.apply(a), perm);
            case Broadcast(var a, var to) -> LayoutKernels.broadcast(x.apply(a), to);
            // reduction
            case Sum(var a, var axis, var keep) -> RowKernels.sum(x.apply(a), axis, keep);
            // row-wise
            case LogSoftmax(var a, var axis) -> RowKernels.logSoftmax(x.apply(a), axis);
            case Softmax(var a, var axis) -> RowKernels.softmax(x.apply(a), axis);
            case RmsNorm(var a, var w, var r, var eps) -> RowKernels.rmsnorm(x.apply(a), opt(x, w), opt(x, r), eps);
            case LayerNorm(var a, var w, var b, var eps) -> RowKernels.layernorm(x.apply(a), opt(x, w), opt(x, b), eps);
            case L2Norm(var a, var eps) -> RowKernels.l2norm(x.apply(a), eps);
            case Rope(var a, var c, var s, var heads, var rotary, var start) ->
                    RowKernels.rope(x.apply(a), x.apply(c), x.apply(s), heads, rotary, start);
            // attention
            case Attention(var q, var k, var v, var sinks, var o) -> AttentionKernels.attention(x.apply(q), x.apply(k), x.apply(v), opt(x, sinks), o);
            case AttentionLse(var q, var k, var sinks, var o) -> AttentionKernels.attentionLse(x.apply(q), x.apply(k), opt(x, sinks), o);
            case AttentionExp(var q, var k, var lse, var o) -> AttentionKernels.attentionExp(x.apply(q), x.apply(k), x.apply(lse), o);
            case AttentionGrad(var q, var k, var v, var g, var lse, var d, var o, var wrt) ->
                    AttentionKernels.attentionGrads(x.apply(q), x.apply(k), x.apply(v), x.apply(g), x.apply(lse), x.apply(d), o,
                            wrt == AttentionGrad.Wrt.Q, wrt == AttentionGrad.Wrt.K, wrt == AttentionGrad.Wrt.V).getFirst();
            case AttentionProduct(var a, var b, var o, var form) -> AttentionKernels.attentionProduct(x.apply(a), x.apply(b), o, form);
            // indexing
            case TakeAlongAxis(var v, var i, var axis) -> IndexingKernels.takeAlongAxis(x.apply(v), x.apply(i), axis);
            case Gather(var v, var i) -> IndexingKernels.gather(x.apply(v), x.apply(i));
            case SetRows(var t, var i, var rows) -> IndexingKernels.setRows(x.apply(t), x.apply(i), x.apply(rows));
            case ScatterAdd(var u, var i, var dest) -> IndexingKernels.scatterAdd(x.apply(u), x.apply(i), dest);
            case ScatterAlongAxis(var axis, var u, var i, var dest) -> IndexingKernels.scatterAlongAxis(axis, x.apply(u), x.apply(i), dest);
            // the plan's fusions
            case Fused f -> {
                List<Tensor> out = fused(f, x);
                if (out.size() != 1) throw new IllegalArgumentException(f.op() + " makes " + out.size() + " values: Kernels.fused");
                yield out.getFirst();
            }
        };
    }

    /**
     * The reference kernel of a plan fusion: its expansion ({@link Fused#expand}), the composition
     * it stands for, run instruction by instruction in order (so its bits are the composition's);
     * its values in the order of {@link Fused#results}.
     */
    public static List<Tensor> fused(Fused ins, Function<Var, Tensor> x) {
        Map<Var, Tensor> env = new HashMap<>();
        Function<Var, Tensor> value = v -> env.containsKey(v) ? env.get(v) : x.apply(v);
        Fusions.Expansion e = ins.expand(v -> value.apply(v).type());
        for (Let l : e.lets()) env.put(l.var(), apply((Instr) l.rhs(), value));
        return e.results().stream().map(value).toList();
    }

    /** The tensor of an optional operand, or null when absent. */
    private static Tensor opt(Function<Var, Tensor> x, Optional<Var> v) { return v.isPresent() ? x.apply(v.get()) : null; }

    // ---- rounding and checks, shared by the families ------------------------------------------------

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

    static void check(boolean ok, String message) {
        if (!ok) throw new EvalError(message);
    }

    static int volume(String op, Shape s) {
        long v;
        try {
            v = s.vol();
        } catch (ArithmeticException e) {
            throw new EvalError(op + ": shape " + s + " is too large for the host");
        }
        check(v <= Integer.MAX_VALUE - 8, op + ": shape " + s + " is too large for the host");
        return (int) v;
    }

    static void requireFloating(String op, Tensor x) {
        check(x.isFloating(), op + ": the host runs " + op + " on F32 and F64, not " + x.dtype());
    }

    static void requireIndices(String op, Tensor idx) {
        check(idx.dtype() == DType.I64, op + ": indices must be I64, not " + idx.dtype());
    }

    static void requireAxis(String op, int axis, int rank) {
        check(axis >= 0 && axis < rank, op + ": axis " + axis + " out of range for rank " + rank);
    }

    static void sameType(String op, Tensor a, Tensor b) {
        check(a.type().equals(b.type()), op + ": operand types differ: " + a.type() + " and " + b.type());
    }

    static Tensor make(TensorType t, double[] floats) { return Tensor.ofFloats(t, floats); }

    static Tensor make(TensorType t, long[] ints) { return Tensor.ofInts(t, ints); }

    /** Product of dims [from, to). */
    static int prod(Shape s, int from, int to) {
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
    static int index(String what, Tensor idx, int flat, long bound) {
        long v = idx.ints()[flat];
        if (v < 0 || v >= bound)
            throw new EvalError(what + " index out of bounds: indices" + position(idx.shape(), flat)
                    + " = " + v + ", not in [0, " + bound + ")");
        return (int) v;
    }

    /** Checks every index first, so a trap happens before any output is written. */
    static void checkAll(String what, Tensor idx, long bound) {
        for (int i = 0; i < idx.size(); i++) index(what, idx, i, bound);
    }

    // ---- constants ----------------------------------------------------------------------------------

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
}
