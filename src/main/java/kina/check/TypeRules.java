package kina.check;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import kina.ir.DType;
import kina.ir.Fusions;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Payload;
import kina.ir.Perm;
import kina.ir.Placement;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/**
 * The type rule of every instruction (docs/language.md states each), one switch, no default.
 * Pure and position-free: the checker wraps a {@link Mismatch} into a {@link TypeError} naming the
 * let; kina.ad calls {@link #infer} directly to type the lets transform_ad records.
 *
 * <p>Shape equality is structural; there is no implicit broadcast. {@link #infer} takes axes and
 * permutation entries in [0, rank); {@link #normalise} first maps NumPy's negative ones (−1 the
 * last axis) there, which is what the checker does, so checked programs carry and print only
 * non-negative axes.
 */
public final class TypeRules {
    private TypeRules() {}

    /** A violated type rule: {@link #op()} is the instruction, the message says what, with the types. */
    public static final class Mismatch extends RuntimeException {
        private final String op;

        public Mismatch(String op, String what) {
            super(what);
            this.op = op;
        }

        /** The surface name of the instruction whose rule failed. */
        public String op() { return op; }

        /** {@code op: what}, e.g. {@code scatter_add: checked device lowering is not available}. */
        public String describe() { return op + ": " + getMessage(); }
    }

    /**
     * {@code ins} with every negative axis or permutation entry k in [−rank, 0) replaced by k + rank
     * (NumPy's convention: −1 is the last axis), the rank being that of the operand the axis indexes
     * (a scatter_along_axis's dest). Anything else, out-of-range values included, passes through for
     * {@link #infer} to refuse by name.
     */
    public static Instr normalise(Instr ins, Function<Var, TensorType> typeOf) {
        if (ins instanceof Instr.Sum(var x, var axis, var keep) && axis < 0)
            return new Instr.Sum(x, fromEnd(axis, typeOf.apply(x).rank()), keep);
        if (ins instanceof Instr.Softmax(var x, var axis) && axis < 0)
            return new Instr.Softmax(x, fromEnd(axis, typeOf.apply(x).rank()));
        if (ins instanceof Instr.LogSoftmax(var x, var axis) && axis < 0)
            return new Instr.LogSoftmax(x, fromEnd(axis, typeOf.apply(x).rank()));
        if (ins instanceof Instr.ArgMax(var x, var axis) && axis < 0)
            return new Instr.ArgMax(x, fromEnd(axis, typeOf.apply(x).rank()));
        if (ins instanceof Instr.TakeAlongAxis(var v, var i, var axis) && axis < 0)
            return new Instr.TakeAlongAxis(v, i, fromEnd(axis, typeOf.apply(v).rank()));
        if (ins instanceof Instr.ScatterAlongAxis(var axis, var u, var i, var dest) && axis < 0)
            return new Instr.ScatterAlongAxis(fromEnd(axis, dest.rank()), u, i, dest);
        if (ins instanceof Instr.Transpose(var x, var perm)) {
            int r = typeOf.apply(x).rank();
            int[] p = perm.axes();
            boolean changed = false;
            for (int k = 0; k < p.length; k++) {
                int q = fromEnd(p[k], r);
                changed |= q != p[k];
                p[k] = q;
            }
            if (changed) return new Instr.Transpose(x, new Perm(p));
        }
        return ins;
    }

    /** k + rank for k in [−rank, 0), else k. */
    private static int fromEnd(int k, int rank) { return k < 0 && k >= -rank ? k + rank : k; }

    /**
     * The result type of {@code ins}, given the types of its operands.
     *
     * @throws Mismatch when a premise of the rule fails
     */
    public static TensorType infer(Instr ins, Function<Var, TensorType> typeOf) {
        if (ins instanceof Instr.Fused f) {
            List<TensorType> ts = fused(f, typeOf);
            if (ts.size() != 1) throw new Mismatch(ins.op(), "makes " + ts.size() + " values: bind them with let ( … ) =");
            return ts.getFirst();
        }
        return single(ins, typeOf);
    }

    /**
     * The type of {@code ins}'s value: its tensor type, or a tuple of them for a fusion with
     * several results (bound by a destructuring let).
     *
     * @throws Mismatch when a premise of the rule fails
     */
    public static Type result(Instr ins, Function<Var, TensorType> typeOf) {
        List<TensorType> ts = results(ins, typeOf);
        return ts.size() == 1 ? ts.getFirst() : new Type.Tuple(List.copyOf(ts));
    }

    /** The types of {@code ins}'s values, in order: one for every instruction but a fusion with several results. */
    public static List<TensorType> results(Instr ins, Function<Var, TensorType> typeOf) {
        return ins instanceof Instr.Fused f ? fused(f, typeOf) : List.of(single(ins, typeOf));
    }

