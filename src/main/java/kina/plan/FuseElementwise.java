package kina.plan;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Pos;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;
import kina.kernels.Fusion;

/**
 * The elementwise rule of the rewrite table: chains of F32 / F64 neg, sqrt, add, sub, mul, div
 * and maximum become one {@code %elementwise(inputs…, fn)} whose body holds the chain's lets, run
 * by the plan as one pass over the elements. A broadcast read only by such lets, whose source is
 * a scalar or a block of contiguous axes, moves into the body (read in place, never
 * materialised), and a uniform fill is an input the pass reads as a scalar. A lone step is left
 * alone unless it reads such a broadcast or fill.
 *
 * <p>Grouping, in schedule order: a step joins the open groups that made its operands; a step
 * outside a group that reads one of its values (directly or through an in-place broadcast)
 * closes that group, so every outside reader runs after the group, which runs where its last
 * member ran. A group's results are the values read outside it or returned. Bits: the body is
 * the members' own instructions, on the same operands, in the same order.
 */
final class FuseElementwise {
    private FuseElementwise() {}

    /** The fusible instructions: exact IEEE operations (transcendentals keep their own kernels' bits). */
    static boolean fusible(Instr ins) {
        return ins instanceof Instr.Neg || ins instanceof Instr.Sqrt || ins instanceof Instr.Add || ins instanceof Instr.Sub
                || ins instanceof Instr.Mul || ins instanceof Instr.Div || ins instanceof Instr.Maximum;
    }

    private static boolean floating(TensorType t) { return t.dtype() == DType.F32 || t.dtype() == DType.F64; }

    /** Whether let i is a step: an instruction that computes (not a constant, a view or the result tuple). */
    private static boolean step(Graph g, int i) {
        Instr ins = g.instr(i);
        return ins != null && !(ins instanceof Instr.Constant) && !(ins instanceof Instr.Reshape);
    }

