package kina.mlir;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import kina.ir.Instr.AttnOpts;
import kina.ir.DType;
import kina.ir.Instr.AttentionProduct;
import kina.ir.Perm;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.mlir.Mlir.AffineMap;
import kina.mlir.Mlir.Body;
import kina.mlir.Mlir.Operand;
import kina.mlir.Mlir.Scalar;
import kina.mlir.Mlir.Val;

/**
 * Causal attention and its IR-internal vocabulary in one func, the probabilities materialised:
 * heads batched as [B·KV, G·T, hd] (queries), [B·KV, L, hd] (keys), so the products are batch
 * matmuls, and the probabilities [B, KV, G, T, L] (= [B·KV, G·T, L]). Query row t attends key j
 * when lo(t) ≤ j ≤ min(start + t, L − 1) (a window or a chunk sets lo); a masked score is −inf and
 * its probability +0.0.
 */
final class AttentionLowering {
    private final Lowering l;
    private final Mlir.Fn f;

    AttentionLowering(Lowering l) {
        this.l = l;
        this.f = l.f;
    }

    private String fresh(String stem) { return l.fresh(stem); }

    /** q σ++[T, H·hd] as [B·KV, G·T, hd] (B = vol σ, G = H / KV; query head h = c·G + g). */
    private Val queries(Val q, AttnOpts o) {
        Shape s = q.type().shape();
        int r = s.rank();
        long b = s.prefix(r - 2).vol(), t = s.dim(r - 2), hd = s.dim(r - 1) / o.heads(), kv = o.kvHeads(), g = o.heads() / kv;
        Val q5 = l.reshape(fresh("rows"), q, Shape.of(b, t, kv, g, hd));
        return l.reshape(fresh("rows"), f.transpose(q5, Perm.of(0, 2, 3, 1, 4)), Shape.of(b * kv, g * t, hd));
    }

    /** k σ++[L, KV·hd] as [B·KV, L, hd], or transposed as [B·KV, hd, L]. */
    private Val keys(Val k, AttnOpts o, boolean transposed) {
        Shape s = k.type().shape();
        int r = s.rank();
        long b = s.prefix(r - 2).vol(), len = s.dim(r - 2), kv = o.kvHeads(), hd = s.dim(r - 1) / kv;
        Val k4 = l.reshape(fresh("keys"), k, Shape.of(b, len, kv, hd));
        return transposed ? l.reshape(fresh("keys"), f.transpose(k4, Perm.of(0, 2, 3, 1)), Shape.of(b * kv, hd, len))
                : l.reshape(fresh("keys"), f.transpose(k4, Perm.of(0, 2, 1, 3)), Shape.of(b * kv, len, hd));
    }

    /** p σ++[H, T, L] as [B, KV, G, T, L]. */
    private Val probs5(Val p, AttnOpts o) {
        Shape s = p.type().shape();
        int r = s.rank();
        return l.reshape(fresh("probs"), p, Shape.of(s.prefix(r - 3).vol(), o.kvHeads(), o.heads() / o.kvHeads(), s.dim(r - 2), s.dim(r - 1)));
    }

    /** [B·KV, G·T, hd] (a query-shaped product) back to σ++[T, H·hd] of type t. */
    private Val unqueries(String out, Val y, AttnOpts o, TensorType t) {
        Shape s = t.shape();
        int r = s.rank();
        long b = s.prefix(r - 2).vol(), rows = s.dim(r - 2), kv = o.kvHeads(), g = o.heads() / kv, hd = s.dim(r - 1) / o.heads();
        Val y5 = l.reshape(fresh("rows"), y, Shape.of(b, kv, g, rows, hd));
        return l.reshape(out, f.transpose(y5, Perm.of(0, 3, 1, 2, 4)), s);
    }

    /** a @ b for rank-3 a, b (a batch matmul of its own). */
    private Val bmm(Val a, Val b) {
        Shape sa = a.type().shape(), sb = b.type().shape();
        return l.contract(fresh("bmm"), a, false, b, a.type().withShape(Shape.of(sa.dim(0), sa.dim(1), sb.dim(2))));
    }