    private static TensorType single(Instr ins, Function<Var, TensorType> typeOf) {
        String op = ins.op();
        return switch (ins) {
            // ---- constants
            case Instr.Input(var t) -> { volume(op, t.shape()); yield t; }
            case Instr.Literal(var t, var payload) -> literal(op, t, payload);
            case Instr.Fill(var t, var v) -> {
                volume(op, t.shape());
                if (t.dtype().discrete()) integral(op, t.dtype(), v, "fill value " + fmt(v));
                yield t;
            }
            // ---- unary
            case Instr.Neg(var x) -> floating(op, typeOf.apply(x));
            case Instr.Exp(var x) -> floating(op, typeOf.apply(x));
            case Instr.Log(var x) -> floating(op, typeOf.apply(x));
            case Instr.Sqrt(var x) -> floating(op, typeOf.apply(x));
            case Instr.Rsqrt(var x) -> floating(op, typeOf.apply(x));
            case Instr.Tanh(var x) -> floating(op, typeOf.apply(x));
            case Instr.Sigmoid(var x) -> floating(op, typeOf.apply(x));
            case Instr.Reciprocal(var x) -> floating(op, typeOf.apply(x));
            case Instr.Silu(var x) -> floating(op, typeOf.apply(x));
            case Instr.Gelu(var x) -> floating(op, typeOf.apply(x));
            case Instr.Relu(var x) -> {
                TensorType t = typeOf.apply(x);
                if (!t.dtype().floating() && t.dtype() != DType.I64) throw new Mismatch(op, "needs a floating or I64 operand, got " + t);
                yield t;
            }
            case Instr.Softcap(var x, var cap) -> {
                if (!(cap > 0) || Double.isInfinite(cap)) throw new Mismatch(op, "cap must be finite and > 0, got " + fmt(cap));
                yield floating(op, typeOf.apply(x));
            }
            case Instr.ArgMax(var x, var axis) -> {
                TensorType t = floating(op, typeOf.apply(x));
                axis(op, t, axis);
                yield new TensorType(DType.I64, t.shape().drop(axis), t.placement());
            }
            case Instr.Clamp(var x, var lo, var hi) -> {
                if (lo > hi) throw new Mismatch(op, "lo " + lo + " > hi " + hi);
                yield integer(op, typeOf.apply(x));
            }
            case Instr.Requant(var x, var shift) -> {
                if (shift < 0 || shift > 62) throw new Mismatch(op, "shift must be in [0, 62], got " + shift);
                yield integer(op, typeOf.apply(x));
            }
            // ---- binary
            case Instr.Add(var a, var b) -> elementwise(op, "+", typeOf.apply(a), typeOf.apply(b));
            case Instr.Sub(var a, var b) -> elementwise(op, "-", typeOf.apply(a), typeOf.apply(b));
            case Instr.Mul(var a, var b) -> elementwise(op, "*", typeOf.apply(a), typeOf.apply(b));
            case Instr.Div(var a, var b) -> elementwise(op, "/", typeOf.apply(a), typeOf.apply(b));
            case Instr.Maximum(var a, var b) -> elementwise(op, "maximum", typeOf.apply(a), typeOf.apply(b));
            case Instr.Swiglu(var g, var u) -> elementwise(op, "swiglu", typeOf.apply(g), typeOf.apply(u));
            case Instr.Greater(var a, var b) -> elementwise(op, ">", typeOf.apply(a), typeOf.apply(b)).withDType(DType.I1);
            case Instr.Select(var m, var a, var b) -> {
                TensorType t = elementwise(op, "select", typeOf.apply(a), typeOf.apply(b)), mt = typeOf.apply(m);
                if (mt.dtype() != DType.I1 || !mt.shape().equals(t.shape()) || mt.placement() != t.placement())
                    throw new Mismatch(op, "mask must be I1 of the operands' shape and placement: mask " + mt + ", operands " + t);
                yield t;
            }
            // ---- contraction
            case Instr.Matmul(var a, var b) -> matmul(op, typeOf.apply(a), typeOf.apply(b));
            // ---- shape
            case Instr.Reshape(var x, var to) -> reshape(op, typeOf.apply(x), to);
            case Instr.Transpose(var x, var perm) -> transpose(op, typeOf.apply(x), perm);
            case Instr.Broadcast(var x, var to) -> broadcast(op, typeOf.apply(x), to);
            // ---- reduction
            case Instr.Sum(var x, var axis, var keepDims) -> {
                TensorType t = typeOf.apply(x);
                axis(op, t, axis);
                yield t.withShape(keepDims ? t.shape().with(axis, 1) : t.shape().drop(axis));
            }
            // ---- fused row-wise
            case Instr.LogSoftmax(var x, var axis) -> { TensorType t = floating(op, typeOf.apply(x)); axis(op, t, axis); yield t; }
            case Instr.Softmax(var x, var axis) -> { TensorType t = floating(op, typeOf.apply(x)); axis(op, t, axis); yield t; }
            case Instr.RmsNorm(var x, var w, var r, var eps) -> {
                TensorType t = rowwise(op, typeOf.apply(x), eps);
                if (r.isPresent() && w.isEmpty()) throw new Mismatch(op, "a residual needs a weight (x.rmsnorm(w, r, eps=…))");
                w.ifPresent(v -> vector(op, "weight", t, typeOf.apply(v)));
                r.ifPresent(v -> { if (!typeOf.apply(v).equals(t)) throw new Mismatch(op, "residual must have x's type " + t + ", got " + typeOf.apply(v)); });
                yield t;
            }
            case Instr.LayerNorm(var x, var w, var b, var eps) -> {
                TensorType t = rowwise(op, typeOf.apply(x), eps);
                if (b.isPresent() && w.isEmpty()) throw new Mismatch(op, "a bias needs a weight (x.layernorm(w, b, eps=…))");
                w.ifPresent(v -> vector(op, "weight", t, typeOf.apply(v)));
                b.ifPresent(v -> vector(op, "bias", t, typeOf.apply(v)));
                yield t;
            }
            case Instr.L2Norm(var x, var eps) -> rowwise(op, typeOf.apply(x), eps);
            case Instr.Rope(var x, var c, var sn, var heads, var rotary, var start) ->
                    rope(op, typeOf.apply(x), typeOf.apply(c), typeOf.apply(sn), heads, rotary, start);
            case Instr.Attention(var q, var k, var v, var sinks, var o) -> {
                TensorType t = attention(op, typeOf.apply(q), typeOf.apply(k), sinks.map(typeOf), o);
                if (!typeOf.apply(v).equals(typeOf.apply(k)))
                    throw new Mismatch(op, "v must have k's type " + typeOf.apply(k) + ", got " + typeOf.apply(v));
                yield t;
            }
            // ---- indexing
            case Instr.TakeAlongAxis(var v, var i, var axis) -> takeAlongAxis(op, typeOf.apply(v), typeOf.apply(i), axis);
            case Instr.Gather(var v, var i) -> gather(op, typeOf.apply(v), typeOf.apply(i));
            case Instr.SetRows(var t, var i, var rows) -> setRows(op, typeOf.apply(t), typeOf.apply(i), typeOf.apply(rows));
            // ---- IR-internal adjoints
            case Instr.ScatterAdd(var u, var i, var dest) -> scatterAdd(op, typeOf.apply(u), typeOf.apply(i), dest);
            case Instr.ScatterAlongAxis(var axis, var u, var i, var dest) ->
                    scatterAlongAxis(op, axis, typeOf.apply(u), typeOf.apply(i), dest);
            case Instr.AttentionLse(var q, var k, var sinks, var o) -> rowHeads(attention(op, typeOf.apply(q), typeOf.apply(k), sinks.map(typeOf), o), o);
            case Instr.AttentionExp(var q, var k, var lse, var o) -> {
                TensorType t = attention(op, typeOf.apply(q), typeOf.apply(k), java.util.Optional.empty(), o);
                operandOf(op, "lse", rowHeads(t, o), typeOf.apply(lse));
                Shape qs = t.shape();
                int r = qs.rank();
                yield t.withShape(qs.prefix(r - 2).concat(o.heads(), qs.dim(r - 2), typeOf.apply(k).shape().dim(r - 2)));
            }
            case Instr.AttentionGrad(var q, var k, var v, var g, var lse, var d, var o, var wrt) ->
                    attentionGrad(op, q, k, v, g, lse, d, o, typeOf).get(wrt.ordinal());
            case Instr.AttentionProduct(var a, var b, var o, var form) -> attentionProduct(op, typeOf.apply(a), typeOf.apply(b), o, form);
            case Instr.Fused f -> throw new IllegalArgumentException(f.op() + " is a fusion: TypeRules.results");
        };
    }

