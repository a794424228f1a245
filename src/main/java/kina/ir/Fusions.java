package kina.ir;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import kina.ir.Instr.*;

/**
 * What each of the plan's fusions ({@link Instr.Fused}) means, written once: the let chain of
 * unfused instructions it stands for. Every stage reads it: the type rule of a fusion is the type
 * of its expansion (kina.check), its reference kernel runs the expansion let by let, which is the
 * order its bits are defined by (kina.eval), and the plan's rewrite table matches the expansion's
 * shape of lets to make it (kina.plan).
 *
 * <p>An expansion's instructions and their wiring depend only on the fusion's attributes (its
 * flags, its number of operands, an elementwise body); the operands' types give the attributes of
 * its instructions (the axes a transpose swaps, the axis a sum reduces, the shape a broadcast makes).
 */
public final class Fusions {
    private Fusions() {}

    /**
     * A fusion's meaning: {@code lets}, plain lets of unfused instructions over the fusion's
     * operands, untyped, in the order they run; {@code results}, the values it makes, in the order
     * of {@link Fused#results()} (each bound by one of the lets or, for an elementwise body that
     * returns a parameter, one of the operands). The lets bind names of their own (see
     * {@link #expand}), so they can run beside the program that holds the fusion.
     */
    public record Expansion(List<Let> lets, List<Var> results) {
        public Expansion {
            lets = List.copyOf(lets);
            results = List.copyOf(results);
        }
    }

    /**
     * The expansion of {@code f}, its operands typed by {@code typeOf}:
     * <ul>
     * <li>{@code %matmul_t(a, b)}: a transpose of the last two axes of a and of b (those flagged), then the matmul;</li>
     * <li>{@code %matmul_shared(a, b₁, …, bₙ)}: the expansion of {@code %matmul_t(a, bᵢ)} for each bᵢ in turn;</li>
     * <li>{@code %softmax_grad(p, dp)}: m = p * dp, d = m.sum(axis=last, keepdims=true), b = d.broadcast(p's shape),
     *     s = dp − b, ds = p * s; results ds[, d];</li>
     * <li>{@code %attention_with_lse(q, k, v[, sinks])}: attention(q, k, v[, sinks]), then attention_lse(q, k[, sinks]);</li>
     * <li>{@code %attention_backward(q, k, v, g, lse, d)}: attention_dq, attention_dk, attention_dv, those flagged;</li>
     * <li>{@code %swiglu_sigmoid(gate, up)}: gate.swiglu(up), then gate.sigmoid();</li>
     * <li>{@code %elementwise(x₁, …, xₙ, fn)}: the fn's lets with its parameters read as the inputs.</li>
     * </ul>
     * Its lets bind {@code %op.0}, {@code %op.1}, … (op the fusion's name), names no program binds
     * (a parser temporary is {@code %} and digits); a name that is one of the operands' is skipped.
     *
     * @throws IllegalArgumentException when an elementwise body holds a let that is not an
     *     instruction (other than the tuple of its results) or a destructuring let; the type rule
     *     refuses such a body by name first
     */
    public static Expansion expand(Fused f, Function<Var, TensorType> typeOf) {
        Builder b = new Builder(f);
        return switch (f) {
            case MatmulT(var a, var bv, var ta, var tb) -> b.done(List.of(b.matmulT(a, bv, ta, tb, typeOf)));
            case MatmulShared(var a, var bs, var ta, var tb) -> {
                List<Var> out = new ArrayList<>();
                for (Var bv : bs) out.add(b.matmulT(a, bv, ta, tb, typeOf));
                yield b.done(out);
            }
            case SoftmaxGrad(var p, var dp, var rowSums) -> {
                Shape s = typeOf.apply(p).shape();
                Var d = b.let(new Sum(b.let(new Mul(p, dp)), s.rank() - 1, true));
                Var ds = b.let(new Mul(p, b.let(new Sub(dp, b.let(new Broadcast(d, s))))));
                yield b.done(rowSums ? List.of(ds, d) : List.of(ds));
            }
            case AttentionWithLse(var q, var k, var v, var sinks, var o) ->
                    b.done(List.of(b.let(new Attention(q, k, v, sinks, o)), b.let(new AttentionLse(q, k, sinks, o))));
            case AttentionBackward(var q, var k, var v, var g, var lse, var d, var o, var dq, var dk, var dv) -> {
                List<Var> out = new ArrayList<>();
                for (AttentionGrad.Wrt w : AttentionGrad.Wrt.values())
                    if (w == AttentionGrad.Wrt.Q ? dq : w == AttentionGrad.Wrt.K ? dk : dv)
                        out.add(b.let(new AttentionGrad(q, k, v, g, lse, d, o, w)));
                yield b.done(out);
            }
            case SwigluSigmoid(var g, var u) -> b.done(List.of(b.let(new Swiglu(g, u)), b.let(new Sigmoid(g))));
            case Elementwise(var inputs, var fn) -> elementwise(b, inputs, fn);
        };
    }

    /** The fn's lets, its parameters renamed to the inputs and its lets to fresh names; its result, or the tuple's elements. */
    private static Expansion elementwise(Builder b, List<Var> inputs, Rhs.Fn fn) {
        if (inputs.size() != fn.params().size())
            throw new IllegalArgumentException("elementwise: " + inputs.size() + " inputs for a body of " + fn.params().size() + " parameters");
        Map<Var, Var> env = new HashMap<>();
        for (int i = 0; i < inputs.size(); i++) env.put(fn.params().get(i).name(), inputs.get(i));
        Function<Var, Var> name = v -> {
            Var n = env.get(v);
            if (n == null) throw new IllegalArgumentException("elementwise: the body reads " + v + ", which is not its own");
            return n;
        };
        List<Var> result = List.of(fn.body().result());
        for (Let l : fn.body().lets()) {
            if (l.rhs() instanceof Rhs.Tuple(var elems) && l.binders().contains(fn.body().result())) {
                result = elems;
                continue;
            }
            if (!(l.rhs() instanceof Instr ins) || ins instanceof Fused || l.destructure())
                throw new IllegalArgumentException("elementwise: let " + l.displayName() + " of the body is not one unfused instruction");
            env.put(l.var(), b.let(Instrs.mapOperands(ins, name::apply)));
        }
        return b.done(result.stream().map(name).toList());
    }

    /** Binds an expansion's lets to fresh names. */
    private static final class Builder {
        private final String stem;
        private final Set<String> operands = new HashSet<>();
        private final List<Let> lets = new ArrayList<>();
        private int next;

        Builder(Fused f) {
            this.stem = "%" + f.op() + ".";
            for (Var v : f.operands()) operands.add(v.name());
        }

        /** A let binding a fresh name to {@code ins}; the name. */
        Var let(Instr ins) {
            String n;
            do n = stem + next++; while (operands.contains(n));
            Var v = new Var(n);
            lets.add(new Let(List.of(v), false, ins, Pos.NONE, null, null));
            return v;
        }

        /** a @ b with a's and b's last two axes swapped first where flagged. */
        Var matmulT(Var a, Var b, boolean ta, boolean tb, Function<Var, TensorType> typeOf) {
            Var at = ta ? let(new Transpose(a, Perm.lastTwo(typeOf.apply(a).rank()))) : a;
            Var bt = tb ? let(new Transpose(b, Perm.lastTwo(typeOf.apply(b).rank()))) : b;
            return let(new Instr.Matmul(at, bt));
        }

        Expansion done(List<Var> results) { return new Expansion(lets, results); }
    }
}