    static Graph.Edit fuse(Graph g) {
        int n = g.size();
        Map<Var, Integer> producer = new HashMap<>();
        for (int i = 0; i < n; i++) if (step(g, i)) for (Var b : g.let(i).binders()) producer.put(b, i);
        // ---- broadcasts read in place: every reader fused, no view, not a result ----
        Map<Var, Var> leafSrc = new HashMap<>();
        for (int i = 0; i < n; i++)
            if (g.instr(i) instanceof Instr.Broadcast(Var x, var _)) {
                Var out = g.let(i).var();
                if (floating(g.type(out)) && !g.pinned(out) && Fusion.readsInPlace(g.type(x).shape(), g.type(out).shape())) leafSrc.put(out, x);
            }
        for (int i = 0; i < n; i++) if (step(g, i) && !fusibleStep(g, i)) for (Var a : g.instr(i).operands()) leafSrc.remove(a);
        // ---- uniform fills (constants) read as scalars ----
        Set<Var> fills = new HashSet<>();
        for (int i = 0; i < n; i++)
            for (Var b : g.let(i).binders()) {
                int r = g.def(g.rootOf(b));
                if (r >= 0 && g.instr(r) instanceof Instr.Fill && floating(g.type(b)) && !leafSrc.containsKey(b)) fills.add(b);
            }
        // ---- groups: union-find over open groups, in schedule order ----
        int[] groupOf = new int[n], parent = new int[n];
        boolean[] open = new boolean[n];
        Arrays.fill(groupOf, -1);
        int groups = 0;
        for (int i = 0; i < n; i++) {
            if (!step(g, i) || leafSrc.containsKey(g.let(i).binders().getFirst())) continue;
            boolean fus = fusibleStep(g, i);
            for (Var a : g.instr(i).operands()) {                       // outside reads close the producer's group
                boolean viaLeaf = leafSrc.containsKey(a) || fills.contains(a);
                Integer p = producer.get(g.rootOf(leafSrc.getOrDefault(a, a)));
                if (p == null || groupOf[p] < 0) continue;
                int grp = find(parent, groupOf[p]);
                if (open[grp] && (!fus || viaLeaf)) open[grp] = false;
            }
            if (!fus) continue;
            int target = -1;
            for (Var a : g.instr(i).operands()) {
                if (leafSrc.containsKey(a) || fills.contains(a)) continue;
                Integer p = producer.get(g.rootOf(a));
                if (p == null || groupOf[p] < 0) continue;
                int grp = find(parent, groupOf[p]);
                if (!open[grp] || grp == target) continue;
                if (target < 0) target = grp;
                else parent[grp] = target;
            }
            if (target < 0) { target = groups++; parent[target] = target; open[target] = true; }
            groupOf[i] = target;
        }
        // ---- members per group; a lone step reading no in-place broadcast or fill stays as it was ----
        Map<Integer, List<Integer>> members = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) if (groupOf[i] >= 0) members.computeIfAbsent(find(parent, groupOf[i]), _ -> new ArrayList<>()).add(i);
        int[] unit = new int[n];
        for (int i = 0; i < n; i++) unit[i] = -1 - i;
        for (var e : members.entrySet()) {
            List<Integer> m = e.getValue();
            boolean leafRead = false;
            for (int i : m) for (Var a : g.instr(i).operands()) leafRead |= leafSrc.containsKey(a) || fills.contains(a);
            if (m.size() > 1 || leafRead) for (int i : m) unit[i] = e.getKey();
        }
        // ---- values read outside their group (storage roots) ----
        Set<Var> outside = new HashSet<>();
        for (Var o : g.outputs()) outside.add(g.rootOf(o));
        for (int i = 0; i < n; i++) {
            if (!step(g, i) || leafSrc.containsKey(g.let(i).binders().getFirst())) continue;
            for (Var a : g.instr(i).operands()) {
                Var r = g.rootOf(leafSrc.getOrDefault(a, a));
                Integer p = producer.get(r);
                if (p != null && unit[p] != unit[i]) outside.add(r);
            }
        }
        // ---- the new program ----
        Graph.Edit e = new Graph.Edit(g);
        for (Var b : leafSrc.keySet()) e.drop(g.def(b));
        Map<Var, Integer> groupOfRoot = new HashMap<>();               // a member's value → its group's last member
        for (var m : members.values())
            if (unit[m.getFirst()] >= 0) for (int i : m) groupOfRoot.put(g.let(i).var(), m.getLast());
        for (var m : members.values()) {
            if (unit[m.getFirst()] < 0) continue;
            int last = m.getLast();
            if (m.stream().noneMatch(i -> outside.contains(g.let(i).var()))) continue;   // nothing reads it: dead, left as it is
            e.replace(last, group(g, m, leafSrc, fills, outside));
            for (int i : m) if (i != last) e.drop(i);
        }
        // views of a member's value made before its group ran move after it (or go, when only members read them)
        for (int i = 0; i < n; i++) {
            if (!(g.instr(i) instanceof Instr.Reshape)) continue;
            Integer at = groupOfRoot.get(g.rootOf(g.let(i).var()));
            if (at == null || i > at) continue;
            e.drop(i);
            if (outside.contains(g.rootOf(g.let(i).var()))) e.after(at, g.let(i));
        }
        return e;
    }

    private static boolean fusibleStep(Graph g, int i) {
        return fusible(g.instr(i)) && floating(g.type(g.let(i).binders().getFirst()));
    }

    private static int find(int[] parent, int x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
    }

    /**
     * One group as an {@code %elementwise} let at its last member: the inputs are the values its
     * members read from outside (then the sources of its in-place broadcasts and its fills), the
     * body the members' lets with those broadcasts (and the views of member values the members
     * read) as lets of their own, the results the members' values read outside, bound by the
     * members' own Vars.
     */
    private static Let group(Graph g, List<Integer> m, Map<Var, Var> leafSrc, Set<Var> fills, Set<Var> outside) {
        Set<Var> own = new HashSet<>();
        for (int i : m) own.add(g.let(i).var());
        LinkedHashSet<Var> inputs = new LinkedHashSet<>(), leafInputs = new LinkedHashSet<>();
        for (int i : m)
            for (Var a : g.instr(i).operands()) {
                if (leafSrc.containsKey(a)) leafInputs.add(leafSrc.get(a));
                else if (fills.contains(a)) leafInputs.add(a);
                else if (!own.contains(g.rootOf(a))) inputs.add(a);
            }
        List<Var> params = new ArrayList<>(inputs);
        for (Var v : leafInputs) if (!inputs.contains(v)) params.add(v);
        List<Let> body = new ArrayList<>();
        Set<Var> made = new HashSet<>(own);
        for (int i : m) {
            Instr ins = g.instr(i);
            for (Var a : ins.operands()) {
                if (made.contains(a) || params.contains(a) && !leafSrc.containsKey(a)) continue;
                if (leafSrc.containsKey(a)) {
                    body.add(Let.typed(a, new Instr.Broadcast(leafSrc.get(a), g.type(a).shape()), g.type(a)));
                } else {                                            // a view of a member's value, read by a member
                    body.add(Let.typed(a, new Instr.Reshape(g.rootOf(a), g.type(a).shape()), g.type(a)));
                }
                made.add(a);
            }
            body.add(Let.typed(g.let(i).var(), ins, g.type(g.let(i).var())));
        }
        List<Var> results = new ArrayList<>();
        for (int i : m) if (outside.contains(g.let(i).var())) results.add(g.let(i).var());
        List<TensorType> types = results.stream().map(g::type).toList();
        Var res = results.getFirst();
        Type resultType = types.getFirst();
        if (results.size() > 1) {
            res = new Var("%results");
            resultType = new Type.Tuple(List.copyOf(types));
            body.add(Let.typed(res, new Rhs.Tuple(results), resultType));
        }
        List<Rhs.Param> ps = params.stream().map(v -> new Rhs.Param(v, g.type(v), Pos.NONE)).toList();
        Rhs.Fn fn = new Rhs.Fn(ps, resultType, new Block(body, res, Pos.NONE));
        return Rewrites.bind(results, new Instr.Elementwise(params, fn), types);
    }
}
