package kina.ir;

import java.util.List;
import java.util.Optional;

/**
 * The tensor instruction vocabulary, one record per instruction, grouped by family;
 * docs/language.md documents each (typing, VJP, an example). Every switch over Instr (type
 * rules, kernels, VJP rules, printer, MLIR lowering) lists every case and has no {@code default},
 * so adding an instruction fails to compile until each stage handles it or refuses it by name.
 *
 * <p>Operands are Vars; static arguments (axis, perm, shape, dest type) are attributes.
 */
public sealed interface Instr extends Rhs {

    /**
     * The operands, in the order VJP rules answer cotangents for them: the record's components of
     * type Var, {@code Optional<Var>} (when present) and {@code List<Var>}, in component order
     * ({@link Instrs#operands}).
     */
    default List<Var> operands() { return Instrs.operands(this); }

    /**
     * The surface name of the instruction, used in messages and printed programs
     * ({@code log_softmax}, {@code matmul}): the record's name in snake_case but for the few
     * {@link Instrs#op} lists, or (attention's adjoints) its form's.
     */
    default String op() { return Instrs.op(getClass()); }

    // ---- families: a stage that treats a family alike writes one case for it -----------------
    /** No operands: an input supplied at run time, a literal payload, a fill. */
    sealed interface Constant extends Instr {}

    /** Elementwise on one floating operand (relu also on I64), same type out. */
    sealed interface Unary extends Instr {}

    /** Elementwise on operands of one shape (select's mask I1), same shape out. */
    sealed interface Binary extends Instr {}

    /** Integer or index results that are piecewise constant: refused by reverse mode. */
    sealed interface Discrete extends Instr {}

    /** Contractions (matmul). */
    sealed interface Contraction extends Instr {}

    /** Moves or copies elements without arithmetic: reshape, transpose, broadcast. */
    sealed interface Layout extends Instr {}

    /** Reductions over one axis. */
    sealed interface Reduction extends Instr {}

    /** Row-wise fused kernels over one axis (softmax, norms, rope). */
    sealed interface RowWise extends Instr {}

    /** Causal attention and its IR-internal adjoint vocabulary. */
    sealed interface Attend extends Instr {}

    /** Reads or writes by I64 indices, which are checked at run time (they can trap). */
    sealed interface Indexing extends Instr {}

    /**
     * The plan's fusions: IR-internal instructions that only the planner's rewrite table makes,
     * after AD. Each stands for a composition of the instructions above, its {@link #expand
     * expansion}, which is its meaning: its type is the expansion's, and its reference kernel runs
     * the expansion in order (so its bits are the composition's). One with several results is
     * bound by a destructuring let. The typed Ops vocabulary does not include them.
     */
    sealed interface Fused extends Instr {
        /** How many values it makes (its results, in the order its doc gives). */
        int results();

        /** The let chain of unfused instructions it stands for ({@link Fusions#expand}). */
        default Fusions.Expansion expand(java.util.function.Function<Var, TensorType> typeOf) { return Fusions.expand(this, typeOf); }
    }

    // ---- constants ------------------------------------------------------------------------
    /** {@code tensor<T, σ, @p>}: an input whose payload is supplied at run time, by the let's name. */
    record Input(TensorType type) implements Constant {}

    /** {@code tensor<T, σ, @p> payload { … }}: a literal, row-major. */
    record Literal(TensorType type, Payload payload) implements Constant {}

    /** {@code fill(T, v)} (printed {@code ones(T)} / {@code zeros(T)} for 1 and +0): every element v. */
    record Fill(TensorType type, double value) implements Constant {
        @Override public boolean equals(Object o) {
            return o instanceof Fill f && f.type.equals(type)
                    && Double.doubleToRawLongBits(f.value) == Double.doubleToRawLongBits(value);
        }

        @Override public int hashCode() { return type.hashCode() * 31 + Double.hashCode(value); }
    }

    // ---- unary ----------------------------------------------------------------------------
    /** {@code -x}. */
    record Neg(Var x) implements Unary {}

    /** {@code x.exp()}. */
    record Exp(Var x) implements Unary {}

    /** {@code x.log()}. */
    record Log(Var x) implements Unary {}

    /** {@code x.sqrt()}: √x. */
    record Sqrt(Var x) implements Unary {}

    /** {@code x.rsqrt()}: 1/√x (the root rounded, then the reciprocal). */
    record Rsqrt(Var x) implements Unary {}

