package kina.ad;

import static kina.ad.Pullback.flow;
import static kina.ad.Pullback.partial;
import static kina.ir.Instr.Gelu.GELU_C;
import static kina.ir.Instr.Gelu.GELU_K;
import static kina.ad.Pullback.refuse;
import static kina.ad.Pullback.valuesOnly;

import kina.ir.Instr;
import kina.ir.Instr.*;
import kina.ir.Instr.AttnOpts;
import kina.ir.Perm;
import kina.ir.Placement;
import kina.ir.Shape;
import kina.ir.TensorType;
import java.util.Set;

/**
 * Every VJP rule of kina, in one switch over {@link Instr}, families in Instr's order.
 * {@code g} is the cotangent of the output {@code y}; each case answers one cotangent per operand
 * (DESIGN §3, seeds Sections 10 and 14, spec-notes §4). Rules are pure: the reverse scan seeds,
 * skips and accumulates. Every instruction a rule emits has a rule here (closure under adjoints).
 */
public final class Vjp {
    private Vjp() {}

    public static <T> Pullback<T> of(Instr ins, Primals<T> p, T y, T g, Ops<T> o) {
        return switch (ins) {
            // constants: no operands
            case Input _, Literal _, Fill _ -> flow();
            // unary
            case Neg _ -> flow(o.neg(g));                                   // §10 §4: g_a = −g
            case Exp _ -> flow(o.mul(g, y));                                // reads its output
            case Log(var x) -> flow(o.div(g, p.of(x)));
            case Sqrt _ -> flow(o.div(g, o.add(y, y)));                      // g / (2y)
            case Rsqrt(var x) -> flow(o.neg(o.div(o.mul(g, y), o.add(p.of(x), p.of(x)))));   // −g·y / (2x)
            case Tanh _ -> flow(o.mul(g, o.sub(ones(o, y), o.mul(y, y))));   // g (1 − y²)
            case Sigmoid _ -> flow(o.mul(g, o.mul(y, o.sub(ones(o, y), y))));   // g y (1 − y)
            case Reciprocal _ -> flow(o.neg(o.mul(g, o.mul(y, y))));         // −g y²
            case Silu(var x) -> {
                T s = o.sigmoid(p.of(x));
                yield flow(o.mul(g, siluSlope(o, s, o.mul(p.of(x), s))));
            }
            case Gelu(var x) -> flow(o.mul(g, geluSlope(o, p.of(x))));
            case Relu(var x) -> p.type(x).dtype().floating()                 // g where x > 0, else +0.0
                    ? flow(o.select(o.greater(p.of(x), zeros(o, g)), g, zeros(o, g)))
                    : refuse(new Refusal.NoGradient("relu", "integer arithmetic: a ReLU of integers is a step function of them"));
            case Softcap(_, var cap) -> {                                    // g (1 − (y/C)²), reads its output
                T t = o.div(y, o.fill(o.type(y), cap));
                yield flow(o.mul(g, o.sub(ones(o, y), o.mul(t, t))));
            }
            case ArgMax _ -> refuse(new Refusal.NoGradient("argmax",
                    "piecewise constant: the index of the largest element is piecewise constant in every input"));
            case Clamp _ -> refuse(new Refusal.NoGradient("clamp",
                    "integer arithmetic: a saturation of integers is a step function of them"));
            case Requant _ -> refuse(new Refusal.NoGradient("requant",
                    "integer arithmetic: a floored shift of an integer is a step function of it"));
            // binary
            case Add _ -> flow(g, g);
            case Sub _ -> flow(g, o.neg(g));
            case Mul(var a, var b) -> flow(o.mul(g, p.of(b)), o.mul(g, p.of(a)));
            case Div(var a, var b) -> {                                     // y = a / b
                T ga = o.div(g, p.of(b));
                T gb = o.neg(o.div(o.mul(g, y), p.of(b)));                  // −g·a/b² = −(g·y)/b
                yield flow(ga, gb);
            }
            case Maximum(var a, var b) -> {                                 // ties (and NaNs) to a
                T bWins = o.greater(p.of(b), p.of(a));
                yield flow(o.select(bWins, zeros(o, g), g), o.select(bWins, g, zeros(o, g)));
            }
            case Greater _ -> refuse(new Refusal.NoGradient("greater",
                    "piecewise constant: a comparison is a step function of its operands"));
            case Select(var m, _, _) -> partial(java.util.Arrays.asList(null,
                    o.select(p.of(m), g, zeros(o, g)), o.select(p.of(m), zeros(o, g), g)), Set.of());
            case Swiglu(var gate, var up) -> {                              // silu(gate) ⊙ up
                // silu(x) = r(x·σ(x)) bit for bit, so the slope's x·σ(x) serves as silu(gate): one σ pass, not two
                T x = p.of(gate), s = o.sigmoid(x), xs = o.mul(x, s);
                yield flow(o.mul(o.mul(g, p.of(up)), siluSlope(o, s, xs)), o.mul(g, xs));
            }
            // contraction (§14 §5): g_a = g @ bᵀ, g_b = aᵀ @ g with transpose_last_two
            case Matmul(var a, var b) -> {
                Perm t = Perm.lastTwo(p.type(a).rank());
                T ga = o.matmul(g, o.transpose(p.of(b), t));
                T gb = o.matmul(o.transpose(p.of(a), t), g);
                yield flow(ga, gb);
            }
            // shape
            case Reshape(var x, _) -> flow(o.reshape(g, p.type(x).shape()));   // §14 §4
            case Transpose(_, var perm) -> flow(o.transpose(g, perm.inverse()));
            case Broadcast(var x, _) -> flow(sumTo(o, g, p.type(x).shape()));
            // reduction
            case Sum(var x, var axis, var keepDims) -> {
                Shape xs = p.type(x).shape();
                T gk = keepDims ? g : o.reshape(g, xs.with(axis, 1));
                yield flow(o.broadcast(gk, xs));
            }
            // fused row-wise
            case LogSoftmax(var x, var axis) -> {                           // §10 §5
                T s = o.exp(y);
                T total = o.broadcast(o.sum(g, axis, true), p.type(x).shape());
                yield flow(o.sub(g, o.mul(total, s)));
            }
            case Softmax(var x, var axis) -> {                              // y ⊙ (g − Σ g⊙y)
                T dot = o.broadcast(o.sum(o.mul(g, y), axis, true), p.type(x).shape());
                yield flow(o.mul(y, o.sub(g, dot)));
            }
            case RmsNorm r -> rmsnorm(r, p, g, o);
            case LayerNorm l -> layernorm(l, p, g, o);
            case L2Norm(var x, var eps) -> l2norm(p.of(x), eps, g, o);
            // a rotation: its transpose is the rotation by −θ; the tables are not differentiated
            case Rope(_, var c, var sn, var heads, var rotary, var start) -> partial(java.util.Arrays.asList(
                    o.rope(g, p.of(c), o.neg(p.of(sn)), heads, rotary, start), null, null), Set.of(1, 2));
            case Attention a -> attention(a, p, g, o);
            // indexing (§10 §6, §14 §6): indices are data, they get nothing
            case TakeAlongAxis(var values, var ids, var axis) ->
                    device(p.type(values).placement())
                            ? refuse(new Refusal.Unavailable("scatter_along_axis: checked device lowering is not available"))
                            : valuesOnly(o.scatterAlongAxis(axis, g, p.of(ids), p.type(values)));
            case Gather(var values, var ids) ->
                    device(p.type(values).placement())
                            ? refuse(new Refusal.Unavailable("scatter_add: checked device lowering is not available"))
                            : valuesOnly(o.scatterAdd(g, p.of(ids), p.type(values)));
            // set_rows: the overwritten rows of the table never reach the result; rows[k] gets g[ids[k]]
            case SetRows(var table, var ids, var rows) -> partial(java.util.Arrays.asList(
                    o.setRows(g, p.of(ids), zeros(o, p.of(rows), p.type(rows))), null, o.gather(g, p.of(ids))), Set.of());
            // IR-internal adjoints: closure (gather ↔ scatter_add, take_along_axis ↔ scatter_along_axis)
            case ScatterAdd(_, var ids, _) -> valuesOnly(o.gather(g, p.of(ids)));
            case ScatterAlongAxis(var axis, _, var ids, _) -> valuesOnly(o.takeAlongAxis(g, p.of(ids), axis));
            case AttentionProbs a -> attentionProbs(a, p, y, g, o);
            case AttentionProduct(var a, var b, var op, var form) -> attentionProduct(form, op, p.of(a), p.of(b), g, o);
            // the plan's fusions exist only in planned programs, which are never differentiated
            case Fused f -> refuse(new Refusal.Unavailable(f.op() + ": a plan fusion, made after AD; differentiate the program it was made from"));
        };
    }