    /** x [B, KV, G, T, L] with +0.0 where row t does not attend key j (each entry a select). */
    private Val masked(Val x, AttnOpts o) {
        DType d = x.type().dtype();
        long len = x.type().shape().dim(4);
        return l.elementwise(fresh("masked"), x.type(), List.of(x), (g, a) ->
                List.of(g.select(attended(g, g.index(3), g.index(4), o, len), a.getFirst(), g.cst(d, 0))));
    }

    /** Whether query row t attends key j (index values): lo(t) ≤ j ≤ min(start + t, L − 1). */
    private static Scalar attended(Body b, Scalar t, Scalar j, AttnOpts o, long len) {
        Scalar last = b.arith("addi", t, b.cst(o.start()));
        Scalar hi = b.arith("minsi", last, b.cst(len - 1));
        Scalar lo;
        if (o.window() > 0) lo = b.arith("maxsi", b.arith("subi", last, b.cst(o.window() - 1)), b.cst(0));
        else if (o.chunk() > 0) lo = b.arith("muli", b.arith("divui", last, b.cst(o.chunk())), b.cst(o.chunk()));
        else lo = b.cst(0);
        Scalar ge = b.cmpi("sge", j, lo);
        Scalar le = b.cmpi("sle", j, hi);
        return b.arith("andi", ge, le);
    }

    /** dot[b, c, g, t, j] = q·k over the head width: [B, KV, G, T, L] (unmasked). */
    private Val dots(Val q, Val k, AttnOpts o) {
        Val qb = queries(q, o), kt = keys(k, o, true);
        Val s = bmm(qb, kt);
        Shape qs = q.type().shape();
        int r = qs.rank();
        return l.reshape(fresh("dots"), s, Shape.of(qs.prefix(r - 2).vol(), o.kvHeads(), o.heads() / o.kvHeads(), qs.dim(r - 2), kt.type().shape().dim(2)));
    }

    /** sinks [H] as [KV, G]. */
    private Val sinks2(Val s, AttnOpts o) { return l.reshape(fresh("sinks"), s, Shape.of(o.kvHeads(), o.heads() / o.kvHeads())); }

    /** exp(a − b). */
    private static Scalar expDiff(Body b, Scalar x, Scalar y) { return b.math("exp", b.subf(x, y)); }

    /** The probabilities and their row statistics: p [B, KV, G, T, L], the sink shares, row max m and denominator z [B, KV, G, T]. */
    private record Probs(Val p, Val share, Val m, Val z) {}

    /** The probabilities [B, KV, G, T, L] (0 where not attended) and, with sinks, the sink shares [B, KV, G, T]. */
    private Probs probs(Val q, Val k, Optional<Val> sinks, AttnOpts o) {
        Val sc = scores(q, k, o);
        TensorType st = sc.type();
        DType d = st.dtype();
        long len = st.shape().dim(4);
        Val m = l.reduce(fresh("rowmax"), List.of(sc), List.of(), 4, d, Double.NEGATIVE_INFINITY,
                (b, a) -> List.of(b.maximumf(a.get(0), a.get(1))));
        TensorType rt = m.type();
        Optional<Val> s2 = sinks.map(s -> sinks2(s, o));
        AffineMap id4 = AffineMap.identity(4), heads = new AffineMap(1, 2);
        if (s2.isPresent())
            m = l.generic(fresh("rowmax"), 4, Set.of(), List.of(new Operand(m, id4), new Operand(s2.get(), heads)),
                    List.of(new Operand(f.empty(rt), id4)), (b, a) -> List.of(b.maximumf(a.get(0), a.get(1))));
        Val mm = m;
        Val ex = l.overRows(fresh("exps"), st, List.of(sc), List.of(mm), List.of(), 4, (b, a) -> {
            Scalar v = expDiff(b, a.get(0), a.get(1));
            return List.of(b.select(attended(b, b.index(3), b.index(4), o, len), v, b.cst(d, 0)));
        });
        Val z = l.reduce(fresh("denom"), List.of(ex), List.of(), 4, d, 0, (b, a) -> List.of(b.accumulate(a.get(1), a.get(0))));
        if (s2.isPresent())
            z = l.generic(fresh("denom"), 4, Set.of(), List.of(new Operand(z, id4), new Operand(mm, id4), new Operand(s2.get(), heads)),
                    List.of(new Operand(f.empty(rt), id4)), (b, a) -> List.of(b.add(a.get(0), expDiff(b, a.get(2), a.get(1)))));
        Val zz = z;
        Val p = l.overRows(fresh("p"), st, List.of(ex), List.of(zz), List.of(), 4, (b, a) -> {
            Scalar pos = b.cmpf("ogt", a.get(1), b.cst(d, 0));
            return List.of(b.select(pos, b.divf(a.get(0), a.get(1)), b.cst(d, 0)));
        });
        Val share = null;
        if (s2.isPresent())
            share = l.generic(fresh("share"), 4, Set.of(), List.of(new Operand(zz, id4), new Operand(mm, id4), new Operand(s2.get(), heads)),
                    List.of(new Operand(f.empty(rt), id4)), (b, a) -> List.of(b.divf(expDiff(b, a.get(2), a.get(1)), a.get(0))));
        return new Probs(p, share, mm, zz);
    }