    // ---- the plan's fusions: each the type of the composition it stands for ------------------

    /**
     * The types of a fusion's values: its own premises (those its expansion does not state), then
     * the types of its expansion's results ({@link Instr.Fused#expand}), each let typed by its
     * instruction's rule; a premise or rule that fails names the fusion.
     */
    private static List<TensorType> fused(Instr.Fused ins, Function<Var, TensorType> typeOf) {
        String op = ins.op();
        switch (ins) {
            case Instr.MatmulT(var a, var b, var ta, var tb) -> {
                transposable(op, typeOf.apply(a), ta);
                transposable(op, typeOf.apply(b), tb);
            }
            case Instr.MatmulShared(var a, var bs, var ta, var tb) -> {
                if (bs.size() < 2) throw new Mismatch(op, "shares one left operand among 2 or more products, got " + bs.size());
                transposable(op, typeOf.apply(a), ta);
                for (Var b : bs) transposable(op, typeOf.apply(b), tb);
            }
            case Instr.SoftmaxGrad(var p, var dp, var rowSums) -> {
                TensorType pt = typeOf.apply(p), dpt = typeOf.apply(dp);
                if (!pt.equals(dpt)) throw new Mismatch(op, "p and dp must have one type: p " + pt + ", dp " + dpt);
                floating(op, pt);
                if (pt.rank() < 1) throw new Mismatch(op, "needs rank >= 1, got " + pt);
            }
            case Instr.AttentionBackward(var q, var k, var v, var g, var lse, var d, var o, var dq, var dk, var dv) -> {
                if (!dq && !dk && !dv) throw new Mismatch(op, "makes at least one of dq, dk, dv");
            }
            case Instr.AttentionWithLse _, Instr.SwigluSigmoid _ -> { }
            case Instr.Elementwise(var inputs, var body) -> elementwiseBody(op, inputs, body, typeOf);
        }
        Fusions.Expansion e = ins.expand(typeOf);
        Map<Var, TensorType> env = new HashMap<>();
        Function<Var, TensorType> type = v -> env.containsKey(v) ? env.get(v) : typeOf.apply(v);
        for (Let l : e.lets()) {
            try {
                env.put(l.var(), single((Instr) l.rhs(), type));
            } catch (Mismatch m) {
                throw new Mismatch(op, m.getMessage());
            }
        }
        List<TensorType> out = e.results().stream().map(type).toList();
        if (ins instanceof Instr.Elementwise(var _, var body)) {
            Type got = out.size() == 1 ? out.getFirst() : new Type.Tuple(List.copyOf(out));
            if (!got.equals(body.result())) throw new Mismatch(op, "the body computes " + got + " but declares " + body.result());
        }
        return out;
    }