    // ---- elementwise slopes -------------------------------------------------------------------

    private static <T> T ones(Ops<T> o, T like) { return o.fill(o.type(like), 1.0); }

    private static <T> T zeros(Ops<T> o, T like) { return o.fill(o.type(like), 0.0); }

    private static <T> T zeros(Ops<T> o, T unused, TensorType t) { return o.fill(t, 0.0); }

    private static <T> T constant(Ops<T> o, T like, double v) { return o.fill(o.type(like), v); }

    /** d silu / dx = s + x s (1 − s) from s = σ(x) and xs = x·s (spec-notes §11.2 Silu). */
    private static <T> T siluSlope(Ops<T> o, T s, T xs) {
        return o.add(s, o.mul(xs, o.sub(ones(o, s), s)));
    }

    /**
     * d gelu / dx for ½x(1 + tanh z), z = c(x + K x³): ½(1 + t) + ½x (1 − t²) c (1 + 3K x²),
     * t = tanh z, c = √(2/π), K = 0.044715.
     */
    private static <T> T geluSlope(Ops<T> o, T x) {
        T c = constant(o, x, GELU_C), k = constant(o, x, GELU_K), half = constant(o, x, 0.5), one = ones(o, x);
        T x2 = o.mul(x, x);
        T t = o.tanh(o.mul(c, o.add(x, o.mul(k, o.mul(x2, x)))));
        T left = o.mul(half, o.add(one, t));
        T inner = o.mul(c, o.add(one, o.mul(constant(o, x, 3 * GELU_K), x2)));
        return o.add(left, o.mul(o.mul(o.mul(half, x), o.sub(one, o.mul(t, t))), inner));
    }