    /** The scores α q·k (softcapped) [B, KV, G, T, L], −inf where row t does not attend key j. */
    private Val scores(Val q, Val k, AttnOpts o) {
        Val dot = dots(q, k, o);
        TensorType st = dot.type();
        DType d = st.dtype();
        long len = st.shape().dim(4), hd = q.type().shape().dim(q.type().rank() - 1) / o.heads();
        double alpha = o.alpha(hd), cap = o.softcap();          // rounded to the dtype when printed
        return l.elementwise(fresh("scores"), st, List.of(dot), (b, a) -> {
            Scalar u = b.mul(a.getFirst(), b.cst(d, alpha));
            if (cap > 0) {
                Scalar c = b.cst(d, cap);
                u = b.mul(c, b.math("tanh", b.divf(u, c)));
            }
            return List.of(b.select(attended(b, b.index(3), b.index(4), o, len), u, b.cst(d, Double.NEGATIVE_INFINITY)));
        });
    }

    /** [B, KV, G, T, L] as [B·KV, G·T, L]. */
    private Val batched(Val p5) {
        Shape s = p5.type().shape();
        return l.reshape(fresh("probs"), p5, Shape.of(s.dim(0) * s.dim(1), s.dim(2) * s.dim(3), s.dim(4)));
    }

    /** Σ_j p[t, j] v[j] with the probabilities materialised. */
    Val attention(String out, Val q, Val k, Val v, Optional<Val> sinks, AttnOpts o, TensorType t) { return forward(out, q, k, v, sinks, o, t).out(); }

    /** attention and attention_lse of one set of operands, the probabilities computed once. */
    List<Val> withLse(String out, String lseOut, Val q, Val k, Val v, Optional<Val> sinks, AttnOpts o, TensorType t, TensorType lt) {
        Forward fw = forward(out, q, k, v, sinks, o, t);
        return List.of(fw.out(), lse(lseOut, new Probs(null, null, fw.m(), fw.z()), lt));
    }

    /** The output σ++[T, H·hd] and the softmax's row maximum m and denominator z [B, KV, G, T]. */
    private record Forward(Val out, Val m, Val z) {}

