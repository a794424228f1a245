package kina.plan;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/**
 * The flat program as the rewrite table sees it: its lets in schedule order, and for every value
 * the let that defines it, the lets that read it, its type and its storage (a reshape is a view
 * of its source's storage, so they share a root). A rewrite reads a Graph and describes its
 * changes in an {@link Edit}; the table builds a fresh Graph after each rule.
 */
final class Graph {
    final List<Let> lets;
    final Var result;
    private final List<Var> outputs;
    private final Map<Var, Integer> def = new HashMap<>();
    private final Map<Var, List<Integer>> readers = new HashMap<>();
    private final Map<Var, TensorType> types = new HashMap<>();
    private final Map<Var, Var> root = new HashMap<>();
    private final Set<Var> pinned = new HashSet<>();
    private final Map<Var, List<Integer>> storageReaders = new HashMap<>();

    Graph(List<Let> lets, Var result) {
        this.lets = List.copyOf(lets);
        this.result = result;
        for (int i = 0; i < this.lets.size(); i++) {
            Let l = this.lets.get(i);
            List<TensorType> ts = tensorTypes(l);
            for (int k = 0; k < l.binders().size(); k++) {
                Var b = l.binders().get(k);
                def.put(b, i);
                if (k < ts.size()) types.put(b, ts.get(k));
                root.put(b, l.rhs() instanceof Instr.Reshape(Var x, var _) ? rootOf(x) : b);
            }
            for (Var a : l.reads()) {
                readers.computeIfAbsent(a, _ -> new ArrayList<>()).add(i);
                storageReaders.computeIfAbsent(rootOf(a), _ -> new ArrayList<>()).add(i);
            }
        }
        Let last = def.containsKey(result) ? this.lets.get(def.get(result)) : null;
        this.outputs = last != null && last.rhs() instanceof Rhs.Tuple(List<Var> elems) ? elems : List.of(result);
        for (Var o : outputs) pinned.add(rootOf(o));
        for (Let l : this.lets) if (l.rhs() instanceof Instr.Reshape) pinned.add(rootOf(l.var()));
    }

    private static List<TensorType> tensorTypes(Let l) {
        return switch (l.type()) {
            case TensorType t -> List.of(t);
            case Type.Tuple t -> t.elems().stream().map(e -> (TensorType) e).toList();
            case null, default -> List.of();
        };
    }

    /** The flat result's values, in order (a value may appear more than once). */
    List<Var> outputs() { return outputs; }

    int size() { return lets.size(); }

    Let let(int i) { return lets.get(i); }

    /** The instruction of let i, or null for the result tuple. */
    Instr instr(int i) { return lets.get(i).rhs() instanceof Instr ins ? ins : null; }

    /** The index of the let that binds v, or −1 for none. */
    int def(Var v) { return def.getOrDefault(v, -1); }

    /**
     * Where v's storage is made: the index of the let that computes its root, or −1 when the root
     * is an input or a constant (which exist before the first step).
     */
    int madeAt(Var v) {
        int i = def(rootOf(v));
        return i < 0 || instr(i) instanceof Instr.Constant ? -1 : i;
    }

    /** The lets reading v's storage: v's readers and those of every view of it, in schedule order. */
    List<Integer> storageReaders(Var v) { return storageReaders.getOrDefault(rootOf(v), List.of()); }

    /** The instruction that defines v, or null. */
    Instr defining(Var v) {
        int i = def(v);
        return i < 0 ? null : instr(i);
    }

    /** The lets reading v, one entry per operand that is v, in schedule order (the result tuple included). */
    List<Integer> readers(Var v) { return readers.getOrDefault(v, List.of()); }

    TensorType type(Var v) { return types.get(v); }

    /** The value owning v's storage: v itself, or a reshape's source, followed to the end. */
    Var rootOf(Var v) { return root.getOrDefault(v, v); }

    /** Whether v's storage is a result or has a view: a rewrite must neither drop it nor leave it half written. */
    boolean pinned(Var v) { return pinned.contains(rootOf(v)); }

    /** Whether v is read once, by one operand of one let, and is not pinned: a rewrite may fold it into its reader. */
    boolean once(Var v) { return readers(v).size() == 1 && !pinned(v); }

    /** Whether a and b hold the same value: one Var, or views of one storage with one type. */
    boolean same(Var a, Var b) { return a.equals(b) || rootOf(a).equals(rootOf(b)) && type(a).equals(type(b)); }

    /**
     * The changes one rule makes to a graph: lets replaced (by one new let in place) or dropped.
     * Every other let is passed through unchanged, in order.
     */
    static final class Edit {
        private final Graph g;
        private final Let[] replace;
        private final List<List<Let>> after, before;
        private final boolean[] dropped;
        private int made;

        Edit(Graph g) {
            this.g = g;
            this.replace = new Let[g.size()];
            this.dropped = new boolean[g.size()];
            this.after = new ArrayList<>(java.util.Collections.nCopies(g.size(), List.of()));
            this.before = new ArrayList<>(java.util.Collections.nCopies(g.size(), List.of()));
        }

        /** Puts {@code l} right before let i's place, in call order. */
        void before(int i, Let l) {
            if (before.get(i).isEmpty()) before.set(i, new ArrayList<>());
            before.get(i).add(l);
        }

        /**
         * Makes view v (a reshape, or a chain of them, of a value made earlier, or of a constant)
         * bound before let i, moving its lets there when they come later: a view costs nothing
         * where it is bound, and a constant is a slot filled before any step ({@link Graph#madeAt}).
         */
        void hoist(Var v, int i) {
            int d = g.def(v);
            if (d < i || dropped[d]) return;
            if (g.instr(d) instanceof Instr.Reshape(Var x, var _)) hoist(x, i);
            else if (!(g.instr(d) instanceof Instr.Constant)) return;
            dropped[d] = true;
            before(i, g.let(d));
        }

        /** Puts {@code l} right after let i's place (after its replacement, or where it was), in call order. */
        void after(int i, Let l) {
            if (after.get(i).isEmpty()) after.set(i, new ArrayList<>());
            after.get(i).add(l);
        }

        /** Let i becomes {@code by}; counts one rewrite. */
        void replace(int i, Let by) {
            replace[i] = by;
            made++;
        }

        void drop(int i) { dropped[i] = true; }

        /** Drops let i and counts it (a rule whose work is dropping lets). */
        void remove(int i) {
            dropped[i] = true;
            made++;
        }

        boolean dropped(int i) { return dropped[i]; }

        boolean replaced(int i) { return replace[i] != null; }

        /** How many new lets this edit makes. */
        int made() { return made; }

        /** The lets after the edit. */
        List<Let> lets() {
            List<Let> out = new ArrayList<>(g.size());
            for (int i = 0; i < g.size(); i++) {
                out.addAll(before.get(i));
                if (replace[i] != null) out.add(replace[i]);
                else if (!dropped[i]) out.add(g.let(i));
                out.addAll(after.get(i));
            }
            return out;
        }
    }
}
