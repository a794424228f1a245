package kina.ad;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.Optional;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Pos;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Var;

/**
 * The reverse scan: the one loop that seeds, skips and accumulates (DESIGN §4.1 rule 1, §5).
 * With {@code T = Tensor} it is the oracle; with {@code T = Var} it is transform_ad. Same code,
 * same order, so the two readings give the same bits:
 * <ul>
 *   <li>lets are visited in reverse program order; a let whose value received no cotangent is
 *       skipped (its op may even lack a rule);</li>
 *   <li>within a let, contributions go to operands in operand order;</li>
 *   <li>a value's cotangent is the left fold {@code old + c} in visit order, and the first
 *       contribution is {@code c} itself (no {@code 0 + c});</li>
 *   <li>a floating parameter that no cotangent reaches gets +0.0 zeros of its type (DESIGN §9.3);
 *       discrete parameters get no entry (Section 14 §3).</li>
 * </ul>
 */
public final class ReverseScan {
    private ReverseScan() {}

    /** The primal result and the cotangents of the floating parameters, in parameter order. */
    public record Outcome<T>(T result, List<T> cotangents) {}

    /**
     * Runs the scan over the body of {@code fn} (a checked fn: every let typed).
     *
     * @param fnName the fn's name, for messages
     * @param seed   the cotangent of the result (ones of R by default: {@link #onesSeed})
     * @throws AdError naming the let where a rule refuses or a pass rule is broken
     */
    public static <T> Outcome<T> reverse(String fnName, Rhs.Fn fn, Primals<T> p, T seed, Ops<T> o) {
        var body = fn.body();
        Var result = body.result();
        checkResult(fnName, fn, p);

        Set<Var> onParams = dependsOnFloatingParams(fn, p);
        Map<Var, T> cot = new HashMap<>();
        cot.put(result, o.named(seed, "g_" + result.name()));
        List<Let> lets = body.lets();
        for (int li = lets.size() - 1; li >= 0; li--) {
            Let let = lets.get(li);
            T g = null;
            for (Var b : let.binders()) if (cot.containsKey(b)) { g = cot.get(b); break; }
            if (g == null) continue;                                          // never received a cotangent
            if (let.destructure())
                throw refused(new Refusal.NotAnAdSpine(
                        "differentiating through a destructuring let is not supported (Section 13)"), let);
            if (let.temporary())
                throw refused(new Refusal.NotAnAdSpine(
                        "a nested expression (method chain) receives a cotangent; children of a differentiated node must be Vars: split it into one let per operation"), let);
            Instr ins = switch (let.rhs()) {
                case Instr i -> i;
                case Rhs.Call c -> throw refused(new Refusal.NotAnAdSpine(
                        "call of " + c.fn() + ": transform_ad does not differentiate through calls; write its body in this fn"), let);
                case Rhs.Handle h -> throw refused(new Refusal.NotAnAdSpine(
                        "nested handle " + h.fn() + " with reverseMode inside a differentiated body is not supported"), let);
                case Rhs.Tuple _ -> throw refused(new Refusal.NotAnAdSpine("a tuple is not differentiable"), let);
                case Rhs.Fn _ -> throw refused(new Refusal.NotAnAdSpine("a fn value is not differentiable"), let);
            };
            switch (Vjp.of(ins, p, p.of(let.var()), g, o)) {
                case Pullback.Refused<T> r -> throw refused(r.why(), let);
                case Pullback.Cotangents<T> c -> {
                    List<Var> xs = ins.operands();
                    if (c.perOperand().size() != xs.size())
                        throw new IllegalStateException("VJP of " + ins.op() + " answered " + c.perOperand().size()
                                + " cotangents for " + xs.size() + " operands");
                    for (int i : new java.util.TreeSet<>(c.notDifferentiated())) {
                        Var x = xs.get(i);
                        if (onParams.contains(x)) throw refused(new Refusal.NotDifferentiated(x.name(), ins.op()), let);
                    }
                    for (int i = 0; i < xs.size(); i++) {
                        Optional<T> ct = c.perOperand().get(i);
                        if (ct.isEmpty()) continue;                            // a data operand
                        Var x = xs.get(i);
                        TensorType want = p.type(x);
                        TensorType got = o.type(ct.get());
                        if (!want.equals(got))
                            throw new IllegalStateException("VJP of " + ins.op() + " gave " + got + " for operand "
                                    + x + " of type " + want);
                        T prev = cot.get(x);
                        T next = prev == null ? ct.get() : o.add(prev, ct.get());    // old + new
                        cot.put(x, o.named(next, "g_" + x.name()));
                    }
                }
            }
        }
        List<T> grads = new ArrayList<>();
        for (Rhs.Param prm : fn.params()) {
            if (!prm.type().dtype().floating()) continue;                      // discrete: no adjoint
            T g = cot.get(prm.name());
            grads.add(g != null ? g : o.named(o.fill(prm.type(), 0.0), "g_" + prm.name().name()));
        }
        return new Outcome<>(p.of(result), grads);
    }

    /**
     * The floating values of the body that are, or are computed from, a floating parameter (the
     * values a gradient could be asked of); inputs and constants do not count.
     */
    private static <T> Set<Var> dependsOnFloatingParams(Rhs.Fn fn, Primals<T> p) {
        Set<Var> dep = new HashSet<>();
        for (Rhs.Param prm : fn.params()) if (prm.type().dtype().floating()) dep.add(prm.name());
        for (Let let : fn.body().lets()) {
            List<Var> reads = switch (let.rhs()) {
                case Instr i -> i.operands();
                case Rhs.Call c -> c.args();
                case Rhs.Handle h -> h.args();
                case Rhs.Tuple t -> t.elems();
                case Rhs.Fn _ -> List.of();
            };
            if (reads.stream().anyMatch(dep::contains)) dep.addAll(let.binders());
        }
        return dep;
    }

    /** Ones of the result's type: the default seed (Section 14 §3). */
    public static <T> T onesSeed(Rhs.Fn fn, Primals<T> p, Ops<T> o) {
        return o.fill(p.type(fn.body().result()), 1.0);
    }

    private static <T> void checkResult(String fnName, Rhs.Fn fn, Primals<T> p) {
        Var result = fn.body().result();
        Let def = fn.body().binding(result);
        if (result.temporary()) {
            throw new AdError(new Refusal.NotAnAdSpine(
                    "the body of " + fnName + " must end in a Var: bind its result expression with a let"),
                    def != null ? def.displayName() : fnName, def != null ? def.pos() : fn.body().resultPos());
        }
        TensorType rt = p.type(result);
        if (!rt.dtype().floating()) {
            String op = def != null && def.rhs() instanceof Instr i ? i.op() : "parameter";
            throw new AdError(new Refusal.NotDifferentiated(result.name() + " : " + rt + " is discrete; reverse mode needs a floating result", op),
                    result.name(), def != null ? def.pos() : fn.body().resultPos());
        }
    }

    private static AdError refused(Refusal r, Let let) {
        return new AdError(r, let.displayName(), let.pos() == null ? Pos.NONE : let.pos());
    }
}