    /**
     * attention from the product q·k in three passes over it, no score kept: the row maximum m of
     * the scores s = α q·k (masked −inf), the denominator z = Σ exp(s − m), then the probabilities
     * exp(s − m) / z (+0.0 where z = 0) for the product with v.
     */
    private Forward forward(String out, Val q, Val k, Val v, Optional<Val> sinks, AttnOpts o, TensorType t) {
        Val dot = dots(q, k, o);
        TensorType st = dot.type();
        DType d = st.dtype();
        long len = st.shape().dim(4), hd = q.type().shape().dim(q.type().rank() - 1) / o.heads();
        Val m = l.reduce(fresh("rowmax"), List.of(dot), List.of(), 4, d, Double.NEGATIVE_INFINITY,
                (b, a) -> List.of(b.maximumf(a.get(1), score(b, a.get(0), d, o, hd, len))));
        TensorType rt = m.type();
        Optional<Val> s2 = sinks.map(s -> sinks2(s, o));
        AffineMap id4 = AffineMap.identity(4), heads = new AffineMap(1, 2);
        if (s2.isPresent())
            m = l.generic(fresh("rowmax"), 4, Set.of(), List.of(new Operand(m, id4), new Operand(s2.get(), heads)),
                    List.of(new Operand(f.empty(rt), id4)), (b, a) -> List.of(b.maximumf(a.get(0), a.get(1))));
        Val mm = m;
        Val z = l.reduce(fresh("denom"), List.of(dot), List.of(mm), 4, d, 0,
                (b, a) -> List.of(b.accumulate(a.get(2), expDiff(b, score(b, a.get(0), d, o, hd, len), a.get(1)))));
        if (s2.isPresent())
            z = l.generic(fresh("denom"), 4, Set.of(), List.of(new Operand(z, id4), new Operand(mm, id4), new Operand(s2.get(), heads)),
                    List.of(new Operand(f.empty(rt), id4)), (b, a) -> List.of(b.add(a.get(0), expDiff(b, a.get(2), a.get(1)))));
        Val zz = z;
        Val p = l.overRows(fresh("p"), st, List.of(dot), List.of(mm, zz), List.of(), 4, (b, a) -> {
            Scalar pos = b.cmpf("ogt", a.get(2), b.cst(d, 0));
            return List.of(b.select(pos, b.divf(expDiff(b, score(b, a.get(0), d, o, hd, len), a.get(1)), a.get(2)), b.cst(d, 0)));
        });
        Val yn = bmm(batched(p), keys(v, o, false));           // [B·KV, G·T, hd]
        return new Forward(unqueries(out, yn, o, t), mm, z);
    }

    /** The score of a product element at (t, j) = (index 3, index 4): α x (softcapped), −inf where row t does not attend key j. */
    private static Scalar score(Body b, Scalar x, DType d, AttnOpts o, long hd, long len) {
        Scalar u = b.mul(x, b.cst(d, o.alpha(hd)));
        if (o.softcap() > 0) {
            Scalar c = b.cst(d, o.softcap());
            u = b.mul(c, b.math("tanh", b.divf(u, c)));
        }
        return b.select(attended(b, b.index(3), b.index(4), o, len), u, b.cst(d, Double.NEGATIVE_INFINITY));
    }

    /** lse = m + log(z) per row and head from the softmax's row maximum m and denominator z (sink included), σ++[T, H]. */
    Val lse(String out, Val q, Val k, Optional<Val> sinks, AttnOpts o, TensorType t) { return lse(out, probs(q, k, sinks, o), t); }

    private Val lse(String out, Probs ps, TensorType t) {
        Val m = ps.m(), z = ps.z();                             // [B, KV, G, T]
        Val lse = l.elementwise(fresh("lse"), m.type(), List.of(m, z), (b, a) -> List.of(b.add(a.get(0), b.math("log", a.get(1)))));
        return l.reshape(out, f.transpose(lse, Perm.of(0, 3, 1, 2)), t.shape());
    }

    /** exp(s − lse) at the attended pairs, +0.0 elsewhere, σ++[H, T, L] (lse σ++[T, H]). */
    Val exp(String out, Val q, Val k, Val lse, AttnOpts o, TensorType t) { return l.reshape(out, exp5(q, k, lse, o), t.shape()); }

    /** {@link #exp} as [B, KV, G, T, L]. */
    private Val exp5(Val q, Val k, Val lse, AttnOpts o) {
        Val sc = scores(q, k, o);
        Shape s5 = sc.type().shape();
        DType d = sc.type().dtype();
        long len = s5.dim(4);
        Val l4 = rows4(lse, s5);
        return l.overRows(fresh("exps"), sc.type(), List.of(sc), List.of(l4), List.of(), 4, (b, a) -> {
            Scalar v = expDiff(b, a.get(0), a.get(1));
            return List.of(b.select(attended(b, b.index(3), b.index(4), o, len), v, b.cst(d, 0)));
        });
    }

