package kina.plan;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kina.eval.Kernels;
import kina.eval.Tensor;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/**
 * The schedule's table of values: every value of the rewritten flat program is a numbered slot —
 * an input (one per name), a constant (a literal or a fill, computed when the plan first runs),
 * a step's result, or a view (a reshape, which shares its source's storage: nothing is ever
 * written twice) — and every instruction let is a step over slots, in program order.
 */
final class Slots {

    /** Where a slot's value comes from. */
    enum Origin { INPUT, CONST, STEP, VIEW }

    /** A numbered tensor value; {@code root} is the slot owning the storage (itself unless a view). */
    record Slot(int id, TensorType type, String name, Origin origin, int root) {}

    /**
     * One instruction of the schedule: its flat let, its result slots (several for a fusion that
     * makes several values), its operand slots in operand order, and the user's let it came from
     * (errors name that one).
     */
    record Step(Let let, Instr instr, int[] outs, int[] args, Let source) {
        /** The first result slot. */
        int out() { return outs[0]; }
    }

    /**
     * A constant slot: a literal payload, or a fill (payload null). Computed when the plan first
     * runs, not while planning, so planning time does not grow with tensor sizes.
     */
    record Const(TensorType type, kina.ir.Payload payload, double fill) {
        Tensor tensor() { return payload != null ? Kernels.literal(type, payload) : Kernels.fill(type, fill); }
    }

    final List<Slot> slots = new ArrayList<>();
    final List<Step> steps = new ArrayList<>();
    final Map<String, Integer> inputs = new LinkedHashMap<>();
    final Map<Integer, Let> inputLets = new HashMap<>();
    final Map<Integer, Const> constants = new HashMap<>();
    final List<Integer> outputs = new ArrayList<>();

    private Slots() {}

    /** The slots and steps of a flat program; {@code source}: the user's let of each flat let (absent: itself). */
    static Slots of(Program flat, Map<Let, Let> source) {
        Slots s = new Slots();
        Map<Var, Integer> slotOf = new HashMap<>();
        for (Let let : flat.body().lets()) {
            Let from = source.getOrDefault(let, let);
            switch (let.rhs()) {
                case Rhs.Tuple t -> { }                                     // the result, below
                case Instr.Input(TensorType t) -> {
                    int id = s.slot(t, let.var().name(), Origin.INPUT, -1);
                    s.inputs.put(let.var().name(), id);
                    s.inputLets.put(id, from);
                    slotOf.put(let.var(), id);
                }
                case Instr.Literal(TensorType t, var payload) -> {
                    int id = s.slot(t, let.var().name(), Origin.CONST, -1);
                    s.constants.put(id, new Const(t, payload, 0));
                    slotOf.put(let.var(), id);
                }
                case Instr.Fill(TensorType t, double v) -> {
                    int id = s.slot(t, let.var().name(), Origin.CONST, -1);
                    s.constants.put(id, new Const(t, null, v));
                    slotOf.put(let.var(), id);
                }
                case Instr.Reshape(Var x, var _) -> {
                    Slot src = s.slots.get(slotOf.get(x));
                    TensorType t = let.tensorType();
                    if (src.type().shape().vol() != t.shape().vol() || src.type().dtype() != t.dtype())
                        throw new PlanError(from, "reshape: " + src.type() + " to " + t + " changes the volume");
                    slotOf.put(let.var(), s.slot(t, let.var().name(), Origin.VIEW, src.root()));
                }
                case Instr ins -> {
                    List<TensorType> ts = let.type() instanceof Type.Tuple(var es) ? es.stream().map(e -> (TensorType) e).toList()
                            : List.of(let.tensorType());
                    int[] outs = new int[ts.size()];
                    for (int k = 0; k < outs.length; k++) {
                        outs[k] = s.slot(ts.get(k), let.binders().get(k).name(), Origin.STEP, -1);
                        slotOf.put(let.binders().get(k), outs[k]);
                    }
                    List<Var> ops = ins.operands();
                    int[] args = new int[ops.size()];
                    for (int k = 0; k < args.length; k++) args[k] = slotOf.get(ops.get(k));
                    s.steps.add(new Step(let, ins, outs, args, from));
                }
                case Rhs.Fn _, Rhs.Call _, Rhs.Handle _ -> throw new IllegalStateException("a flat program holds no " + let.rhs());
            }
        }
        Var result = flat.body().result();
        Let last = flat.body().binding(result);
        List<Var> outs = last != null && last.rhs() instanceof Rhs.Tuple(List<Var> elems) ? elems : List.of(result);
        for (Var v : outs) s.outputs.add(slotOf.get(v));
        return s;
    }

    private int slot(TensorType t, String name, Origin o, int root) {
        int id = slots.size();
        slots.add(new Slot(id, t, name, o, root < 0 ? id : root));
        return id;
    }

    int root(int slot) { return slots.get(slot).root(); }

    TensorType type(int slot) { return slots.get(slot).type(); }
}
