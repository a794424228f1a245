package kina.ad;

import java.util.Optional;
import java.util.function.Function;
import kina.ir.Instr;
import kina.ir.Instr.*;
import kina.ir.Payload;
import kina.ir.Perm;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Var;

/**
 * The vocabulary as a reading sees it. {@code T} is what a value is in the reading: a
 * buffer in the eager reading (the oracle, kina.eval.Eager), a Var naming a new let in the recording
 * reading ({@link Recording}). A reading implements one primitive, {@link #apply}: an instruction
 * applied to the values of its operands. The typed methods below, one per instruction in
 * {@link Instr}'s order, build the instruction and call it; VJP rules and program builders speak
 * them, so a rule cannot tell which reading it runs under and the oracle and the recorded
 * gradient cannot drift. {@code input} is the exception: an input's value is supplied by name, so
 * only a recording reading can answer it.
 */
public interface Ops<T> {
    /** The type of a value of this reading. */
    TensorType type(T x);

    /**
     * The value of {@code ins} whose operands are the values {@code operand} gives for its Vars:
     * the one dispatch of a reading (the interpreter, the plan's generic kernel, the oracle and the
     * recording all go through it).
     */
    T apply(Instr ins, Function<Var, T> operand);

    /**
     * Gives a cotangent a readable name in the recording reading ({@code g_x}); the identity in
     * the eager reading. Called only by the reverse scan, never by rules.
     */
    default T named(T x, String name) { return x; }

    // ---- constants ------------------------------------------------------------------------
    /** An input of type {@code t} (recording readings only: its payload is supplied by name). */
    default T input(TensorType t) { return call(new Input(t)); }

    /** A literal payload, row-major. */
    default T literal(TensorType t, Payload p) { return call(new Literal(t, p)); }

    /** A tensor of type {@code t} with every element {@code value} (ones, zeros, −0.0 …). */
    default T fill(TensorType t, double value) { return call(new Fill(t, value)); }

    // ---- unary ----------------------------------------------------------------------------
    default T neg(T x) { return call(new Neg(X0), x); }
    default T exp(T x) { return call(new Exp(X0), x); }
    default T log(T x) { return call(new Log(X0), x); }
    default T sqrt(T x) { return call(new Sqrt(X0), x); }
    default T rsqrt(T x) { return call(new Rsqrt(X0), x); }
    default T tanh(T x) { return call(new Tanh(X0), x); }
    default T sigmoid(T x) { return call(new Sigmoid(X0), x); }
    default T reciprocal(T x) { return call(new Reciprocal(X0), x); }
    default T silu(T x) { return call(new Silu(X0), x); }
    default T gelu(T x) { return call(new Gelu(X0), x); }
    default T relu(T x) { return call(new Relu(X0), x); }
    default T softcap(T x, double cap) { return call(new Softcap(X0, cap), x); }
    default T argmax(T x, int axis) { return call(new ArgMax(X0, axis), x); }
    default T clamp(T x, long lo, long hi) { return call(new Clamp(X0, lo, hi), x); }
    default T requant(T x, int shift) { return call(new Requant(X0, shift), x); }

    // ---- binary ---------------------------------------------------------------------------
    default T add(T a, T b) { return call(new Add(X0, X1), a, b); }
    default T sub(T a, T b) { return call(new Sub(X0, X1), a, b); }
    default T mul(T a, T b) { return call(new Mul(X0, X1), a, b); }
    default T div(T a, T b) { return call(new Div(X0, X1), a, b); }
    default T maximum(T a, T b) { return call(new Maximum(X0, X1), a, b); }
    default T greater(T a, T b) { return call(new Greater(X0, X1), a, b); }
    default T select(T mask, T a, T b) { return call(new Select(X0, X1, X2), mask, a, b); }
    default T swiglu(T gate, T up) { return call(new Swiglu(X0, X1), gate, up); }

    // ---- contraction, shape, reduction ---------------------------------------------------
    /** σ++[M,K] @ σ++[K,N]. */
    default T matmul(T a, T b) { return call(new Matmul(X0, X1), a, b); }
    default T reshape(T x, Shape to) { return call(new Reshape(X0, to), x); }
    default T transpose(T x, Perm perm) { return call(new Transpose(X0, perm), x); }
    /** NumPy's broadcast: expand 1s, and new leading axes when {@code to} has more. */
    default T broadcast(T x, Shape to) { return call(new Broadcast(X0, to), x); }
    default T sum(T x, int axis, boolean keepDims) { return call(new Sum(X0, axis, keepDims), x); }

