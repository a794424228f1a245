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
 * (docs/language.md states each in that notation). Rules are pure: the reverse scan seeds,
 * skips and accumulates. Every instruction a rule emits has a rule here (closure under adjoints).
 */
public final class Vjp {
    private Vjp() {}

    public static <T> Pullback<T> of(Instr ins, Primals<T> p, T y, T g, Ops<T> o) {
        return switch (ins) {
            // constants: no operands
            case Input _, Literal _, Fill _ -> flow();
            // unary
            case Neg _ -> flow(o.neg(g));                                   // g_x = −g
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
            // contraction: g_a = g @ bᵀ, g_b = aᵀ @ g with transpose_last_two
            case Matmul(var a, var b) -> {
                Perm t = Perm.lastTwo(p.type(a).rank());
                T ga = o.matmul(g, o.transpose(p.of(b), t));
                T gb = o.matmul(o.transpose(p.of(a), t), g);
                yield flow(ga, gb);
            }
            // shape
            case Reshape(var x, _) -> flow(o.reshape(g, p.type(x).shape()));   // g back to x's shape
            case Transpose(_, var perm) -> flow(o.transpose(g, perm.inverse()));
            case Broadcast(var x, _) -> flow(sumTo(o, g, p.type(x).shape()));
            // reduction
            case Sum(var x, var axis, var keepDims) -> {
                Shape xs = p.type(x).shape();
                T gk = keepDims ? g : o.reshape(g, xs.with(axis, 1));
                yield flow(o.broadcast(gk, xs));
            }
            // fused row-wise
            case LogSoftmax(var x, var axis) -> {                           // g − Σg · exp(y)
                TensorType xt = p.type(x);
                T s = o.exp(y);
                T total = o.broadcast(o.sum(g, axis, true), xt.shape());
                T dx = o.sub(g, o.mul(total, s));
                // Safe log_softmax: a fully masked row (every y −inf, so Σ exp(y) = 0) does not move
                // when x does, so its cotangent is 0, as softmax's is; a live row is multiplied by
                // 1.0 (its bits kept). The mask is one value a row, so the full-size work stays a
                // multiply the plan fuses.
                TensorType rt = xt.withShape(xt.shape().with(axis, 1));
                T live = o.select(o.greater(o.sum(s, axis, true), o.fill(rt, 0.0)), o.fill(rt, 1.0), o.fill(rt, 0.0));
                yield flow(o.mul(dx, o.broadcast(live, xt.shape())));
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
            case Attention a -> attention(a, p, y, g, o);
            // indexing: indices are data, they get nothing
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
            case AttentionLse a -> attentionLse(a, p, y, g, o);
            case AttentionExp a -> attentionExp(a, p, y, g, o);
            case AttentionGrad a -> attentionGrad(a, p, g, o);
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

    /** d silu / dx = s + x s (1 − s) from s = σ(x) and xs = x·s. */
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
     * rmsnorm: u = x (+ r), q = rsqrt(ΣD u²/D + ε), y = u q w.
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
     * layernorm: x̂ = (x − μ) q, q = rsqrt(var + ε); with h = g w,
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

    /** l2norm: n = √(Σ x² + ε), dx = g/n − x (Σ g x)/n³. */
    static <T> Pullback<T> l2norm(T x, double eps, T g, Ops<T> o) {
        T n = o.sqrt(o.add(rowSum(o, o.mul(x, x)), constant(o, x, eps)));
        T n3 = o.mul(n, o.mul(n, n));
        return flow(o.sub(o.div(g, n), o.div(o.mul(x, rowSum(o, o.mul(g, x))), n3)));
    }

    // ---- attention ------------------------------------------------------------------------------

    /**
     * attention, blockwise (FlashAttention-2): lse = attention_lse(q, k,
     * sinks) and d = Σ_e g ⊙ out per head (σ++[T, H]); dq, dk, dv = attention_dq / _dk / _dv, which
     * recompute each attended pair's probability exp(s − lse), so no [H, T, L] value is made;
     * dσ_h = −Σ_t exp(σ_h − lse_t) d_t (the sink's share is exp(σ − lse), and it carries no value).
     */
    static <T> Pullback<T> attention(Attention a, Primals<T> p, T y, T g, Ops<T> o) {
        AttnOpts op = a.opts();
        T q = p.of(a.q()), k = p.of(a.k()), v = p.of(a.v());
        T lse = o.attentionLse(q, k, a.sinks().map(p::of), op);                   // σ++[T, H]
        Shape ys = o.type(y).shape();
        int r = ys.rank();
        long hd = ys.dim(r - 1) / op.heads();
        T d = o.sum(o.reshape(o.mul(g, y), ys.prefix(r - 1).concat(op.heads(), hd)), r, false);   // σ++[T, H]
        java.util.List<T> out = new java.util.ArrayList<>();
        for (AttentionGrad.Wrt w : AttentionGrad.Wrt.values()) out.add(o.attentionGrad(q, k, v, g, lse, d, op, w));
        a.sinks().ifPresent(sk -> out.add(o.neg(columnSum(o, o.mul(sinkShares(o, p.of(sk), lse), d)))));
        return partial(out, Set.of());
    }

    /** exp(σ_h − lse_{t,h}) σ++[T, H]: each row's sink share, from the sinks [H] and lse σ++[T, H]. */
    private static <T> T sinkShares(Ops<T> o, T sinks, T lse) {
        return o.exp(o.sub(o.broadcast(sinks, o.type(lse).shape()), lse));
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

    /**
     * The scores of the attended pairs as the rules of second derivatives see them, materialised
     * σ++[H, T, L]: u = α·attention_qk(q, k), and with a softcap C th = tanh(u / C) and the slope
     * ds/du = 1 − th² of s = C·th (null without a softcap).
     */
    private record Scores<T>(T u, T th, T slope) {}

    private static <T> Scores<T> scores(Ops<T> o, T q, T k, AttnOpts op) {
        T dot = o.attentionProduct(q, k, op, AttentionProduct.Form.QK);
        T u = o.mul(dot, o.fill(o.type(dot), alpha(o, q, op)));
        if (op.softcap() <= 0) return new Scores<>(u, null, null);
        T th = o.tanh(o.div(u, o.fill(o.type(u), op.softcap())));
        return new Scores<>(u, th, o.sub(ones(o, th), o.mul(th, th)));
    }

    /** α for q σ++[T, H·hd]. */
    private static <T> double alpha(Ops<T> o, T q, AttnOpts op) {
        Shape qs = o.type(q).shape();
        return op.alpha(qs.dim(qs.rank() - 1) / op.heads());
    }

    /** x σ++[T, H] as σ++[H, T, L], each row's value along its keys (the shape of {@code like}). */
    private static <T> T alongKeys(Ops<T> o, T x, T like) {
        Shape ls = o.type(like).shape();
        int r = ls.rank();
        return o.broadcast(o.reshape(o.transpose(x, Perm.lastTwo(r - 1)), ls.with(r - 1, 1)), ls);
    }

    /** Σ over the keys of x σ++[H, T, L], as σ++[T, H]: the adjoint of {@link #alongKeys}. */
    private static <T> T overKeys(Ops<T> o, T x) {
        int r = o.type(x).rank();
        return o.transpose(o.sum(x, r - 1, false), Perm.lastTwo(r - 1));
    }

    /**
     * The cotangents of q and k for a cotangent dS of the scores s (σ++[H, T, L], read at the
     * attended pairs): dU = dS·(ds/du), dq = α·attention_pk(dU, k), dk = α·attention_pq(dU, q).
     * {@code du} (or null) adds a cotangent of u itself.
     */
    private static <T> java.util.List<T> scoreGrads(Ops<T> o, T q, T k, AttnOpts op, Scores<T> sc, T dS, T du) {
        T dU = sc.slope() != null ? o.mul(dS, sc.slope()) : dS;
        if (du != null) dU = o.add(dU, du);
        double al = alpha(o, q, op);
        T dq = o.mul(o.attentionProduct(dU, k, op, AttentionProduct.Form.PK), o.fill(o.type(q), al));
        T dk = o.mul(o.attentionProduct(dU, q, op, AttentionProduct.Form.PQ), o.fill(o.type(k), al));
        return java.util.List.of(dq, dk);
    }

    /**
     * attention_lse: ∂lse_t/∂s_j = p_j = exp(s_j − lse_t) (attention_exp) and ∂lse_t/∂σ = exp(σ − lse_t);
     * so dS = P ⊙ g along the keys, and dσ_h = Σ_t exp(σ_h − lse_t) g_t.
     */
    static <T> Pullback<T> attentionLse(AttentionLse a, Primals<T> p, T y, T g, Ops<T> o) {
        T q = p.of(a.q()), k = p.of(a.k());
        T probs = o.attentionExp(q, k, y, a.opts());
        java.util.List<T> out = new java.util.ArrayList<>(scoreGrads(o, q, k, a.opts(), scores(o, q, k, a.opts()),
                o.mul(probs, alongKeys(o, g, probs)), null));
        a.sinks().ifPresent(sk -> out.add(columnSum(o, o.mul(sinkShares(o, p.of(sk), y), g))));
        return partial(out, Set.of());
    }

    /** attention_exp: y = exp(s − lse), so dS = g ⊙ y and dlse = −Σ_j g ⊙ y. */
    static <T> Pullback<T> attentionExp(AttentionExp a, Primals<T> p, T y, T g, Ops<T> o) {
        T q = p.of(a.q()), k = p.of(a.k());
        T dS = o.mul(g, y);
        java.util.List<T> out = new java.util.ArrayList<>(scoreGrads(o, q, k, a.opts(), scores(o, q, k, a.opts()), dS, null));
        out.add(o.neg(overKeys(o, dS)));
        return partial(out, Set.of());
    }

    /**
     * attention_dq / _dk / _dv, differentiated through the composition they compute, materialised
     * (these rules serve second derivatives; first derivatives never record them): P =
     * attention_exp(q, k, lse), dP = attention_qk(g, v), X = dP − d along the keys, dS = P ⊙ X, dU =
     * dS·(ds/du); dq = α·attention_pk(dU, k), dk = α·attention_pq(dU, q), dv = attention_pq(P, g).
     * For the output's cotangent w: dq: W_dU = attention_qk(α w, k), and k gets attention_pq(dU, α w);
     * dk: W_dU = attention_qk(q, α w), q gets attention_pk(dU, α w); dv: W_P = attention_qk(g, w), g gets
     * attention_pk(P, w). Back from dU: W_dS = W_dU·(ds/du), and with a softcap u gets W_dU ⊙ dS ·
     * (−2 th)(1 − th²)/C; W_P += W_dS ⊙ X; W_X = W_dS ⊙ P gives g attention_pk(W_X, v), v
     * attention_pq(W_X, g) and d −Σ_j W_X; then P's rule (attention_exp) for W_P.
     */
    static <T> Pullback<T> attentionGrad(AttentionGrad a, Primals<T> p, T w, Ops<T> o) {
        AttnOpts op = a.opts();
        T q = p.of(a.q()), k = p.of(a.k()), v = p.of(a.v()), gy = p.of(a.g()), lse = p.of(a.lse()), d = p.of(a.d());
        var qk = AttentionProduct.Form.QK;
        var pk = AttentionProduct.Form.PK;
        var pq = AttentionProduct.Form.PQ;
        Scores<T> sc = scores(o, q, k, op);
        T probs = o.attentionExp(q, k, lse, op);
        T wq = null, wk = null, wv = null, wg, wd = null, wP, wU = null;
        if (a.wrt() == AttentionGrad.Wrt.V) {
            wP = o.attentionProduct(gy, w, op, qk);
            wg = o.attentionProduct(probs, w, op, pk);
        } else {
            T x = o.sub(o.attentionProduct(gy, v, op, qk), alongKeys(o, d, probs));
            T dS = o.mul(probs, x);
            T dU = sc.slope() != null ? o.mul(dS, sc.slope()) : dS;
            T wa = o.mul(w, o.fill(o.type(w), alpha(o, q, op)));
            T wdU;
            if (a.wrt() == AttentionGrad.Wrt.Q) {
                wdU = o.attentionProduct(wa, k, op, qk);
                wk = o.attentionProduct(dU, wa, op, pq);
            } else {
                wdU = o.attentionProduct(q, wa, op, qk);
                wq = o.attentionProduct(dU, wa, op, pk);
            }
            T wdS = wdU;
            if (sc.slope() != null) {
                wdS = o.mul(wdU, sc.slope());
                T wth = o.neg(o.mul(o.mul(wdU, dS), o.add(sc.th(), sc.th())));      // through 1 − th²
                wU = o.div(o.mul(wth, sc.slope()), o.fill(o.type(wth), op.softcap()));   // dth/du = (1 − th²)/C
            }
            wP = o.mul(wdS, x);
            T wx = o.mul(wdS, probs);
            wg = o.attentionProduct(wx, v, op, pk);
            wv = o.attentionProduct(wx, gy, op, pq);
            wd = o.neg(overKeys(o, wx));
        }
        T wS = o.mul(wP, probs);                                                  // P = exp(s − lse)
        java.util.List<T> qkGrads = scoreGrads(o, q, k, op, sc, wS, wU);
        T gq = wq == null ? qkGrads.get(0) : o.add(qkGrads.get(0), wq);
        T gk = wk == null ? qkGrads.get(1) : o.add(qkGrads.get(1), wk);
        return partial(java.util.Arrays.asList(gq, gk, wv, wg, o.neg(overKeys(o, wS)), wd), Set.of());
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
