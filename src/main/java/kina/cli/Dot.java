package kina.cli;

import java.util.HashSet;
import java.util.Set;
import kina.ir.Block;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Printer;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Var;

/**
 * A Graphviz rendering of a transformed program: one cluster per fn, forward lets (the fn's own)
 * in white, backward lets (recorded by transform_ad) in blue, edges from operands to users. A
 * destructuring let is one node; an edge from it is labelled with the element it carries.
 */
final class Dot {
    private Dot() {}

    static String render(Program p) {
        StringBuilder b = new StringBuilder("digraph kina {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n");
        int[] cluster = {0};
        block(p.body(), "top", b, cluster, null);
        return b.append("}\n").toString();
    }

    private static void block(Block blk, String scope, StringBuilder b, int[] cluster, Set<Var> forward) {
        java.util.Map<Var, String> node = new java.util.HashMap<>();   // a destructured element → its let's node
        for (Let l : blk.lets()) {
            if (l.rhs() instanceof Rhs.Fn fn) {
                String name = l.displayName();
                b.append("  subgraph cluster_").append(cluster[0]++).append(" {\n    label=\"fn ").append(esc(name)).append("\";\n");
                Set<Var> fwd = name.endsWith("_grad") ? forwardPart(fn) : null;
                block(fn.body(), name, b, cluster, fwd);
                b.append("  }\n");
                continue;
            }
            String pattern = l.destructure() ? "(" + String.join(", ", l.binders().stream().map(Var::name).toList()) + ")" : l.var().name();
            String id = scope + "/" + pattern;
            for (Var v : l.binders()) node.put(v, id);
            boolean backward = forward != null && l.binders().stream().noneMatch(forward::contains);
            b.append("    \"").append(esc(id)).append("\" [label=\"").append(esc(pattern + " = " + label(l.rhs()))).append('"')
                    .append(backward ? ", style=filled, fillcolor=\"#cfe2ff\"" : "").append("];\n");
            for (Var u : l.reads()) {
                String from = node.getOrDefault(u, scope + "/" + u.name());
                boolean element = !from.equals(scope + "/" + u.name());
                b.append("    \"").append(esc(from)).append("\" -> \"").append(esc(id)).append('"')
                        .append(element ? " [label=\"" + esc(u.name()) + "\"]" : "").append(";\n");
            }
        }
    }

    /** The lets of a _grad fn up to the last one whose name does not look recorded: its forward. */
    private static Set<Var> forwardPart(Rhs.Fn fn) {
        Set<Var> fwd = new HashSet<>();
        for (Rhs.Param p : fn.params()) fwd.add(p.name());
        for (Let l : fn.body().lets()) {
            boolean recorded = l.pos() == kina.ir.Pos.NONE && l.owner() == null;
            if (!recorded) fwd.addAll(l.binders());
        }
        return fwd;
    }

    private static String label(Rhs r) {
        return switch (r) {
            case Instr i -> Printer.rhs(i);
            case Rhs.Call c -> c.fn() + "(" + String.join(", ", c.args().stream().map(Var::name).toList()) + ")";
            case Rhs.Handle h -> "handle " + h.fn() + "(…) with " + (h.mode() instanceof Rhs.Mode.ForwardMode ? "forwardMode(…)" : "reverseMode");
            case Rhs.Tuple t -> t.elems().toString();
            case Rhs.Fn _ -> "fn";
        };
    }

    private static String esc(String s) { return s.replace("\\", "\\\\").replace("\"", "\\\""); }
}
