package kina.ad;

import java.util.Optional;
import kina.ir.Instr.AttnOpts;
import kina.ir.Perm;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * The recordable vocabulary: one method per instruction a VJP rule may speak (DESIGN §4).
 * {@code T} is what a value is in a reading: a buffer in the eager reading (the oracle,
 * kina.eval.Eager), a Var naming a new let in the recording reading ({@link Recording}).
 * Rules written against this interface cannot tell which reading they run under, so the oracle
 * and the recorded gradient cannot drift.
 */
public interface Ops<T> {
    /** The type of a value of this reading. */
    TensorType type(T x);

    /** A tensor of type {@code t} with every element {@code value} (ones, zeros, −0.0 …). */
    T fill(TensorType t, double value);

    T neg(T x);

    T exp(T x);

    T log(T x);

    T add(T a, T b);

    T sub(T a, T b);

    T mul(T a, T b);

    T div(T a, T b);

    /** σ++[M,K] @ σ++[K,N]. */
    T matmul(T a, T b);

    T reshape(T x, Shape to);

    T transpose(T x, Perm perm);

    /** Same-rank broadcast (expand 1s). */
    T broadcast(T x, Shape to);

    T sum(T x, int axis, boolean keepDims);

    T softmax(T x, int axis);

    T logSoftmax(T x, int axis);

    T takeAlongAxis(T values, T indices, int axis);

    T gather(T values, T indices);

    /** IR-internal: the adjoint of gather (Section 14 §7). */
    T scatterAdd(T updates, T indices, TensorType dest);

    /** IR-internal: the adjoint of take_along_axis (Section 10 §7). */
    T scatterAlongAxis(int axis, T updates, T indices, TensorType dest);

    T sqrt(T x);

    T rsqrt(T x);

    T tanh(T x);

    T sigmoid(T x);

    T reciprocal(T x);

    T silu(T x);

    T gelu(T x);

    T relu(T x);

    T softcap(T x, double cap);

    T argmax(T x, int axis);

    T clamp(T x, long lo, long hi);

    T requant(T x, int shift);

    T maximum(T a, T b);

    T greater(T a, T b);

    T select(T mask, T a, T b);

    T swiglu(T gate, T up);

    T rmsnorm(T x, Optional<T> weight, Optional<T> residual, double eps);

    T layernorm(T x, Optional<T> weight, Optional<T> bias, double eps);

    T l2norm(T x, double eps);

    /** Half-split rotary embedding; rope(g, cos, −sin) is its transpose. */
    T rope(T x, T cos, T sin, int heads, int rotary, int start);

    T attention(T q, T k, T v, Optional<T> sinks, AttnOpts opts);

    /** table [V, D] with rows ids (distinct) replaced by rows [n, D]. */
    T setRows(T table, T ids, T rows);

    /** IR-internal: the attention probabilities (or sink shares), the adjoint vocabulary of attention. */
    T attentionProbs(T q, T k, Optional<T> sinks, AttnOpts opts, boolean sinkColumn);

    /** IR-internal: attention's products over attended pairs (QK, PK, PQ; see {@link kina.ir.Instr.AttentionProduct}). */
    T attentionProduct(T a, T b, AttnOpts opts, kina.ir.Instr.AttentionProduct.Form form);

    /**
     * Gives a cotangent a readable name in the recording reading ({@code g_x}); the identity in
     * the eager reading. Called only by the reverse scan, never by rules.
     */
    default T named(T x, String name) { return x; }
}