    /** A matmul operand whose last two axes are swapped first ({@code flag}) has rank ≥ 2. */
    private static void transposable(String op, TensorType t, boolean flag) {
        if (flag && t.rank() < 2) throw new Mismatch(op, "a transposed operand needs rank >= 2, got " + t);
    }

    /**
     * The body of an elementwise fusion: one parameter per input, of its type; lets of elementwise
     * instructions (neg, sqrt, add, sub, mul, div, maximum), broadcasts and reshapes that read only
     * its parameters and its earlier lets; the result one of its values or a tuple of them.
     */
    private static void elementwiseBody(String op, List<Var> inputs, Rhs.Fn body, Function<Var, TensorType> typeOf) {
        if (inputs.size() != body.params().size())
            throw new Mismatch(op, inputs.size() + " inputs for a body of " + body.params().size() + " parameters");
        Set<Var> own = new HashSet<>();
        for (int i = 0; i < inputs.size(); i++) {
            TensorType t = typeOf.apply(inputs.get(i)), want = body.params().get(i).type();
            if (!t.equals(want)) throw new Mismatch(op, "input " + inputs.get(i) + " is " + t + ", its parameter " + body.params().get(i).name() + " " + want);
            own.add(body.params().get(i).name());
        }
        List<Var> result = List.of(body.body().result());
        for (Let l : body.body().lets()) {
            if (l.rhs() instanceof Rhs.Tuple(var elems) && l.binders().contains(body.body().result())) { result = elems; continue; }
            if (!(l.rhs() instanceof Instr i) || l.destructure()
                    || !(i instanceof Instr.Neg || i instanceof Instr.Sqrt || i instanceof Instr.Add || i instanceof Instr.Sub
                         || i instanceof Instr.Mul || i instanceof Instr.Div || i instanceof Instr.Maximum || i instanceof Instr.Broadcast
                         || i instanceof Instr.Reshape))
                throw new Mismatch(op, "the body holds only neg, sqrt, add, sub, mul, div, maximum, broadcast and reshape lets, not let "
                        + l.displayName() + " = " + switch (l.rhs()) {
                            case Instr i -> i.op();
                            case Rhs.Fn _ -> "a fn";
                            case Rhs.Call _ -> "a call";
                            case Rhs.Handle _ -> "a handle";
                            case Rhs.Tuple _ -> "a tuple";
                        });
            for (Var v : i.operands()) if (!own.contains(v)) throw new Mismatch(op, "the body reads " + v + ", which is not its own");
            own.add(l.var());
        }
        for (Var v : result) if (!own.contains(v)) throw new Mismatch(op, "the body's result " + v + " is not one of its values");
    }

    // ---- constants --------------------------------------------------------------------------

    /** Payload length = vol(σ); I64 / I1 values integers (I1: 0 or 1; I64: |v| ≤ 2^53). */
    private static TensorType literal(String op, TensorType t, Payload p) {
        long vol = volume(op, t.shape());
        if (p.size() != vol)
            throw new Mismatch(op, "payload has " + p.size() + " values, " + t + " needs " + vol);
        if (t.dtype().discrete())
            for (int i = 0; i < p.size(); i++) integral(op, t.dtype(), p.at(i), "payload value " + fmt(p.at(i)) + " at index " + i);
        return t;
    }