    // ---- norms over the last axis ---------------------------------------------------------------

    /** Σ over the last axis, keepdims, broadcast back to x's shape. */
    private static <T> T rowSum(Ops<T> o, T x) {
        Shape s = o.type(x).shape();
        return o.broadcast(o.sum(x, s.rank() - 1, true), s);
    }

    /** A [D] vector broadcast to x's shape σ++[D]. */
    private static <T> T perColumn(Ops<T> o, T w, Shape xs) {
        long[] one = new long[xs.rank()];
        java.util.Arrays.fill(one, 1);
        one[xs.rank() - 1] = xs.dim(xs.rank() - 1);
        return o.broadcast(o.reshape(w, new Shape(one)), xs);
    }

    /** Σ over every axis but the last: σ++[D] → [D] (axis 0 repeatedly, in order). */
    private static <T> T columnSum(Ops<T> o, T x) {
        T acc = x;
        while (o.type(acc).rank() > 1) acc = o.sum(acc, 0, false);
        return acc;
    }

    /**
     * rmsnorm (spec-notes §11.2 RmsNorm): u = x (+ r), q = rsqrt(ΣD u²/D + ε), y = u q w.
     * du = q h − u (q³/D) Σ(h u) with h = g w; the same du goes to x and r; dw = Σ_rows g u q.
     */
    static <T> Pullback<T> rmsnorm(RmsNorm r, Primals<T> p, T g, Ops<T> o) {
        T x = p.of(r.x());
        T u = r.residual().isPresent() ? o.add(x, p.of(r.residual().get())) : x;
        Shape xs = o.type(x).shape();
        long d = xs.dim(xs.rank() - 1);
        // mean, q and q³/D once per row ([…, 1]), broadcast where used: the same roundings per element
        // as over the full shape, at 1/D of the work.
        T ss = o.sum(o.mul(u, u), xs.rank() - 1, true);
        T mean = o.div(ss, constant(o, ss, d));
        T q1 = o.rsqrt(o.add(mean, constant(o, ss, r.eps())));
        T q = o.broadcast(q1, xs);
        T h = r.weight().isPresent() ? o.mul(g, perColumn(o, p.of(r.weight().get()), xs)) : g;
        T q3 = o.broadcast(o.div(o.mul(q1, o.mul(q1, q1)), constant(o, ss, d)), xs);
        T du = o.sub(o.mul(q, h), o.mul(o.mul(u, q3), rowSum(o, o.mul(h, u))));
        java.util.List<T> out = new java.util.ArrayList<>();
        out.add(du);
        r.weight().ifPresent(w -> out.add(columnSum(o, o.mul(g, o.mul(u, q)))));
        r.residual().ifPresent(res -> out.add(du));
        return partial(out, Set.of());
    }

