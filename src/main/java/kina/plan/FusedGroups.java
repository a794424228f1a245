package kina.plan;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Var;
import kina.kernels.Fusion;
import kina.kernels.Fusion.Code;
import kina.kernels.Fusion.Group;
import kina.kernels.Fusion.Leaf;

/**
 * Compiles an {@code %elementwise} step (made by {@link FuseElementwise}) to the {@link Fusion.Group}
 * its kernel runs: the body's instructions as {@link Fusion.Code}s over registers and the step's
 * buffer slots, its in-place broadcasts and uniform fill inputs as {@link Fusion.Leaf}s.
 */
final class FusedGroups {
    private FusedGroups() {}

    private static Code code(Instr ins) {
        if (ins instanceof Instr.Neg) return Code.NEG;
        if (ins instanceof Instr.Sqrt) return Code.SQRT;
        if (ins instanceof Instr.Add) return Code.ADD;
        if (ins instanceof Instr.Sub) return Code.SUB;
        if (ins instanceof Instr.Mul) return Code.MUL;
        if (ins instanceof Instr.Div) return Code.DIV;
        if (ins instanceof Instr.Maximum) return Code.MAX;
        throw new IllegalArgumentException(ins.op() + " is not fused (FuseElementwise.fusible)");
    }


    /**
     * The pass of an elementwise step: its body's instructions in order, registers reused once
     * their last reader in the body has run. Inputs are read by storage (two views of one buffer
     * are one input); a body broadcast, or an input that is a uniform floating fill, is a leaf.
     */
    static Group of(Slots.Step step, Slots ir) {
        Instr.Elementwise ew = (Instr.Elementwise) step.instr();
        Rhs.Fn fn = ew.body();
        Map<Var, Integer> paramSlot = new HashMap<>();
        for (int j = 0; j < fn.params().size(); j++) paramSlot.put(fn.params().get(j).name(), step.args()[j]);
        Map<Var, Var> alias = new HashMap<>();                       // a body reshape → the value it views
        Map<Var, Integer> memberAt = new LinkedHashMap<>();           // a member's value → its position
        List<Instr> members = new ArrayList<>();
        List<Var> memberVars = new ArrayList<>();
        Map<Var, Leaf> leafOf = new HashMap<>();
        List<Var> results = List.of(fn.body().result());
        for (Let l : fn.body().lets()) {
            switch (l.rhs()) {
                case Rhs.Tuple(List<Var> elems) -> results = elems;
                case Instr.Broadcast(Var x, var to) -> leafOf.put(l.var(), Fusion.leaf(paramSlot.get(x), ir.type(paramSlot.get(x)).shape(), to));
                case Instr.Reshape(Var x, var _) -> alias.put(l.var(), alias.getOrDefault(x, x));
                case Instr ins -> {
                    memberAt.put(l.var(), members.size());
                    members.add(ins);
                    memberVars.add(l.var());
                }
                case Rhs.Fn _, Rhs.Call _, Rhs.Handle _ -> throw new IllegalStateException("an elementwise body holds no " + l.rhs());
            }
        }
        for (var e : paramSlot.entrySet()) {                          // uniform fills read as scalars
            Slots.Const c = ir.constants.get(ir.root(e.getValue()));
            if (c != null && c.payload() == null) leafOf.put(e.getKey(), new Leaf(ir.root(e.getValue()), 1, 1));
        }
        Map<Var, Integer> outSlot = new HashMap<>();
        for (int k = 0; k < results.size(); k++) outSlot.put(results.get(k), step.outs()[k]);
        int m = members.size();
        int[] lastUse = new int[m];
        List<Integer> inputs = new ArrayList<>(), outs = new ArrayList<>();
        List<Var> leafVars = new ArrayList<>();
        List<Leaf> leaves = new ArrayList<>();
        for (int k = 0; k < m; k++) {
            if (outSlot.containsKey(memberVars.get(k))) outs.add(outSlot.get(memberVars.get(k)));
            for (Var a : members.get(k).operands()) {
                if (leafOf.containsKey(a)) {
                    if (!leafVars.contains(a)) { leafVars.add(a); leaves.add(leafOf.get(a)); }
                    continue;
                }
                Integer at = memberAt.get(alias.getOrDefault(a, a));
                if (at != null) lastUse[at] = k;
                else if (!inputs.contains(ir.root(paramSlot.get(a)))) inputs.add(ir.root(paramSlot.get(a)));
            }
        }
        // registers: leaves first (never reused), then temporaries from a free list
        int regs = leaves.size();
        List<Integer> free = new ArrayList<>();
        int[] loc = new int[m];
        int[][] code = new int[m][];
        for (int k = 0; k < m; k++) {
            List<Var> a = members.get(k).operands();
            int[] src = new int[2];
            for (int j = 0; j < a.size(); j++) {
                int li = leafVars.indexOf(a.get(j));
                Integer at = li >= 0 ? null : memberAt.get(alias.getOrDefault(a.get(j), a.get(j)));
                src[j] = li >= 0 ? li : at != null ? loc[at] : -1 - inputs.indexOf(ir.root(paramSlot.get(a.get(j))));
            }
            for (Var x : a) {                                        // operands dying here free their registers first
                Integer at = leafVars.contains(x) ? null : memberAt.get(alias.getOrDefault(x, x));
                if (at != null && lastUse[at] == k && loc[at] >= 0 && !free.contains(loc[at])) free.add(loc[at]);
            }
            Integer o = outSlot.get(memberVars.get(k));
            if (o != null) loc[k] = -1 - inputs.size() - outs.indexOf(o);
            else loc[k] = free.isEmpty() ? regs++ : free.removeLast();
            code[k] = new int[] {code(members.get(k)).ordinal(), loc[k], src[0], a.size() > 1 ? src[1] : src[0]};
        }
        // negative locations (-1 - j: input j, then outputs) become regs + j
        for (int[] c : code) for (int j = 1; j < 4; j++) if (c[j] < 0) c[j] = regs - 1 - c[j];
        int[] in = new int[inputs.size() + leaves.size()];
        for (int j = 0; j < inputs.size(); j++) in[j] = inputs.get(j);
        for (int j = 0; j < leaves.size(); j++) in[inputs.size() + j] = leaves.get(j).src();
        TensorType t = ir.type(step.out());
        return new Group(t.dtype(), (int) t.shape().vol(), m, regs,
                inputs.stream().mapToInt(Integer::intValue).toArray(), outs.stream().mapToInt(Integer::intValue).toArray(),
                leaves.toArray(Leaf[]::new), code);
    }
}