    /** {@code x.tanh()}. */
    record Tanh(Var x) implements Unary {}

    /** {@code x.sigmoid()}: 1/(1+e^{−x}). */
    record Sigmoid(Var x) implements Unary {}

    /** {@code x.reciprocal()}: 1/x. */
    record Reciprocal(Var x) implements Unary {}

    /** {@code x.silu()}: x·σ(x). */
    record Silu(Var x) implements Unary {}

    /** {@code x.gelu()}: tanh approximation ½x(1 + tanh(√(2/π)(x + 0.044715x³))). */
    record Gelu(Var x) implements Unary {
        /** √(2/π) and 0.044715, the constants of the tanh approximation. */
        public static final double GELU_C = 0.7978845608028654, GELU_K = 0.044715;
    }

    /** {@code x.relu()}: max(x, 0); on I64 the integer ReLU (no gradient). */
    record Relu(Var x) implements Unary {}

    /** {@code x.softcap(cap=C)}: C·tanh(x/C), C &gt; 0. */
    record Softcap(Var x, double cap) implements Unary {}

    /** {@code x.argmax(axis=k)} → I64, the axis dropped; the first largest index (NaN counts as largest). */
    record ArgMax(Var x, int axis) implements Discrete {}

    /** {@code x.clamp(lo=a, hi=b)}: I64 saturation to [a, b] (integer arithmetic, no gradient). */
    record Clamp(Var x, long lo, long hi) implements Discrete {}

    /** {@code x.requant(shift=s)}: I64 floored shift ⌊x / 2^s⌋ (integer arithmetic, no gradient). */
    record Requant(Var x, int shift) implements Discrete {}

    // ---- binary (same shape; broadcasting is an explicit instruction) ----------------------
    /** {@code a + b}. */
    record Add(Var a, Var b) implements Binary {}

    /** {@code a - b}. */
    record Sub(Var a, Var b) implements Binary {}

    /** {@code a * b}, elementwise. */
    record Mul(Var a, Var b) implements Binary {}

    /** {@code a / b}, elementwise. */
    record Div(Var a, Var b) implements Binary {}

    /** {@code a.maximum(b)}, elementwise; the VJP gives ties to a. */
    record Maximum(Var a, Var b) implements Binary {}

    /** {@code a.greater(b)} → I1: a &gt; b elementwise (a mask; no cotangent). */
    record Greater(Var a, Var b) implements Binary {}

    /** {@code mask.select(a, b)}: a where mask (I1) is 1, else b. */
    record Select(Var mask, Var a, Var b) implements Binary {}

    /** {@code gate.swiglu(up)}: silu(gate) ⊙ up, same shapes. */
    record Swiglu(Var gate, Var up) implements Binary {}

    // ---- contraction ----------------------------------------------------------------------
    /** {@code a @ b}: σ++[M,K] @ σ++[K,N] → σ++[M,N], rank ≥ 2, no implicit broadcast. */
    record Matmul(Var a, Var b) implements Contraction {}

    // ---- shape ----------------------------------------------------------------------------
    /** {@code x.reshape([…])}: volume-preserving, row-major order kept. */
    record Reshape(Var x, Shape to) implements Layout {}

    /** {@code x.transpose([…])}: output axis i is input axis perm[i]. */
    record Transpose(Var x, Perm perm) implements Layout {}

    /**
     * {@code x.broadcast([…])} as NumPy broadcasts: x's dims align with the last dims of the target,
     * each 1 (expanded) or equal; the target's leading dims are new axes ([M, K] → [B, M, K]).
     */
    record Broadcast(Var x, Shape to) implements Layout {}

    // ---- reduction ------------------------------------------------------------------------
    /** {@code x.sum(axis=k, keepdims=b)}: sum over one axis, in increasing index order. */
    record Sum(Var x, int axis, boolean keepDims) implements Reduction {}

    // ---- fused row-wise -------------------------------------------------------------------
    /** {@code x.log_softmax(axis=k)}: x − max − log Σ exp(x − max). */
    record LogSoftmax(Var x, int axis) implements RowWise {}

    /** {@code x.softmax(axis=k)}: exp(x − max) / Σ exp(x − max). */
    record Softmax(Var x, int axis) implements RowWise {}