    private static void integral(String op, DType d, double v, String what) {
        boolean ok = switch (d) {
            case I1 -> v == 0 || v == 1;
            case I64 -> v == Math.rint(v) && Math.abs(v) <= 0x1p53;
            case F32, F64, BF16, F16, F8E4M3, F8E5M2 -> true;
        };
        if (!ok) throw new Mismatch(op, what + " is not " + (d == DType.I1 ? "0 or 1" : "an integer") + " (" + d + ")");
    }

    private static long volume(String op, Shape s) {
        try {
            return s.vol();
        } catch (ArithmeticException e) {
            throw new Mismatch(op, "the volume of " + s + " overflows");
        }
    }

    // ---- elementwise ------------------------------------------------------------------------

    private static TensorType floating(String op, TensorType t) {
        if (!t.dtype().floating()) throw new Mismatch(op, "needs a floating operand, got " + t);
        return t;
    }

    /** Same dtype, shape and placement; floating. */
    private static TensorType elementwise(String op, String sym, TensorType a, TensorType b) {
        if (!a.equals(b)) throw new Mismatch(op, "operand types differ: " + a + " " + sym + " " + b);
        if (!a.dtype().floating()) throw new Mismatch(op, "needs floating operands, got " + a + " " + sym + " " + b);
        return a;
    }

    /** σ++[M,K] @ σ++[K,N] → σ++[M,N]; rank ≥ 2, no implicit broadcast of σ. */
    private static TensorType matmul(String op, TensorType a, TensorType b) {
        String both = a + " @ " + b;
        int r = a.rank();
        if (r < 2 || b.rank() < 2) throw new Mismatch(op, "operands need rank >= 2: " + both);
        if (r != b.rank()) throw new Mismatch(op, "ranks differ: " + both + " (" + r + " vs " + b.rank() + ")");
        Shape sa = a.shape(), sb = b.shape();
        if (!sa.prefix(r - 2).equals(sb.prefix(r - 2)))
            throw new Mismatch(op, "batch dims differ: " + both + " (" + sa.prefix(r - 2) + " vs " + sb.prefix(r - 2) + ")");
        if (sa.dim(r - 1) != sb.dim(r - 2))
            throw new Mismatch(op, "inner dims differ: " + both + " (K = " + sa.dim(r - 1) + " vs " + sb.dim(r - 2) + ")");
        if (a.dtype() != b.dtype()) throw new Mismatch(op, "dtypes differ: " + both);
        if (a.placement() != b.placement()) throw new Mismatch(op, "placements differ: " + both);
        if (!a.dtype().floating()) throw new Mismatch(op, "needs floating operands, got " + both);
        return a.withShape(sa.prefix(r - 2).concat(sa.dim(r - 2), sb.dim(r - 1)));
    }

    // ---- shape ------------------------------------------------------------------------------

    private static TensorType reshape(String op, TensorType x, Shape to) {
        long from = volume(op, x.shape()), target = volume(op, to);
        if (from != target)
            throw new Mismatch(op, "volumes differ: " + x + " to " + to + " (" + from + " vs " + target + ")");
        return x.withShape(to);
    }

    private static TensorType transpose(String op, TensorType x, Perm perm) {
        if (perm.rank() != x.rank() || !perm.valid())
            throw new Mismatch(op, "perm " + perm + " is not a permutation of 0.." + (x.rank() - 1)
                    + " for " + x + " (rank " + x.rank() + "; an entry may also count from the end, -1 the last axis)");
        return x.withShape(perm.apply(x.shape()));
    }

    /**
     * NumPy's broadcast: x's dims align with the last x.rank() dims of {@code to}, each 1 (expanded)
     * or equal; the leading dims of {@code to} are new axes. The rank may grow, never shrink.
     */
    private static TensorType broadcast(String op, TensorType x, Shape to) {
        if (x.rank() > to.rank())
            throw new Mismatch(op, "cannot drop axes: " + x + " to " + to + " (rank " + x.rank() + " to " + to.rank()
                    + "); sum over the axes to drop instead");
        int lead = to.rank() - x.rank();
        for (int i = 0; i < x.rank(); i++) {
            long d = x.shape().dim(i);
            if (d != 1 && d != to.dim(lead + i))
                throw new Mismatch(op, "axis " + i + " of " + x + " is " + d + ", neither 1 nor " + to.dim(lead + i)
                        + " (target " + to + (lead > 0 ? ", whose axis " + (lead + i) + " it meets: dims align from the end" : "") + ")");
        }
        return x.withShape(to);
    }

    /** 0 ≤ axis < rank (after {@link #normalise}). */
    private static void axis(String op, TensorType t, int axis) {
        if (axis < 0 || axis >= t.rank())
            throw new Mismatch(op, "axis " + axis + " out of range for " + t + " (rank " + t.rank() + axes(t.rank()) + ")");
    }

    /** What axes a rank has, for messages. */
    private static String axes(int rank) {
        return rank == 0 ? ": it has no axes" : ": axes are 0.." + (rank - 1) + ", or -" + rank + "..-1 counted from the end";
    }