    /** A per-row, per-head value σ++[T, H] (lse, d) as [B, KV, G, T] for probabilities of shape {@code s5}. */
    private Val rows4(Val x, Shape s5) {
        return f.transpose(l.reshape(fresh("lse"), x, Shape.of(s5.dim(0), s5.dim(3), s5.dim(1), s5.dim(2))), Perm.of(0, 2, 3, 1));
    }

    /**
     * attention_dq, _dk, _dv (those flagged, of types {@code types} in that order) without a
     * softcap, P = exp(s − lse) and dS = α P ⊙ (g·v − d) made once: dq = dS k, dk = dSᵀ q, dv = Pᵀ g,
     * the transposed products reading P and dS in place (batch_matmul_transpose_a); P and dS are
     * +0.0 at the pairs not attended, so no product masks again.
     */
    List<Val> backward(Val q, Val k, Val v, Val g, Val lse, Val d, AttnOpts o, boolean dq, boolean dk, boolean dv, List<TensorType> types) {
        Val p5 = exp5(q, k, lse, o);
        Shape s5 = p5.type().shape();
        DType dt = p5.type().dtype();
        List<Val> out = new java.util.ArrayList<>();
        Val ds = null;
        if (dq || dk) {
            double al = o.alpha(q.type().shape().dim(q.type().rank() - 1) / o.heads());
            Val dp = dots(g, v, o);
            ds = l.overRows(fresh("ds"), p5.type(), List.of(p5, dp), List.of(rows4(d, s5)), List.of(), 4,
                    (b, a) -> List.of(b.mul(b.mul(a.get(0), b.subf(a.get(1), a.get(2))), b.cst(dt, al))));
        }
        int i = 0;
        if (dq) out.add(unqueries(fresh("dq"), bmm(batched(ds), keys(k, o, false)), o, types.get(i++)));
        if (dk) out.add(keyProduct(fresh("dk"), batched(ds), queries(q, o), o, types.get(i++)));
        if (dv) out.add(keyProduct(fresh("dv"), batched(p5), queries(g, o), o, types.get(i++)));
        return out;
    }

    /** Σ_{g, t} p[t, j] x[t] per kv head: pᵀ @ x read in place ([B·KV, G·T, L] and [B·KV, G·T, hd]), as σ++[L, KV·hd] of type t. */
    private Val keyProduct(String out, Val p, Val x, AttnOpts o, TensorType t) {
        Shape sp = p.type().shape(), sx = x.type().shape();
        Val y = l.contract(fresh("bmm"), p, true, x, p.type().withShape(Shape.of(sp.dim(0), sp.dim(2), sx.dim(2))));   // [B·KV, L, hd]
        Shape s = t.shape();
        int r = s.rank();
        long bsz = s.prefix(r - 2).vol(), len = s.dim(r - 2), kv = o.kvHeads(), hd = s.dim(r - 1) / kv;
        Val y4 = l.reshape(fresh("keys"), y, Shape.of(bsz, kv, len, hd));
        return l.reshape(out, f.transpose(y4, Perm.of(0, 2, 1, 3)), s);
    }

    Val product(String out, Val a, Val b, AttnOpts o, AttentionProduct.Form form, TensorType t) {
        return switch (form) {
            case QK -> l.reshape(out, masked(dots(a, b, o), o), t.shape());          // q·k where attended, else +0.0
            case PK -> unqueries(out, bmm(batched(masked(probs5(a, o), o)), keys(b, o, false)), o, t);   // Σ_j p[t, j] k[j]
            case PQ -> keyProduct(out, batched(masked(probs5(a, o), o)), queries(b, o), o, t);   // Σ_{g, t} p[t, j] q[t] per kv head
        };
    }
}