    /**
     * {@code x.rmsnorm([w[, r]], eps=e)}: over the last axis (width D), u = x + r (when r is
     * given), y = u · rsqrt(mean_D(u²) + eps) · w (w [D], absent = 1).
     */
    record RmsNorm(Var x, Optional<Var> weight, Optional<Var> residual, double eps) implements RowWise {}

    /** {@code x.layernorm([w[, b]], eps=e)}: over the last axis, (x − μ)·rsqrt(var + eps)·w + b. */
    record LayerNorm(Var x, Optional<Var> weight, Optional<Var> bias, double eps) implements RowWise {}

    /** {@code x.l2norm(eps=e)}: over the last axis, x / √(Σ x² + eps). */
    record L2Norm(Var x, double eps) implements RowWise {}

    /**
     * {@code x.rope(cos, sin, heads=H, rotary=R, start=P)}: half-split rotation of the first R dims
     * of each head (R = 0 means the whole head width); row t uses table row P + t.
     */
    record Rope(Var x, Var cos, Var sin, int heads, int rotary, int start) implements RowWise {}

    /**
     * The static options of causal attention: scale NaN = 1/√hd; softcap, window, chunk 0 = none;
     * start P: query row r attends key positions j ≤ P + r.
     */
    record AttnOpts(int heads, int kvHeads, double scale, double softcap, int window, int chunk, int start) {
        /**
         * Keys per block of attention's online softmax: blocks start at multiples of it (key
         * positions), and a row's maximum, sum and output are rescaled between the blocks it
         * attends. Part of the bits, so a constant of the language, not of the machine.
         */
        public static final int KEY_BLOCK = 64;

        /** The score scale α for head width hd: {@code scale}, or 1/√hd when it is NaN (before rounding to the dtype). */
        public double alpha(long hd) { return Double.isNaN(scale) ? 1.0 / StrictMath.sqrt(hd) : scale; }

        /** The first key position query row {@code row} attends ({@link Attention}'s lo); may exceed the last. */
        public long lo(int row) { return lo(start, window, chunk, row); }

        /** The last key position query row {@code row} attends among l keys: min(start + row, l − 1). */
        public int hi(int row, int l) { return hi(start, row, l); }

        /** hi for the given start (the plan's kernels share it). */
        public static int hi(int start, int row, int l) { return (int) Math.min((long) start + row, l - 1L); }

        /** lo for the given start, window and chunk: the mask rule in one place (the plan's kernels share it). */
        public static long lo(int start, int window, int chunk, int row) {
            long last = (long) start + row;
            return window > 0 ? Math.max(0, last - window + 1) : chunk > 0 ? last / chunk * chunk : 0;
        }
    }

    /**
     * {@code q.attention(k, v[, sinks], heads=H, kv_heads=KV, scale=s, softcap=c, window=W, chunk=C, start=P)}:
     * causal grouped-query attention. q σ++[T, H·hd], k, v σ++[L, KV·hd], sinks [H] → σ++[T, H·hd];
     * query head h reads kv head h / (H/KV). Row r attends key positions j with lo ≤ j ≤ min(P + r, L − 1),
     * lo = 0, or max(0, P + r − W + 1) with a window, or ⌊(P + r)/C⌋·C with a chunk (not both). Scores
     * α·q·k (α = s, default 1/√hd), then c·tanh(·/c) with a softcap; softmax over the attended scores
     * and the head's sink logit (which joins the denominator and carries no value); out = Σ p_j v_j.
     * A row that attends no position outputs +0.0 (its gradients are 0; with a sink, p_σ = 1).
     * The softmax is online (FlashAttention's): over the row's key blocks ({@link AttnOpts#KEY_BLOCK})
     * in order, a running maximum m, sum l and output are kept and rescaled by exp(m − m') when a
     * block raises the maximum to m', so no value is as long as a row of scores; its reference
     * kernel (kina.eval.AttentionKernels.attention) states the order.
     */
    record Attention(Var q, Var k, Var v, Optional<Var> sinks, AttnOpts opts) implements Attend {}

    // ---- indexing -------------------------------------------------------------------------
    /** {@code values.take_along_axis(indices, axis=k)}: indices drop the axis. */
    record TakeAlongAxis(Var values, Var indices, int axis) implements Indexing {}

    /**
     * {@code values.gather(indices)}: values [V,D], I64 indices σ → σ++[D]. The
     * surface {@code table.row(i)} (one row by an I64 [1] index, 0-based,
     * → [1, D]) parses to this instruction and prints as {@code gather}.
     */
    record Gather(Var values, Var indices) implements Indexing {}

