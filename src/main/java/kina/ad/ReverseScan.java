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
 * The reverse scan: the one loop that seeds, skips and accumulates, in the order
 * docs/language.md ("Bits") promises.
 * With {@code T = Tensor} it is the oracle; with {@code T = Var} it is transform_ad. Same code,
 * same order, so the two readings give the same bits:
 * <ul>
 *   <li>lets are visited in reverse program order; a let whose value received no cotangent is
 *       skipped (its op may even lack a rule);</li>
 *   <li>within a let, contributions go to operands in operand order;</li>
 *   <li>a value's cotangent is the left fold {@code old + c} in visit order, and the first
 *       contribution is {@code c} itself (no {@code 0 + c});</li>
 *   <li>a floating parameter that no cotangent reaches gets +0.0 zeros of its type;
 *       discrete parameters get no entry (I64 and I1 values never receive a cotangent).</li>
 * </ul>
 */
public final class ReverseScan {
    private ReverseScan() {}

    /** The primal result and the cotangents of the floating parameters, in parameter order. */
    public record Outcome<T>(T result, List<T> cotangents) {}

    /**
     * Runs the scan over the body of {@code fn}, a checked fn (every let typed) flattened by
     * {@link Inline#flatten} (instructions only, or fn lets, which never receive a cotangent).
     *
     * @param fnName the fn's name, for messages
     * @param seed   the cotangent of the result (ones of R by default: {@link #onesSeed})
     * @throws AdError naming the let where a rule refuses or a pass rule is broken
     */
    public static <T> Outcome<T> reverse(String fnName, Rhs.Fn fn, Primals<T> p, T seed, Ops<T> o) {
        Var result = fn.body().result();
        checkResult(fnName, fn, p);
        Set<Var> params = new HashSet<>();
        for (Rhs.Param prm : fn.params()) if (prm.type().dtype().floating()) params.add(prm.name());
        Map<Var, T> cot = new HashMap<>();
        cot.put(result, o.named(seed, "g_" + result.name()));
        scan(fnName, fn.body().lets(), cot, dependsOn(fn, params), false, x -> "g_" + x.name(), p, o);
        List<T> grads = new ArrayList<>();
        for (Rhs.Param prm : fn.params()) {
            if (!prm.type().dtype().floating()) continue;                      // discrete: no adjoint
            T g = cot.get(prm.name());
            grads.add(g != null ? g : o.named(o.fill(prm.type(), 0.0), "g_" + prm.name().name()));
        }
        return new Outcome<>(p.of(result), grads);
    }

    /**
     * J·t, forward mode from the VJP rules by transposition: {@code rev} is a
     * reverse-mode fn with a seed parameter u, its last, returning (R, g0, …, gk-1), each g_i linear
     * in u (u ↦ g_i = J_iᵀu). The scan over rev's body with tangent t_i planted on g_i (added where
     * two g_i are one value) answers u's cotangent, Σ_i J_i t_i. Only values computed from u receive
     * cotangents: the pullback is linear in u, so the rules of its lets read only primals, and the
     * first-order backward itself is never needed. A tangent a g_i does not depend on u for (a
     * zeros gradient) contributes nothing; J·t is +0.0 zeros when no tangent reaches u.
     *
     * @param tangents t_i, one per floating parameter of the fn rev was made from, in order
     */
    public static <T> T transpose(String fnName, Rhs.Fn rev, List<T> tangents, Primals<T> p, Ops<T> o) {
        Var u = rev.params().getLast().name();
        Var result = rev.body().result();
        Let tuple = rev.body().binding(result);
        if (tuple == null || !(tuple.rhs() instanceof Rhs.Tuple(List<Var> elems)) || elems.size() != tangents.size() + 1)
            throw new IllegalStateException("transpose: " + fnName + "'s reverse-mode fn does not end in (R, g0, …)");
        Set<Var> active = dependsOn(rev, Set.of(u));
        java.util.function.Function<Var, String> name = x -> x.equals(u) ? "dot_" + elems.getFirst().name()
                : x.name().startsWith("g_") ? "dot_" + x.name().substring(2) : "dot_" + x.name();
        Map<Var, T> cot = new HashMap<>();
        for (int i = 0; i < tangents.size(); i++) {
            Var g = elems.get(i + 1);
            if (!active.contains(g)) continue;
            T prev = cot.get(g);
            cot.put(g, o.named(prev == null ? tangents.get(i) : o.add(prev, tangents.get(i)), name.apply(g)));
        }
        scan(fnName, rev.body().lets(), cot, active, true, name, p, o);
        T jt = cot.get(u);
        return jt != null ? jt : o.named(o.fill(p.type(u), 0.0), name.apply(u));
    }