    private static TensorType integer(String op, TensorType t) {
        if (t.dtype() != DType.I64) throw new Mismatch(op, "needs an I64 operand, got " + t);
        return t;
    }

    // ---- fused row-wise ---------------------------------------------------------------------

    /** A floating x of rank ≥ 1 normalised over its last axis; eps finite and ≥ 0. */
    private static TensorType rowwise(String op, TensorType x, double eps) {
        floating(op, x);
        if (x.rank() < 1) throw new Mismatch(op, "needs rank >= 1, got " + x);
        if (!(eps >= 0) || Double.isInfinite(eps)) throw new Mismatch(op, "eps must be finite and >= 0, got " + fmt(eps));
        return x;
    }

    /** A per-column vector [D] of x's dtype and placement, D = x's last dim. */
    private static void vector(String op, String what, TensorType x, TensorType w) {
        long d = x.shape().dim(x.rank() - 1);
        if (w.dtype() != x.dtype() || w.placement() != x.placement() || !w.shape().equals(Shape.of(d)))
            throw new Mismatch(op, what + " must be " + x.withShape(Shape.of(d)) + " (x's last axis), got " + w);
    }

    /** The head width of σ++[T, H·hd] split into {@code heads} heads. */
    private static long headWidth(String op, String what, TensorType x, int heads) {
        if (x.rank() < 2) throw new Mismatch(op, what + " needs rank >= 2 (σ++[T, H·hd]), got " + x);
        long w = x.shape().dim(x.rank() - 1);
        if (heads < 1 || w % heads != 0 || w == 0)
            throw new Mismatch(op, what + " width " + w + " is not a positive multiple of " + heads + " heads: " + x);
        return w / heads;
    }

    /** x σ++[T, H·hd]; cos, sin [L, R/2] with R even ≤ hd (R = hd when rotary is 0) and L ≥ start + T. */
    private static TensorType rope(String op, TensorType x, TensorType c, TensorType s, int heads, int rotary, int start) {
        floating(op, x);
        long hd = headWidth(op, "x", x, heads);
        long r = rotary == 0 ? hd : rotary;
        if (r < 2 || r % 2 != 0 || r > hd)
            throw new Mismatch(op, "rotary " + r + " must be even, >= 2 and <= the head width " + hd);
        if (start < 0) throw new Mismatch(op, "start must be >= 0, got " + start);
        long t = x.shape().dim(x.rank() - 2);
        for (TensorType tab : new TensorType[] {c, s}) {
            if (tab.dtype() != x.dtype() || tab.placement() != x.placement() || tab.rank() != 2 || tab.shape().dim(1) != r / 2)
                throw new Mismatch(op, "cos and sin must be " + x.dtype() + " [L, " + r / 2 + "] (rotary " + r
                        + "), got cos " + c + ", sin " + s);
        }
        if (!c.equals(s)) throw new Mismatch(op, "cos and sin types differ: " + c + ", " + s);
        if (c.shape().dim(0) < start + t)
            throw new Mismatch(op, "the tables have " + c.shape().dim(0) + " rows; start " + start + " + " + t
                    + " rows of x needs " + (start + t));
        return x;
    }

    /** q σ++[rows, H·hd], k σ++[L, KV·hd] (same σ, hd, dtype, placement), KV | H, sinks [H]. */
    private static TensorType attention(String op, TensorType q, TensorType k, java.util.Optional<TensorType> sinks, Instr.AttnOpts o) {
        floating(op, q);
        if (o.kvHeads() < 1 || o.heads() % o.kvHeads() != 0)
            throw new Mismatch(op, "kv_heads " + o.kvHeads() + " must divide heads " + o.heads());
        long hd = headWidth(op, "q", q, o.heads()), kd = headWidth(op, "k", k, o.kvHeads());
        int r = q.rank();
        if (k.rank() != r || !k.shape().prefix(r - 2).equals(q.shape().prefix(r - 2)) || kd != hd
                || k.dtype() != q.dtype() || k.placement() != q.placement())
            throw new Mismatch(op, "k must be " + q.dtype() + " σ++[L, " + o.kvHeads() + "·" + hd + "] with q's σ "
                    + q.shape().prefix(r - 2) + ": q " + q + ", k " + k);
        sinks.ifPresent(st -> {
            if (st.dtype() != q.dtype() || st.placement() != q.placement() || !st.shape().equals(Shape.of(o.heads())))
                throw new Mismatch(op, "sinks must be " + q.withShape(Shape.of(o.heads())) + ", got " + st);
        });
        if (o.window() < 0 || o.chunk() < 0 || o.start() < 0)
            throw new Mismatch(op, "window, chunk and start must be >= 0");
        if (o.window() > 0 && o.chunk() > 0) throw new Mismatch(op, "window and chunk exclude each other");
        if (!(o.softcap() >= 0) || Double.isInfinite(o.softcap())) throw new Mismatch(op, "softcap must be finite and > 0");
        if (Double.isInfinite(o.scale())) throw new Mismatch(op, "scale must be finite");
        return q;
    }

