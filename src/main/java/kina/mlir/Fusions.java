package kina.mlir;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.Function;
import kina.check.TypeRules;
import kina.ir.Instr.AttnOpts;
import kina.ir.Instr;
import kina.ir.Instr.*;
import kina.ir.Let;
import kina.ir.Perm;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Var;
import kina.mlir.Mlir.AffineMap;
import kina.mlir.Mlir.Operand;
import kina.mlir.Mlir.Scalar;
import kina.mlir.Mlir.Val;

/**
 * The plan's fusions (the IR-internal {@link Instr.Fused} instructions) in one func, each lowered as
 * the composition it stands for, in the reference kernels' order.
 */
final class Fusions {
    private final Lowering l;
    private int parts;

    Fusions(Lowering l) { this.l = l; }

    /** The values of fusion fu, in the order of {@link Instr.Fused#results}. */
    List<Val> lower(Let at, Instr.Fused fu) {
        Function<Var, Val> x = v -> l.one(v, at);
        return switch (fu) {
            case MatmulT(var a, var b, var ta, var tb) -> List.of(matmul(at, a, b, ta, tb));
            case MatmulShared(var a, var bs, var ta, var tb) -> bs.stream().map(b -> matmul(at, a, b, ta, tb)).toList();
            case SoftmaxGrad(var p, var dp, var rowSums) -> softmaxGrad(x.apply(p), x.apply(dp), rowSums);
            case AttentionWithLse(var q, var k, var v, var sinks, var o) -> {
                Function<Var, TensorType> ty = w -> l.one(w, at).type();
                yield l.attention.withLse(l.fresh("f"), l.fresh("f"), x.apply(q), x.apply(k), x.apply(v), sinks.map(x), o,
                        TypeRules.infer(new Attention(q, k, v, sinks, o), ty), TypeRules.infer(new AttentionLse(q, k, sinks, o), ty));
            }
            case AttentionBackward(var q, var k, var v, var g, var lse, var d, var o, var dq, var dk, var dv) when o.softcap() == 0 -> {
                List<TensorType> types = new ArrayList<>();
                for (AttentionGrad.Wrt w : AttentionGrad.Wrt.values())
                    if (w == AttentionGrad.Wrt.Q ? dq : w == AttentionGrad.Wrt.K ? dk : dv)
                        types.add(TypeRules.infer(new AttentionGrad(q, k, v, g, lse, d, o, w), w2 -> l.one(w2, at).type()));
                yield l.attention.backward(x.apply(q), x.apply(k), x.apply(v), x.apply(g), x.apply(lse), x.apply(d), o, dq, dk, dv, types);
            }
            case AttentionBackward(var q, var k, var v, var g, var lse, var d, var o, var dq, var dk, var dv) -> {
                Map<AttentionGrad.Wrt, Var> grads = attentionGrads(at, new AttentionGrad(q, k, v, g, lse, d, o, AttentionGrad.Wrt.Q), dq, dk, dv);
                List<Val> out = new ArrayList<>();
                for (AttentionGrad.Wrt w : AttentionGrad.Wrt.values()) if (grads.containsKey(w)) out.add(x.apply(grads.get(w)));
                yield out;
            }
            case SwigluSigmoid(var g, var u) -> swigluSigmoid(x.apply(g), x.apply(u));
            case Elementwise(var inputs, var body) -> {
                List<Val> one = elementwiseGeneric(at, inputs, body);
                yield one != null ? one : elementwise(at, inputs, body);
            }
        };
    }

    /** gate·σ(gate)·up and σ(gate) in one generic, σ computed once. */
    private List<Val> swigluSigmoid(Val g, Val u) {
        TensorType t = g.type();
        int r = t.rank();
        AffineMap id = AffineMap.identity(r);
        return l.f.generic(l.fresh("swiglu"), r, Set.of(), List.of(new Operand(g, id), new Operand(u, id)),
                List.of(new Operand(l.f.empty(t), id), new Operand(l.f.empty(t), id)), "", (b, a) -> {
                    Scalar s = Lowering.sigmoid(b, t.dtype(), a.get(0));
                    return List.of(b.mul(b.mul(a.get(0), s), a.get(1)), s);
                });
    }

