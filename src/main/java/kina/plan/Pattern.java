package kina.plan;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiPredicate;
import kina.ir.Instr;
import kina.ir.Var;

/**
 * A pattern over the flat program's dataflow, matched at a value (tinygrad's PatternMatcher in
 * miniature): {@code any("p")} matches any value and names it (a second {@code any("p")} must
 * then be the same value); {@code op(Mul.class, a, b)} matches a value an instruction of that
 * class defines, its operands matching a and b; {@link #commutes} tries both operand orders,
 * {@link #once} requires the value to have exactly one reader and no view nor result holding it
 * (so a rewrite may fold it away), {@link #where} adds a condition, {@link #as} names the value.
 */
final class Pattern {
    private final Class<? extends Instr> op;              // null: any value
    private final List<Pattern> operands;
    private final BiPredicate<Graph, Var> where;
    private final boolean commutes, once;
    private final String name;

    private Pattern(Class<? extends Instr> op, List<Pattern> operands, BiPredicate<Graph, Var> where, boolean commutes,
                    boolean once, String name) {
        this.op = op;
        this.operands = operands;
        this.where = where;
        this.commutes = commutes;
        this.once = once;
        this.name = name;
    }

    /** Any value, named. */
    static Pattern any(String name) { return new Pattern(null, List.of(), (g, v) -> true, false, false, name); }

    /** A value defined by an instruction of class {@code k} whose operands match, in order. */
    static Pattern op(Class<? extends Instr> k, Pattern... operands) {
        return new Pattern(k, List.of(operands), (g, v) -> true, false, false, null);
    }

    /** This pattern, also requiring {@code cond} of the graph and the matched value. */
    Pattern where(BiPredicate<Graph, Var> cond) { return new Pattern(op, operands, where.and(cond), commutes, once, name); }

    /** This pattern with its two operands in either order. */
    Pattern commutes() { return new Pattern(op, operands, where, true, once, name); }

    /** This pattern, read by exactly one operand of one let and not pinned. */
    Pattern once() { return new Pattern(op, operands, where, commutes, true, name); }

    /** This pattern, naming the matched value. */
    Pattern as(String n) { return new Pattern(op, operands, where, commutes, once, n); }

    /** The values the pattern names when it matches at {@code v}, or null. */
    Map<String, Var> match(Graph g, Var v) {
        Map<String, Var> m = new HashMap<>();
        return match(g, v, m) ? m : null;
    }

    private boolean match(Graph g, Var v, Map<String, Var> m) {
        if (name != null) {
            Var had = m.get(name);
            if (had != null && !had.equals(v)) return false;
            m.put(name, v);
        }
        if (once && !g.once(v)) return false;
        if (op != null) {
            Instr ins = g.defining(v);
            if (ins == null || !op.isInstance(ins)) return false;
            List<Var> xs = ins.operands();
            if (xs.size() != operands.size()) return false;
            if (!matchAll(g, xs, m, false) && !(commutes && xs.size() == 2 && matchAll(g, xs, m, true))) return false;
        }
        return where.test(g, v);
    }

    /** The operands against the sub-patterns (swapped: the two in reverse), undoing the bindings of a failed try. */
    private boolean matchAll(Graph g, List<Var> xs, Map<String, Var> m, boolean swapped) {
        Map<String, Var> saved = new HashMap<>(m);
        for (int k = 0; k < xs.size(); k++) {
            if (!operands.get(k).match(g, xs.get(swapped ? xs.size() - 1 - k : k), m)) {
                m.clear();
                m.putAll(saved);
                return false;
            }
        }
        return true;
    }
}