    /** The σ++[T, H] type of a per-row, per-head value (lse, d) of q σ++[T, H·hd]. */
    private static TensorType rowHeads(TensorType q, Instr.AttnOpts o) {
        return q.withShape(q.shape().prefix(q.rank() - 1).concat(o.heads()));
    }

    /** An operand that must have type {@code want}. */
    private static void operandOf(String op, String what, TensorType want, TensorType got) {
        if (!got.equals(want)) throw new Mismatch(op, what + " must be " + want + " (σ++[T, H]), got " + got);
    }

    /**
     * {@link Instr.AttentionGrad}: q, g σ++[T, H·hd]; k, v σ++[L, KV·hd]; lse, d σ++[T, H] → the types
     * of dq, dk, dv (q's, k's, k's).
     */
    private static List<TensorType> attentionGrad(String op, Var q, Var k, Var v, Var g, Var lse, Var d, Instr.AttnOpts o,
                                                  Function<Var, TensorType> typeOf) {
        TensorType qt = attention(op, typeOf.apply(q), typeOf.apply(k), java.util.Optional.empty(), o), kt = typeOf.apply(k);
        if (!typeOf.apply(v).equals(kt)) throw new Mismatch(op, "v must have k's type " + kt + ", got " + typeOf.apply(v));
        if (!typeOf.apply(g).equals(qt)) throw new Mismatch(op, "g must have q's type " + qt + ", got " + typeOf.apply(g));
        operandOf(op, "lse", rowHeads(qt, o), typeOf.apply(lse));
        operandOf(op, "d", rowHeads(qt, o), typeOf.apply(d));
        return List.of(qt, kt, kt);
    }

    /**
     * {@link Instr.AttentionProduct}: QK a σ++[T, H·hd], b σ++[L, KV·hd] → σ++[H, T, L]; PK a σ++[H, T, L],
     * b σ++[L, KV·hd] → σ++[T, H·hd]; PQ a σ++[H, T, L], b σ++[T, H·hd] → σ++[L, KV·hd]; one floating dtype.
     */
    private static TensorType attentionProduct(String op, TensorType a, TensorType b, Instr.AttnOpts o,
                                               Instr.AttentionProduct.Form form) {
        floating(op, a);
        if (o.kvHeads() < 1 || o.heads() % o.kvHeads() != 0)
            throw new Mismatch(op, "kv_heads " + o.kvHeads() + " must divide heads " + o.heads());
        if (form == Instr.AttentionProduct.Form.QK) {
            long hd = headWidth(op, "a", a, o.heads()), kd = headWidth(op, "b", b, o.kvHeads());
            int r = a.rank();
            Shape lead = a.shape().prefix(r - 2);
            if (b.rank() != r || !b.shape().prefix(r - 2).equals(lead) || kd != hd || b.dtype() != a.dtype()
                    || b.placement() != a.placement())
                throw new Mismatch(op, "b must be " + a.dtype() + " σ++[L, " + o.kvHeads() + "·" + hd + "] with a's σ " + lead
                        + ": a " + a + ", b " + b);
            masks(op, o);
            return a.withShape(lead.concat(o.heads(), a.shape().dim(r - 2), b.shape().dim(r - 2)));
        }
        boolean pk = form == Instr.AttentionProduct.Form.PK;
        int r = b.rank();
        String want = "a must be σ++[" + o.heads() + ", T, L] and b " + (pk ? "σ++[L, KV·hd]" : "σ++[T, H·hd]")
                + " of one dtype and σ: a " + a + ", b " + b;
        if (r < 2 || a.rank() != r + 1 || !a.shape().prefix(r - 2).equals(b.shape().prefix(r - 2))
                || a.dtype() != b.dtype() || a.placement() != b.placement() || a.shape().dim(r - 2) != o.heads())
            throw new Mismatch(op, want);
        long t = a.shape().dim(r - 1), l = a.shape().dim(r);
        if (b.shape().dim(r - 2) != (pk ? l : t)) throw new Mismatch(op, want);
        long hd = headWidth(op, "b", b, pk ? o.kvHeads() : o.heads());
        masks(op, o);
        Shape lead = b.shape().prefix(r - 2);
        return b.withShape(pk ? lead.concat(t, o.heads() * hd) : lead.concat(l, o.kvHeads() * hd));
    }

    /** The mask options of the attention products: window, chunk, start ≥ 0, not window and chunk both. */
    private static void masks(String op, Instr.AttnOpts o) {
        if (o.window() < 0 || o.chunk() < 0 || o.start() < 0)
            throw new Mismatch(op, "window, chunk and start must be >= 0");
        if (o.window() > 0 && o.chunk() > 0) throw new Mismatch(op, "window and chunk exclude each other");
    }

    // ---- indexing ---------------------------------------------------------------------------