    /**
     * layernorm (spec-notes §11.2 LayerNorm): x̂ = (x − μ) q, q = rsqrt(var + ε); with h = g w,
     * dx = q (h − mean h − x̂ mean(h x̂)); dw = Σ_rows g x̂; db = Σ_rows g.
     */
    static <T> Pullback<T> layernorm(LayerNorm l, Primals<T> p, T g, Ops<T> o) {
        T x = p.of(l.x());
        Shape xs = o.type(x).shape();
        T d = constant(o, x, xs.dim(xs.rank() - 1));
        T dev = o.sub(x, o.div(rowSum(o, x), d));
        T q = o.rsqrt(o.add(o.div(rowSum(o, o.mul(dev, dev)), d), constant(o, x, l.eps())));
        T xh = o.mul(dev, q);
        T h = l.weight().isPresent() ? o.mul(g, perColumn(o, p.of(l.weight().get()), xs)) : g;
        T dx = o.mul(q, o.sub(o.sub(h, o.div(rowSum(o, h), d)), o.mul(xh, o.div(rowSum(o, o.mul(h, xh)), d))));
        java.util.List<T> out = new java.util.ArrayList<>();
        out.add(dx);
        l.weight().ifPresent(w -> out.add(columnSum(o, o.mul(g, xh))));
        l.bias().ifPresent(b -> out.add(columnSum(o, g)));
        return partial(out, Set.of());
    }

    /** l2norm (spec-notes §11.2 L2Norm): n = √(Σ x² + ε), dx = g/n − x (Σ g x)/n³. */
    static <T> Pullback<T> l2norm(T x, double eps, T g, Ops<T> o) {
        T n = o.sqrt(o.add(rowSum(o, o.mul(x, x)), constant(o, x, eps)));
        T n3 = o.mul(n, o.mul(n, n));
        return flow(o.sub(o.div(g, n), o.div(o.mul(x, rowSum(o, o.mul(g, x))), n3)));
    }

    // ---- attention ------------------------------------------------------------------------------

    /**
     * attention (spec-notes §11.2 Attention): with P = attention_probs(q, k, sinks) σ++[H, T, L]
     * (0 where masked) and out = P V per kv group: dV = Pᵀ g and dP = g Vᵀ over the attended pairs
     * ({@link AttentionProduct} PQ and QK: the masked half of a causal product is never computed),
     * then the rule of attention_probs for dP (q, k, sinks).
     */
    static <T> Pullback<T> attention(Attention a, Primals<T> p, T g, Ops<T> o) {
        AttnOpts op = a.opts();
        T q = p.of(a.q()), k = p.of(a.k()), v = p.of(a.v());
        T probs = o.attentionProbs(q, k, a.sinks().map(p::of), op, false);          // σ++[H, T, L]
        T dv = o.attentionProduct(probs, g, op, AttentionProduct.Form.PQ);          // σ++[L, KV·hd]
        T dp = o.attentionProduct(g, v, op, AttentionProduct.Form.QK);              // σ++[H, T, L]
        ProbsGrad<T> pgd = probsGrad(q, k, a.sinks().map(p::of), op, probs, dp, null, o);
        java.util.List<T> out = new java.util.ArrayList<>(java.util.List.of(pgd.dq, pgd.dk, dv));
        if (a.sinks().isPresent()) out.add(pgd.dsinks);
        return partial(out, Set.of());
    }

    /**
     * attention_qk, attention_pk, attention_pq: bilinear, and each form's adjoints are the other two.
     * y = qk(a, b): da = pk(g, b), db = pq(g, a); y = pk(s, x): ds = qk(g, x), dx = pq(s, g);
     * y = pq(s, x): ds = qk(x, g), dx = pk(s, g). Pairs that are not attended get +0.0 in ds (their
     * entries of s are never read).
     */
    static <T> Pullback<T> attentionProduct(AttentionProduct.Form form, AttnOpts op, T a, T b, T g, Ops<T> o) {
        var qk = AttentionProduct.Form.QK;
        var pk = AttentionProduct.Form.PK;
        var pq = AttentionProduct.Form.PQ;
        return switch (form) {
            case QK -> flow(o.attentionProduct(g, b, op, pk), o.attentionProduct(g, a, op, pq));
            case PK -> flow(o.attentionProduct(g, b, op, qk), o.attentionProduct(a, g, op, pq));
            case PQ -> flow(o.attentionProduct(b, g, op, qk), o.attentionProduct(a, g, op, pk));
        };
    }