    /** The softmax VJP over the last axis: d = Σ p ⊙ dp per row (one pass), ds = p ⊙ (dp − d) (one pass); d keeps its axis. */
    private List<Val> softmaxGrad(Val p, Val dp, boolean rowSums) {
        TensorType t = p.type();
        int last = t.rank() - 1;
        Val d = l.reduce(l.fresh("rowsum"), List.of(p, dp), List.of(), last, t.dtype(), 0,
                (b, a) -> List.of(b.accumulate(a.get(2), b.mul(a.get(0), a.get(1)))));
        Val ds = l.overRows(l.fresh("ds"), t, List.of(p, dp), List.of(d), List.of(), last,
                (b, a) -> List.of(b.mul(a.get(0), b.subf(a.get(1), a.get(2)))));
        return rowSums ? List.of(ds, l.reshape(l.fresh("rowsum"), d, t.shape().with(last, 1))) : List.of(ds);
    }

    /**
     * A fused elementwise chain as one linalg.generic over its results' shape, one result per value
     * of the fn: each input read through its indexing map (in place, where the body broadcasts it),
     * an input that is a uniform fill read as a constant; null when the body holds anything else
     * (then it is lowered let by let).
     */
    private List<Val> elementwiseGeneric(Let at, List<Var> inputs, Rhs.Fn fn) {
        List<Var> results = List.of(fn.body().result());
        Map<Var, Instr> body = new LinkedHashMap<>();
        for (Let b : fn.body().lets()) {
            switch (b.rhs()) {
                case Rhs.Tuple(var elems) -> results = elems;
                case Instr ins when !b.destructure() -> body.put(b.var(), ins);
                default -> { return null; }
            }
        }
        Map<Var, Integer> param = new HashMap<>();
        for (int i = 0; i < fn.params().size(); i++) param.put(fn.params().get(i).name(), i);
        for (Var v : results) if (!body.containsKey(v) || body.get(v) instanceof Instr.Broadcast) return null;
        Map<Var, TensorType> types = new HashMap<>();
        Function<Var, TensorType> typeOf = new Function<>() {
            public TensorType apply(Var v) {
                if (param.containsKey(v)) return l.one(inputs.get(param.get(v)), at).type();
                TensorType known = types.get(v);
                if (known == null) types.put(v, known = TypeRules.infer(body.get(v), this));
                return known;
            }
        };
        // the loop space: the shape the body broadcasts to (every broadcast's), else the first value's;
        // every other value has its volume and is read or written reshaped (row-major order kept)
        Shape s = null;
        for (Instr ins0 : body.values())
            if (ins0 instanceof Instr.Broadcast(var x, var to)) {
                if (s != null && !s.equals(to)) return null;
                s = to;
            }
        TensorType first = typeOf.apply(results.getFirst());
        if (s == null) s = first.shape();
        TensorType t = first.withShape(s);
        int r = s.rank();
        List<Operand> ins = new ArrayList<>();
        Map<String, Integer> pairs = new HashMap<>();
        Map<Var, Integer> operandOf = new HashMap<>();          // a body var (a parameter or a broadcast of one) → its operand
        Map<Var, Double> constant = new HashMap<>();            // … or a uniform fill's value
        Map<Var, Var> alias = new HashMap<>();                  // a body reshape → the var it reshapes
        for (var e : body.entrySet()) {
            Instr ins0 = e.getValue();
            boolean bcast = ins0 instanceof Instr.Broadcast;
            if (bcast ? !param.containsKey(ins0.operands().getFirst())
                    : !(ins0 instanceof Instr.Reshape) && !FUSIBLE.contains(ins0.getClass()) || typeOf.apply(e.getKey()).shape().vol() != s.vol()) return null;
            if (ins0 instanceof Instr.Reshape(var x, var ignored)) alias.put(e.getKey(), x);
            for (Var o : ins0.operands()) {
                if (!param.containsKey(o)) continue;
                Var src = inputs.get(param.get(o));
                Var at0 = bcast ? e.getKey() : o;
                Shape from = l.one(src, at).type().shape();
                if (l.fills.containsKey(src)) { constant.put(at0, l.fills.get(src)); continue; }
                if (!bcast && from.vol() != s.vol()) return null;
                AffineMap m = bcast ? broadcastMap(from, s) : AffineMap.identity(r);
                Shape loop = s;
                operandOf.put(at0, pairs.computeIfAbsent(param.get(o) + " " + m.results(), k -> {
                    Val v = l.one(src, at);
                    ins.add(new Operand(bcast ? v : l.reshape(l.fresh("flat"), v, loop), m));
                    return ins.size() - 1;
                }));
            }
        }
        List<Operand> outs = new ArrayList<>();
        for (int i = 0; i < results.size(); i++)
            outs.add(new Operand(l.dest(at.destructure() ? at.binders().get(i) : at.var(), t), AffineMap.identity(r)));
        List<Var> res = results;
        List<Val> made = l.f.generic(l.fresh("ew"), r, Set.of(), ins, outs, "", (b, a) -> {
            Map<Var, Scalar> val = new HashMap<>();
            for (var e : operandOf.entrySet()) val.put(e.getKey(), a.get(e.getValue()));
            for (var e : constant.entrySet()) val.put(e.getKey(), b.cst(t.dtype(), e.getValue()));
            for (var e : body.entrySet()) {
                if (e.getValue() instanceof Instr.Broadcast) continue;
                if (alias.containsKey(e.getKey())) { val.put(e.getKey(), val.get(alias.get(e.getKey()))); continue; }
                List<Scalar> args = e.getValue().operands().stream().map(val::get).toList();
                val.put(e.getKey(), e.getValue() instanceof Instr.Unary u ? Lowering.unary(b, u, t.dtype(), args.getFirst())
                        : Lowering.binary(b, (Instr.Binary) e.getValue(), args));
            }
            return res.stream().map(val::get).toList();
        });
        List<Val> out = new ArrayList<>();
        for (int i = 0; i < res.size(); i++) out.add(l.reshape(l.fresh("ew"), made.get(i), typeOf.apply(res.get(i)).shape()));
        return out;
    }