    /** table T [V, D] floating, ids I64 [n], rows T [n, D] → T [V, D]. */
    private static TensorType setRows(String op, TensorType t, TensorType i, TensorType rows) {
        String all = "table " + t + ", ids " + i + ", rows " + rows;
        if (t.rank() != 2) throw new Mismatch(op, "table must be rank 2 [V, D]: " + all);
        floating(op, t);
        indices(op, i);
        if (i.rank() != 1) throw new Mismatch(op, "ids must be rank 1 [n]: " + all);
        if (!rows.equals(t.withShape(Shape.of(i.shape().dim(0), t.shape().dim(1)))))
            throw new Mismatch(op, "rows must be " + t.withShape(Shape.of(i.shape().dim(0), t.shape().dim(1))) + ": " + all);
        samePlacement(op, all, t.placement(), i.placement());
        return t;
    }

    /** values T σ (floating, rank ≥ 1), indices I64 σ without axis → T (indices' shape). */
    private static TensorType takeAlongAxis(String op, TensorType v, TensorType i, int axis) {
        floating(op, v);
        axis(op, v, axis);
        indices(op, i);
        Shape rho = v.shape().drop(axis);
        if (!i.shape().equals(rho))
            throw new Mismatch(op, "indices shape must be " + rho + " (values shape without axis " + axis + "): values "
                    + v + ", indices " + i);
        samePlacement(op, "values " + v + ", indices " + i, v.placement(), i.placement());
        return i.withDType(v.dtype());
    }

    /** values T [V, D] (floating), indices I64 σ, |σ| ≥ 1 → T σ++[D]. */
    private static TensorType gather(String op, TensorType v, TensorType i) {
        if (v.rank() != 2) throw new Mismatch(op, "values must be rank 2 [V, D], got " + v);
        floating(op, v);
        indices(op, i);
        if (i.rank() < 1) throw new Mismatch(op, "indices need rank >= 1, got " + i);
        samePlacement(op, "values " + v + ", indices " + i, v.placement(), i.placement());
        return v.withShape(i.shape().concat(v.shape().dim(1)));
    }

    /** updates T σ++[D], indices I64 σ, |σ| ≥ 1, dest T [V, D], host. */
    private static TensorType scatterAdd(String op, TensorType u, TensorType i, TensorType dest) {
        String all = "updates " + u + ", indices " + i + ", dest " + dest;
        indices(op, i);
        if (i.rank() < 1) throw new Mismatch(op, "indices need rank >= 1: " + all);
        if (u.rank() != i.rank() + 1 || !u.shape().prefix(i.rank()).equals(i.shape()))
            throw new Mismatch(op, "updates shape must be the indices shape " + i.shape() + " ++ [D]: " + all);
        if (dest.dtype() != u.dtype()) throw new Mismatch(op, "dest dtype differs from updates: " + all);
        if (dest.rank() != 2 || dest.shape().dim(1) != u.shape().dim(u.rank() - 1))
            throw new Mismatch(op, "dest shape must be [V, " + u.shape().dim(u.rank() - 1) + "]: " + all);
        samePlacement(op, all, u.placement(), i.placement(), dest.placement());
        hostOnly(op, dest);
        return dest;
    }

    /**
     * updates T ρ, indices I64 ρ, dest T σ, ρ = σ without axis, |σ| ≥ 1, host (rank 1 is
     * admitted so that it is the adjoint of every take_along_axis, whose values may have rank 1
     * with a rank-0 index).
     */
    private static TensorType scatterAlongAxis(String op, int axis, TensorType u, TensorType i, TensorType dest) {
        String all = "axis " + axis + ", updates " + u + ", indices " + i + ", dest " + dest;
        if (axis < 0 || axis >= dest.rank())
            throw new Mismatch(op, "axis " + axis + " out of range for rank " + dest.rank() + axes(dest.rank()) + ": " + all);
        Shape rho = dest.shape().drop(axis);
        indices(op, i);
        if (!u.shape().equals(rho) || !i.shape().equals(rho))
            throw new Mismatch(op, "updates and indices shape must be " + rho + " (dest shape without axis " + axis + "): " + all);
        if (dest.dtype() != u.dtype()) throw new Mismatch(op, "dest dtype differs from updates: " + all);
        samePlacement(op, all, u.placement(), i.placement(), dest.placement());
        hostOnly(op, dest);
        return dest;
    }

    private static void indices(String op, TensorType i) {
        if (i.dtype() != DType.I64) throw new Mismatch(op, "indices must be I64, got " + i);
    }

    private static void samePlacement(String op, String all, Placement first, Placement... rest) {
        for (Placement p : rest) if (p != first) throw new Mismatch(op, "placements differ: " + all);
    }

    /** The internal scatters have a checked lowering on the host only: on @device they are refused by name. */
    private static void hostOnly(String op, TensorType dest) {
        if (dest.placement() != Placement.HOST) throw new Mismatch(op, "checked device lowering is not available");
    }

    private static String fmt(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
    }
}