    /**
     * {@code table.set_rows(ids, rows)}: table [V, D], I64 ids [n] (distinct), rows [n, D] → the
     * table with row ids[k] replaced by rows[k].
     */
    record SetRows(Var table, Var ids, Var rows) implements Indexing {}

    // ---- IR-internal adjoints (no surface form) ---------------------------------------------
    /** ScatterAdd(updates σ++[D], indices I64 σ, dest [V,D]): duplicates add, in row-major order of the indices. */
    record ScatterAdd(Var updates, Var indices, TensorType dest) implements Indexing {}

    /** ScatterAlongAxis(axis, updates ρ, indices I64 ρ, dest σ, rank ≥ 1): a select, no accumulation. */
    record ScatterAlongAxis(int axis, Var updates, Var indices, TensorType dest) implements Indexing {}

    /**
     * {@code %attention_lse(q, k[, sinks], …)}: the log-sum-exp of each row's attended scores and
     * its head's sink logit, σ++[T, H] (row t, head h), as {@link Attention}'s online softmax
     * makes it: lse = m + log(l) with m the running maximum and l the running sum of
     * exp(s − m) over the key blocks; −∞ for a row that attends nothing and has no sink. The
     * attention backward's probabilities are exp(s − lse). The adjoint vocabulary of attention.
     */
    record AttentionLse(Var q, Var k, Optional<Var> sinks, AttnOpts opts) implements Attend {}

    /**
     * {@code %attention_exp(q, k, lse, …)}: exp(s − lse) at each attended pair (row t, key j) of
     * head h, +0.0 at every other pair, σ++[H, T, L]; s the pair's score (as {@link Attention}),
     * lse σ++[T, H]. With lse from {@link AttentionLse} these are the attention probabilities,
     * materialised: only the rules of second derivatives record it.
     */
    record AttentionExp(Var q, Var k, Var lse, AttnOpts opts) implements Attend {}

    /**
     * {@code %attention_dq / _dk / _dv(q, k, v, g, lse, d, …)}: attention's cotangents computed
     * blockwise (FlashAttention-2), with no [H, T, L] value: per attended pair the probability
     * p = exp(s − lse), dp = g_t·v_j, ds = p (dp − d), du = ds (1 − tanh²(u/C)) with a softcap C
     * (u = α q·k), else ds; dq_t = α Σ_j du k_j, dk_j = α Σ_{h, t} du q_t, dv_j = Σ_{h, t} p g_t
     * over the heads h of kv head j's group and the rows t that attend j. q, g σ++[T, H·hd]; k, v
     * σ++[L, KV·hd]; lse and d (= Σ_e g ⊙ out per head) σ++[T, H]. With lse = attention_lse and
     * out = attention(q, k, v, sinks) these are the cotangents of q, k and v for the output
     * cotangent g; as written they are functions of their six operands (dv reads neither v nor d).
     * IR-internal: made by transform_ad.
     */
    record AttentionGrad(Var q, Var k, Var v, Var g, Var lse, Var d, AttnOpts opts, Wrt wrt) implements Attend {
        /** Which cotangent; its surface name is {@link #op}. */
        public enum Wrt {
            Q("attention_dq"), K("attention_dk"), V("attention_dv");
            private final String op;
            Wrt(String op) { this.op = op; }
            public String op() { return op; }
        }

        @Override public String op() { return wrt.op(); }
    }