    /** The instructions a fused chain may hold (the plan's FuseElementwise admits these). */
    private static final Set<Class<?>> FUSIBLE = Set.of(Neg.class, Sqrt.class, Add.class, Sub.class, Mul.class, Div.class, Maximum.class);

    /** The map reading a tensor of shape {@code from} broadcast to {@code to}: new leading axes read nothing, unit axes read index 0. */
    static AffineMap broadcastMap(Shape from, Shape to) {
        int r = to.rank(), lead = r - from.rank();
        int[] m = new int[r - lead];
        for (int i = 0; i < m.length; i++) m[i] = from.dim(i) == 1 && to.dim(lead + i) != 1 ? AffineMap.ZERO : lead + i;
        return new AffineMap(m);
    }

    /** Lowers one instruction of a fusion's composition into a fresh value; errors name the fusion's let. */
    private Var part(Let at, Instr ins) {
        TensorType t = TypeRules.infer(ins, v -> l.one(v, at).type());
        Var v = Var.of("%fused" + (parts++));
        l.env.put(v, List.of(l.lower(new Let(List.of(v), false, ins, at.pos(), at.displayName(), t), ins, l.fresh("f"))));
        return v;
    }

    /** a @ b with either operand's last two axes swapped first. */
    private Val matmul(Let at, Var a, Var b, boolean ta, boolean tb) {
        Val va = l.one(a, at), vb = l.one(b, at);
        TensorType t = TypeRules.infer(new MatmulT(a, b, ta, tb), v -> l.one(v, at).type());
        return l.matmul(l.fresh("f"), va, ta, vb, tb, t);
    }

    /**
     * attention_dq / _dk / _dv as the composition the blockwise kernel computes pair by pair:
     * P = attention_exp(q, k, lse); dv = attention_pq(P, g); dS = P ⊙ (attention_qk(g, v) − d),
     * dU = dS (1 − tanh²(u/C)) with a softcap (u = α attention_qk(q, k)); dq = α attention_pk(dU, k),
     * dk = α attention_pq(dU, q). Not the kernel's blockwise order: equal within rounding.
     */
    Var attentionGrad(Let at, AttentionGrad ag) {
        return attentionGrads(at, ag, ag.wrt() == AttentionGrad.Wrt.Q, ag.wrt() == AttentionGrad.Wrt.K, ag.wrt() == AttentionGrad.Wrt.V).get(ag.wrt());
    }