    // ---- fused row-wise -------------------------------------------------------------------
    default T logSoftmax(T x, int axis) { return call(new LogSoftmax(X0, axis), x); }
    default T softmax(T x, int axis) { return call(new Softmax(X0, axis), x); }
    default T rmsnorm(T x, Optional<T> weight, Optional<T> residual, double eps) {
        return call(new RmsNorm(X0, weight.map(_ -> X1), residual.map(_ -> X2), eps), x, weight.orElse(null), residual.orElse(null));
    }
    default T layernorm(T x, Optional<T> weight, Optional<T> bias, double eps) {
        return call(new LayerNorm(X0, weight.map(_ -> X1), bias.map(_ -> X2), eps), x, weight.orElse(null), bias.orElse(null));
    }
    default T l2norm(T x, double eps) { return call(new L2Norm(X0, eps), x); }
    /** Half-split rotary embedding; rope(g, cos, −sin) is its transpose. */
    default T rope(T x, T cos, T sin, int heads, int rotary, int start) {
        return call(new Rope(X0, X1, X2, heads, rotary, start), x, cos, sin);
    }

    // ---- attention ------------------------------------------------------------------------
    default T attention(T q, T k, T v, Optional<T> sinks, AttnOpts opts) {
        return call(new Attention(X0, X1, X2, sinks.map(_ -> X3), opts), q, k, v, sinks.orElse(null));
    }
    /** IR-internal: each row's log-sum-exp σ++[T, H], as attention's online softmax makes it (see {@link AttentionLse}). */
    default T attentionLse(T q, T k, Optional<T> sinks, AttnOpts opts) {
        return call(new AttentionLse(X0, X1, sinks.map(_ -> X2), opts), q, k, sinks.orElse(null));
    }
    /** IR-internal: exp(s − lse) at the attended pairs, σ++[H, T, L] (see {@link AttentionExp}). */
    default T attentionExp(T q, T k, T lse, AttnOpts opts) {
        return call(new AttentionExp(X0, X1, X2, opts), q, k, lse);
    }
    /** IR-internal: attention's blockwise cotangent of q, k or v (see {@link AttentionGrad}). */
    default T attentionGrad(T q, T k, T v, T g, T lse, T d, AttnOpts opts, AttentionGrad.Wrt wrt) {
        return call(new AttentionGrad(X0, X1, X2, X3, X4, X5, opts, wrt), q, k, v, g, lse, d);
    }
    /** IR-internal: attention's products over attended pairs (QK, PK, PQ; see {@link AttentionProduct}). */
    default T attentionProduct(T a, T b, AttnOpts opts, AttentionProduct.Form form) {
        return call(new AttentionProduct(X0, X1, opts, form), a, b);
    }

    // ---- indexing -------------------------------------------------------------------------
    default T takeAlongAxis(T values, T indices, int axis) { return call(new TakeAlongAxis(X0, X1, axis), values, indices); }
    default T gather(T values, T indices) { return call(new Gather(X0, X1), values, indices); }
    /** table [V, D] with rows ids (distinct) replaced by rows [n, D]. */
    default T setRows(T table, T ids, T rows) { return call(new SetRows(X0, X1, X2), table, ids, rows); }
    /** IR-internal: the adjoint of gather (duplicate indices add). */
    default T scatterAdd(T updates, T indices, TensorType dest) { return call(new ScatterAdd(X0, X1, dest), updates, indices); }
    /** IR-internal: the adjoint of take_along_axis (a select, no accumulation). */
    default T scatterAlongAxis(int axis, T updates, T indices, TensorType dest) {
        return call(new ScatterAlongAxis(axis, X0, X1, dest), updates, indices);
    }

    // ---- the typed methods' placeholders ------------------------------------------------------
    /** Placeholder operands of the instructions the typed methods build: {@code $k} stands for the k-th value given. */
    Var X0 = new Var("$0"), X1 = new Var("$1"), X2 = new Var("$2"), X3 = new Var("$3"), X4 = new Var("$4"), X5 = new Var("$5");

    /** {@code template} applied to {@code xs}: placeholder {@code $k} reads {@code xs[k]}. */
    @SuppressWarnings("unchecked")
    @SafeVarargs
    private T call(Instr template, T... xs) {
        return apply(template, v -> {
            int k = v.name().charAt(1) - '0';
            if (v.name().length() != 2 || v.name().charAt(0) != '$' || k < 0 || k >= xs.length || xs[k] == null)
                throw new IllegalStateException(template.op() + " reads " + v + ", which is not one of its " + xs.length + " operands");
            return xs[k];
        });
    }
}