    /**
     * AttentionProduct(a, b, opts, form): the matrix products of attention's adjoint, summed over
     * attended pairs (row t, key j) only, as {@link Attention} masks them: lo(t) ≤ j ≤ min(start + t, L − 1).
     * T rows, L keys, H heads, KV kv heads of width hd; head h reads kv head h / (H/KV).
     * <ul>
     * <li>QK: a σ++[T, H·hd], b σ++[L, KV·hd] → σ++[H, T, L]: y[h,t,j] = Σ_e a[t,h,e]·b[j,kv(h),e] where
     *     t attends j, else +0.0 (scores q·kᵀ, or dP = g·vᵀ);</li>
     * <li>PK: a σ++[H, T, L], b σ++[L, KV·hd] → σ++[T, H·hd]: y[t,h,e] = Σ_j a[h,t,j]·b[j,kv(h),e] over the
     *     j that t attends (p·v, or dQ = dS·k);</li>
     * <li>PQ: a σ++[H, T, L], b σ++[T, H·hd] → σ++[L, KV·hd]: y[j,c,e] = Σ_h Σ_t a[h,t,j]·b[t,h,e] over the
     *     heads h of kv head c, then the rows t that attend j (dV = Pᵀ·g, dK = dSᵀ·q).</li>
     * </ul>
     * Each sum is one fma chain from −0.0 in the order written (e; j; h then t, increasing), one rounding
     * per term, as matmul; an empty sum is +0.0. Entries of a at pairs that are not attended are never
     * read. Unscaled: rules apply α themselves. IR-internal: made by transform_ad; the three
     * forms are closed under the VJP (each form's adjoints are the other two).
     */
    record AttentionProduct(Var a, Var b, AttnOpts opts, Form form) implements Attend {
        /** Which product; its surface name is {@link #op}. */
        public enum Form {
            QK("attention_qk"), PK("attention_pk"), PQ("attention_pq");
            private final String op;
            Form(String op) { this.op = op; }
            public String op() { return op; }
        }

        @Override public String op() { return form.op(); }
    }

    // ---- the plan's fusions ----------------------------------------------------------------
    /**
     * {@code %matmul_t(a, b, transpose_a=…, transpose_b=…)}: a @ b with either operand's last two
     * axes swapped first, the composition {@code a.transpose(…) @ b} with the transpose not materialised.
     */
    record MatmulT(Var a, Var b, boolean transA, boolean transB) implements Fused {
        public int results() { return 1; }
    }

    /**
     * {@code %matmul_shared(a, b₁, …, bₙ, transpose_a=…, transpose_b=…)}: the n ≥ 2 products
     * a @ bᵢ (each as {@link MatmulT}) of one left operand, which is packed once for all of them;
     * results in the order of the bᵢ.
     */
    record MatmulShared(Var a, List<Var> bs, boolean transA, boolean transB) implements Fused {
        public MatmulShared { bs = List.copyOf(bs); }
        public int results() { return bs.size(); }
    }

    /**
     * {@code %softmax_grad(p, dp, row_sums=…)}: the softmax VJP over the last axis as one row pass,
     * ds = p ⊙ (dp − d) with d = Σ_last (p ⊙ dp) (keepdims, summed in increasing index, broadcast);
     * with row_sums also d. Results: ds[, d].
     */
    record SoftmaxGrad(Var p, Var dp, boolean rowSums) implements Fused {
        public int results() { return rowSums ? 2 : 1; }
    }

    /**
     * {@code %attention_with_lse(q, k, v[, sinks], …)}: attention(q, k, v[, sinks]) and, from the same
     * online softmax, attention_lse(q, k[, sinks]). Results: out, lse.
     */
    record AttentionWithLse(Var q, Var k, Var v, Optional<Var> sinks, AttnOpts opts) implements Fused {
        public int results() { return 2; }
    }

    /**
     * {@code %attention_backward(q, k, v, g, lse, d, …, dq=…, dk=…, dv=…)}: the attention_dq,
     * attention_dk and attention_dv of one set of operands, those flagged, from one pass over the
     * attended pairs (each pair's p and ds computed once). Results: dq[, dk][, dv], those flagged.
     */
    record AttentionBackward(Var q, Var k, Var v, Var g, Var lse, Var d, AttnOpts opts, boolean dq, boolean dk, boolean dv)
            implements Fused {
        public int results() { return (dq ? 1 : 0) + (dk ? 1 : 0) + (dv ? 1 : 0); }
    }

    /** {@code %swiglu_sigmoid(gate, up)}: (gate.swiglu(up), gate.sigmoid()), σ computed once. */
    record SwigluSigmoid(Var gate, Var up) implements Fused {
        public int results() { return 2; }
    }

    /**
     * {@code %elementwise(x₁, …, xₙ, fn(…) -> … { … })}: the fn applied to the inputs, a chain of
     * elementwise instructions (neg, sqrt, add, sub, mul, div, maximum) and broadcasts of its
     * parameters that the plan runs as one pass over the elements; its results are the fn's.
     */
    record Elementwise(List<Var> inputs, Rhs.Fn body) implements Fused {
        public Elementwise { inputs = List.copyOf(inputs); }
        public int results() { return body.result() instanceof Type.Tuple t ? t.elems().size() : 1; }
    }
}
