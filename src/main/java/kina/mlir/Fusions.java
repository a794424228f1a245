package kina.mlir;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
            case SoftmaxGrad(var p, var dp, var rowSums) -> softmaxGrad(at, p, dp, rowSums).stream().map(x).toList();
            case AttentionWithLse(var q, var k, var v, var sinks, var o) -> List.of(
                    x.apply(part(at, new Attention(q, k, v, sinks, o))), x.apply(part(at, new AttentionLse(q, k, sinks, o))));
            case AttentionBackward(var q, var k, var v, var g, var lse, var d, var o, var dq, var dk, var dv) -> {
                List<Val> out = new ArrayList<>();
                if (dq) out.add(x.apply(attentionGrad(at, new AttentionGrad(q, k, v, g, lse, d, o, AttentionGrad.Wrt.Q))));
                if (dk) out.add(x.apply(attentionGrad(at, new AttentionGrad(q, k, v, g, lse, d, o, AttentionGrad.Wrt.K))));
                if (dv) out.add(x.apply(attentionGrad(at, new AttentionGrad(q, k, v, g, lse, d, o, AttentionGrad.Wrt.V))));
                yield out;
            }
            case SwigluSigmoid(var g, var u) -> List.of(x.apply(part(at, new Swiglu(g, u))), x.apply(part(at, new Sigmoid(g))));
            case Elementwise(var inputs, var body) -> elementwise(at, inputs, body);
        };
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

    /** p ⊙ (dp − broadcast(Σ_last p ⊙ dp)) and, with rowSums, the row sums. */
    private List<Var> softmaxGrad(Let at, Var p, Var dp, boolean rowSums) {
        Shape s = l.one(p, at).type().shape();
        Var d = part(at, new Sum(part(at, new Mul(p, dp)), s.rank() - 1, true));
        Var ds = part(at, new Mul(p, part(at, new Sub(dp, part(at, new Broadcast(d, s))))));
        return rowSums ? List.of(ds, d) : List.of(ds);
    }

    /**
     * attention_dq / _dk / _dv as the composition the blockwise kernel computes pair by pair:
     * P = attention_exp(q, k, lse); dv = attention_pq(P, g); dS = P ⊙ (attention_qk(g, v) − d),
     * dU = dS (1 − tanh²(u/C)) with a softcap (u = α attention_qk(q, k)); dq = α attention_pk(dU, k),
     * dk = α attention_pq(dU, q). Not the kernel's blockwise order: equal within rounding.
     */
    Var attentionGrad(Let at, AttentionGrad ag) {
        AttnOpts o = ag.opts();
        Var p = part(at, new AttentionExp(ag.q(), ag.k(), ag.lse(), o));
        if (ag.wrt() == AttentionGrad.Wrt.V) return part(at, new AttentionProduct(p, ag.g(), o, AttentionProduct.Form.PQ));
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
        boolean dq = ag.wrt() == AttentionGrad.Wrt.Q;
        Var prod = part(at, new AttentionProduct(du, dq ? ag.k() : ag.q(), o, dq ? AttentionProduct.Form.PK : AttentionProduct.Form.PQ));
        return part(at, new Mul(prod, part(at, new Fill(l.one(prod, at).type(), al))));
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