    /** {@link #attentionGrad} for those of dq, dk, dv asked, P and dU computed once for all of them. */
    private Map<AttentionGrad.Wrt, Var> attentionGrads(Let at, AttentionGrad ag, boolean dq, boolean dk, boolean dv) {
        AttnOpts o = ag.opts();
        Map<AttentionGrad.Wrt, Var> out = new java.util.EnumMap<>(AttentionGrad.Wrt.class);
        Var p = part(at, new AttentionExp(ag.q(), ag.k(), ag.lse(), o));
        if (dv) out.put(AttentionGrad.Wrt.V, part(at, new AttentionProduct(p, ag.g(), o, AttentionProduct.Form.PQ)));
        if (!dq && !dk) return out;
        TensorType pt = l.one(p, at).type();
        Shape ps = pt.shape();
        int r = ps.rank();
        Var dp = part(at, new AttentionProduct(ag.g(), ag.v(), o, AttentionProduct.Form.QK));
        Var dh = part(at, new Transpose(ag.d(), Perm.lastTwo(l.one(ag.d(), at).type().rank())));   // σ++[H, T]
        Var db = part(at, new Broadcast(part(at, new Reshape(dh, ps.with(r - 1, 1))), ps));
        Var du = part(at, new Mul(p, part(at, new Sub(dp, db))));
        TensorType qt = l.one(ag.q(), at).type();
        double al = o.alpha(qt.shape().dim(qt.rank() - 1) / o.heads());
        if (o.softcap() > 0) {
            Var u = part(at, new Mul(part(at, new AttentionProduct(ag.q(), ag.k(), o, AttentionProduct.Form.QK)), part(at, new Fill(pt, al))));
            Var th = part(at, new Tanh(part(at, new Div(u, part(at, new Fill(pt, o.softcap()))))));
            du = part(at, new Mul(du, part(at, new Sub(part(at, new Fill(pt, 1.0)), part(at, new Mul(th, th))))));
        }
        for (AttentionGrad.Wrt w : List.of(AttentionGrad.Wrt.Q, AttentionGrad.Wrt.K)) {
            if (w == AttentionGrad.Wrt.Q ? !dq : !dk) continue;
            boolean q = w == AttentionGrad.Wrt.Q;
            Var prod = part(at, new AttentionProduct(du, q ? ag.k() : ag.q(), o, q ? AttentionProduct.Form.PK : AttentionProduct.Form.PQ));
            out.put(w, part(at, new Mul(prod, part(at, new Fill(l.one(prod, at).type(), al)))));
        }
        return out;
    }

    /**
     * The fn of a fused elementwise chain applied to the inputs, let by let; its names are bound
     * only while it is lowered (the fn is closed, so nothing outside reads them).
     */
    private List<Val> elementwise(Let at, List<Var> inputs, Rhs.Fn body) {
        Map<Var, List<Val>> saved = new HashMap<>();
        BiConsumer<Var, List<Val>> put = (v, val) -> {
            if (!saved.containsKey(v)) saved.put(v, l.env.get(v));
            l.env.put(v, val);
        };
        List<List<Val>> args = inputs.stream().map(v -> List.of(l.one(v, at))).toList();
        for (int i = 0; i < inputs.size(); i++) put.accept(body.params().get(i).name(), args.get(i));
        List<Var> result = List.of(body.body().result());
        for (Let b : body.body().lets()) {
            switch (b.rhs()) {
                case Rhs.Tuple(var elems) -> result = elems;
                case Instr ins -> {
                    TensorType t = TypeRules.infer(ins, v -> l.one(v, at).type());
                    put.accept(b.var(), List.of(l.lower(new Let(List.of(b.var()), false, ins, at.pos(), at.displayName(), t), ins, l.fresh("f"))));
                }
                case Rhs.Fn _, Rhs.Call _, Rhs.Handle _ -> throw new MlirError(at.pos(), "let " + at.displayName()
                        + ": elementwise: its fn holds " + b.rhs().getClass().getSimpleName().toLowerCase(java.util.Locale.ROOT)
                        + ", not an elementwise instruction");
            }
        }
        List<Val> out = new ArrayList<>();
        for (Var v : result) out.add(l.one(v, at));
        saved.forEach((v, old) -> { if (old == null) l.env.remove(v); else l.env.put(v, old); });
        return out;
    }
}