    /** attention_probs: the softmax rule over the attended positions and the sink (see {@link #probsGrad}). */
    static <T> Pullback<T> attentionProbs(AttentionProbs a, Primals<T> p, T y, T g, Ops<T> o) {
        T q = p.of(a.q()), k = p.of(a.k());
        var sinks = a.sinks().map(p::of);
        ProbsGrad<T> pgd = a.sinkColumn()
                ? probsGrad(q, k, sinks, a.opts(), o.attentionProbs(q, k, sinks, a.opts(), false), null, g, o)
                : probsGrad(q, k, sinks, a.opts(), y, g, null, o);
        java.util.List<T> out = new java.util.ArrayList<>(java.util.List.of(pgd.dq, pgd.dk));
        if (a.sinks().isPresent()) out.add(pgd.dsinks);
        return partial(out, Set.of());
    }

    private record ProbsGrad<T>(T dq, T dk, T dsinks) {}

    /**
     * The cotangents of q, k, sinks for cotangents dP of the probabilities P σ++[H, T, L] and dPσ of
     * the sink shares Pσ σ++[H, T, 1] (either may be null: none). With d = Σ_j P_j dP_j + Pσ dPσ:
     * dS = P (dP − d); dσ = Pσ (dPσ − d), summed over rows and σ; with a softcap C the scores'
     * cotangent is dU = dS (1 − tanh²(u/C)), u = α q·k recomputed; dq = α dU K, dk = α dUᵀ Q per kv
     * group, over the attended pairs only (attention_pk, attention_pq). A row with nothing attended gives 0.
     */
    private static <T> ProbsGrad<T> probsGrad(T q, T k, java.util.Optional<T> sinks, AttnOpts op, T probs,
                                              T dp, T dps, Ops<T> o) {
        Shape qs = o.type(q).shape(), ps = o.type(probs).shape();
        int r = qs.rank();
        long hd = qs.dim(r - 1) / op.heads();
        T psink = sinks.isPresent() ? o.attentionProbs(q, k, sinks, op, true) : null;   // σ++[H, T, 1]
        T d = dp != null ? o.sum(o.mul(probs, dp), r, true) : null;
        if (dps != null && psink != null) {
            T extra = o.mul(psink, dps);
            d = d == null ? extra : o.add(d, extra);
        }
        if (d == null) d = o.fill(o.type(probs).withShape(ps.with(r, 1)), 0.0);
        T db = o.broadcast(d, ps);
        T ds = dp != null ? o.mul(probs, o.sub(dp, db)) : o.neg(o.mul(probs, db));
        double al = op.alpha(hd);
        T du = ds;
        if (op.softcap() > 0) {
            T u = o.mul(o.attentionProduct(q, k, op, AttentionProduct.Form.QK), o.fill(o.type(du), al));
            T th = o.tanh(o.div(u, o.fill(o.type(du), op.softcap())));
            du = o.mul(du, o.sub(o.fill(o.type(du), 1.0), o.mul(th, th)));
        }
        T dq = o.mul(o.attentionProduct(du, k, op, AttentionProduct.Form.PK), o.fill(o.type(q), al));
        T dk = o.mul(o.attentionProduct(du, q, op, AttentionProduct.Form.PQ), o.fill(o.type(k), al));
        T dsk = null;
        if (psink != null) {
            T e = dps != null ? o.mul(psink, o.sub(dps, d)) : o.neg(o.mul(psink, d));     // σ++[H, T, 1]
            T acc = o.sum(o.sum(e, r, false), r - 1, false);                            // σ++[H]
            while (o.type(acc).rank() > 1) acc = o.sum(acc, 0, false);
            dsk = acc;
        }
        return new ProbsGrad<>(dq, dk, dsk);
    }

    /**
     * g summed down to {@code to}, the adjoint of broadcast: first over g's leading axes that
     * {@code to} lacks (axis 0, dropped, once per new axis), then over every axis where {@code to}
     * has 1 and g does not, keepdims, in increasing axis.
     */
    static <T> T sumTo(Ops<T> o, T g, Shape to) {
        T acc = g;
        for (int k = o.type(g).rank() - to.rank(); k > 0; k--) acc = o.sum(acc, 0, false);
        Shape gs = o.type(acc).shape();
        for (int ax = 0; ax < to.rank(); ax++)
            if (to.dim(ax) == 1 && gs.dim(ax) != 1) acc = o.sum(acc, ax, true);
        return acc;
    }

    private static boolean device(Placement pl) { return pl == Placement.DEVICE; }
}