    /**
     * The one loop: lets in reverse order, each that received a cotangent runs its rule, and the
     * contributions go to its operands in operand order, {@code old + new}. {@code active} are the
     * values a cotangent may be asked of (a rule's not-differentiated operand among them is refused);
     * with {@code prune}, contributions to other values are dropped.
     */
    private static <T> void scan(String fnName, List<Let> lets, Map<Var, T> cot, Set<Var> active, boolean prune,
                                 java.util.function.Function<Var, String> name, Primals<T> p, Ops<T> o) {
        for (int li = lets.size() - 1; li >= 0; li--) {
            Let let = lets.get(li);
            T g = null;
            for (Var b : let.binders()) if (cot.containsKey(b)) { g = cot.get(b); break; }
            if (g == null) continue;                                          // never received a cotangent
            if (!(let.rhs() instanceof Instr ins))                           // Inline.flatten leaves instructions only
                throw new IllegalStateException("let " + let.displayName() + " of " + fnName
                        + " is not an instruction: the body was not flattened (Inline.flatten)");
            if (let.destructure())
                throw refused(new Refusal.NotAnAdSpine(ins.op() + " makes several values; reverse mode differentiates "
                        + "instructions of one result"), let);
            if (let.temporary())
                throw refused(new Refusal.NotAnAdSpine(
                        "a nested expression (method chain) receives a cotangent; children of a differentiated node must be Vars: split it into one let per operation"), let);
            switch (Vjp.of(ins, p, p.of(let.var()), g, o)) {
                case Pullback.Refused<T> r -> throw refused(r.why(), let);
                case Pullback.Cotangents<T> c -> {
                    List<Var> xs = ins.operands();
                    if (c.perOperand().size() != xs.size())
                        throw new IllegalStateException("VJP of " + ins.op() + " answered " + c.perOperand().size()
                                + " cotangents for " + xs.size() + " operands");
                    for (int i : new java.util.TreeSet<>(c.notDifferentiated())) {
                        Var x = xs.get(i);
                        if (active.contains(x)) throw refused(new Refusal.NotDifferentiated(x.name(), ins.op()), let);
                    }
                    for (int i = 0; i < xs.size(); i++) {
                        Optional<T> ct = c.perOperand().get(i);
                        if (ct.isEmpty()) continue;                            // a data operand
                        Var x = xs.get(i);
                        if (prune && !active.contains(x)) continue;
                        TensorType want = p.type(x);
                        TensorType got = o.type(ct.get());
                        if (!want.equals(got))
                            throw new IllegalStateException("VJP of " + ins.op() + " gave " + got + " for operand "
                                    + x + " of type " + want);
                        T prev = cot.get(x);
                        T next = prev == null ? ct.get() : o.add(prev, ct.get());    // old + new
                        cot.put(x, o.named(next, name.apply(x)));
                    }
                }
            }
        }
    }

    /**
     * The values of the body that are, or are computed from, one of {@code from} (the values a
     * gradient could be asked of); inputs and constants do not count.
     */
    private static Set<Var> dependsOn(Rhs.Fn fn, Set<Var> from) {
        Set<Var> dep = new HashSet<>(from);
        for (Let let : fn.body().lets()) {
            if (let.reads().stream().anyMatch(dep::contains)) dep.addAll(let.binders());
        }
        return dep;
    }

    /** Ones of the result's type: the default seed, which makes each cotangent a gradient of ΣR. */
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
