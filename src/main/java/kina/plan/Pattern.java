package kina.plan;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kina.ir.Fusions;
import kina.ir.Instr;
import kina.ir.Var;

/**
 * A pattern over the flat program's dataflow, matched at a value (tinygrad's PatternMatcher in
 * miniature), read off a fusion's expansion ({@link #of}): {@code any("p")} matches any value and
 * names it (a second {@code any("p")} must then be the same value); {@code op(Mul.class, a, b)}
 * matches a value an instruction of that class defines, its operands matching a and b;
 * {@link #commutes} tries both operand orders, {@link #as} names the value.
 */
final class Pattern {
    private final Class<? extends Instr> op;              // null: any value
    private final List<Pattern> operands;
    private final boolean commutes;
    private final String name;

    private Pattern(Class<? extends Instr> op, List<Pattern> operands, boolean commutes, String name) {
        this.op = op;
        this.operands = operands;
        this.commutes = commutes;
        this.name = name;
    }

    /**
     * The pattern of expansion {@code e} at its value {@code at}: an operand of the fusion (one of
     * {@code operands}) is {@link #any} named by it; a value of the expansion is {@link #op} of its
     * instruction's class over its operands' patterns, named by it. A mul or add commutes (its bits
     * do not depend on the order of its operands). Attributes are not matched: the rule compares
     * them with the expansion over the matched operands.
     */
    static Pattern of(Fusions.Expansion e, Set<Var> operands, Var at) {
        if (operands.contains(at)) return any(at.name());
        Instr ins = e.lets().stream().filter(l -> l.binders().contains(at)).map(l -> (Instr) l.rhs()).findFirst().orElseThrow();
        Pattern p = op(ins.getClass(), ins.operands().stream().map(v -> of(e, operands, v)).toArray(Pattern[]::new)).as(at.name());
        return ins instanceof Instr.Mul || ins instanceof Instr.Add ? p.commutes() : p;
    }

    /** Any value, named. */
    static Pattern any(String name) { return new Pattern(null, List.of(), false, name); }

    /** A value defined by an instruction of class {@code k} whose operands match, in order. */
    static Pattern op(Class<? extends Instr> k, Pattern... operands) { return new Pattern(k, List.of(operands), false, null); }

    /** This pattern with its two operands in either order. */
    Pattern commutes() { return new Pattern(op, operands, true, name); }

    /** This pattern, naming the matched value. */
    Pattern as(String n) { return new Pattern(op, operands, commutes, n); }

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
        if (op == null) return true;
        Instr ins = g.defining(v);
        if (ins == null || !op.isInstance(ins)) return false;
        List<Var> xs = ins.operands();
        if (xs.size() != operands.size()) return false;
        return matchAll(g, xs, m, false) || commutes && xs.size() == 2 && matchAll(g, xs, m, true);
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
