package kina.plan;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kina.eval.EvalError;
import kina.eval.Kernels;
import kina.eval.Tensor;
import kina.ir.Block;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Var;

/**
 * Flattens a checked, transformed program into one straight-line list of instruction steps over
 * numbered slots: calls are inlined (fn bodies are closed, so a call binds the params to the
 * argument slots in a fresh scope), tuples and destructuring lets become slot aliases, Input lets
 * named input slots (one slot per name), Literal and Fill constant slots computed once here, and
 * Reshape a view slot sharing its source's storage (no step: nothing is ever written twice).
 */
final class Flatten {

    /** Where a slot's value comes from. */
    enum Origin { INPUT, CONST, STEP, VIEW }

    /** A numbered tensor value; {@code root} is the slot owning the storage (itself unless a view). */
    record Slot(int id, TensorType type, String name, Origin origin, int root) {}

    /** One instruction: the let it came from, its output slot, its operand slots in operand order. */
    record Step(Let let, Instr instr, int out, int[] args) {}

    /** What a name is bound to while flattening. */
    private sealed interface Bound {}
    private record SlotRef(int slot) implements Bound {}
    private record TupleRef(List<Bound> elems) implements Bound {}
    private record FnRef(String name, Rhs.Fn fn, Map<String, FnRef> fns) implements Bound {}

    final List<Slot> slots = new ArrayList<>();
    final List<Step> steps = new ArrayList<>();
    final Map<String, Integer> inputs = new LinkedHashMap<>();
    final Map<Integer, Let> inputLets = new HashMap<>();
    final Map<Integer, Const> constants = new HashMap<>();

    /**
     * A constant slot: a literal payload, or a fill (payload null). Computed when the plan first
     * runs, not while planning, so planning time does not grow with tensor sizes.
     */
    record Const(TensorType type, kina.ir.Payload payload, double fill) {
        Tensor tensor() { return payload != null ? Kernels.literal(type, payload) : Kernels.fill(type, fill); }
    }
    final List<Integer> outputs = new ArrayList<>();
    private int depth;

    static Flatten of(Program p) {
        Flatten f = new Flatten();
        Map<Var, Bound> env = new HashMap<>();
        f.block(p.body(), env, Map.of());
        f.flattenResult(lookup(env, p.body().result(), null), f.outputs);
        return f;
    }

    private void flattenResult(Bound b, List<Integer> out) {
        switch (b) {
            case SlotRef s -> out.add(s.slot());
            case TupleRef t -> { for (Bound e : t.elems()) flattenResult(e, out); }
            case FnRef f -> throw new PlanError(null, "the program's result is fn " + f.name() + ", not tensors");
        }
    }

    private int newSlot(TensorType t, String name, Origin o, int root) {
        int id = slots.size();
        slots.add(new Slot(id, t, name, o, root < 0 ? id : root));
        return id;
    }

    private void block(Block b, Map<Var, Bound> env, Map<String, FnRef> fns) {
        for (Let let : b.lets()) {
            Bound v = let(let, env, fns);
            if (!let.destructure()) { env.put(let.var(), v); continue; }
            if (!(v instanceof TupleRef(List<Bound> elems)) || elems.size() != let.binders().size())
                throw new PlanError(let, "destructuring " + let.binders().size() + " names from a value that is not such a tuple");
            for (int i = 0; i < elems.size(); i++) env.put(let.binders().get(i), elems.get(i));
        }
    }

    private Bound let(Let let, Map<Var, Bound> env, Map<String, FnRef> fns) {
        return switch (let.rhs()) {
            case Instr ins -> new SlotRef(instr(let, ins, env));
            case Rhs.Fn fn -> new FnRef(let.displayName(), fn, visible(env, fns));
            case Rhs.Call c -> call(let, c, env, fns);
            case Rhs.Handle h -> throw new PlanError(let, "handle " + h.fn() + "(…) with reverseMode is not planned;"
                    + " transform the program first (kina.ad.TransformAd)");
            case Rhs.Tuple t -> {
                List<Bound> elems = new ArrayList<>();
                for (Var v : t.elems()) elems.add(lookup(env, v, let));
                yield new TupleRef(elems);
            }
        };
    }

    private Bound call(Let let, Rhs.Call c, Map<Var, Bound> env, Map<String, FnRef> fns) {
        Bound target = env.containsKey(c.fn()) ? env.get(c.fn()) : fns.get(c.fn().name());
        if (!(target instanceof FnRef f)) throw new PlanError(let, c.fn() + " is not a fn");
        List<Rhs.Param> params = f.fn().params();
        if (params.size() != c.args().size())
            throw new PlanError(let, "call " + c.fn() + ": expected " + params.size() + " arguments, got " + c.args().size());
        if (++depth > 200) throw new PlanError(let, "calls nested deeper than 200 (recursion is not planned)");
        Map<Var, Bound> inner = new HashMap<>();
        for (int i = 0; i < params.size(); i++) {
            Bound a = lookup(env, c.args().get(i), let);
            if (!(a instanceof SlotRef s) || !slots.get(s.slot()).type().equals(params.get(i).type()))
                throw new PlanError(let, "call " + c.fn() + ": parameter " + params.get(i).name() + " expects " + params.get(i).type());
            inner.put(params.get(i).name(), a);
        }
        block(f.fn().body(), inner, f.fns());
        depth--;
        return lookup(inner, f.fn().body().result(), let);
    }

    private int instr(Let let, Instr ins, Map<Var, Bound> env) {
        if (!(let.type() instanceof TensorType t)) throw new PlanError(let, "the program must be checked first (kina.check)");
        refuse(let, ins, t);
        String name = let.binders().getFirst().name();
        try {
            switch (ins) {
                case Instr.Input(TensorType it) -> {
                    Integer known = inputs.get(name);
                    if (known != null) {
                        if (!slots.get(known).type().equals(it))
                            throw new PlanError(let, "input " + name + " is declared as " + slots.get(known).type() + " and as " + it);
                        return known;
                    }
                    int s = newSlot(it, name, Origin.INPUT, -1);
                    inputs.put(name, s);
                    inputLets.put(s, let);
                    return s;
                }
                case Instr.Literal(TensorType lt, var payload) -> {
                    int s = newSlot(lt, name, Origin.CONST, -1);
                    Kernels.literal(lt, payload);                  // validate now: a bad payload is a compile error
                    constants.put(s, new Const(lt, payload, 0));
                    return s;
                }
                case Instr.Fill(TensorType ft, double v) -> {
                    int s = newSlot(ft, name, Origin.CONST, -1);
                    constants.put(s, new Const(ft, null, v));
                    return s;
                }
                case Instr.Reshape(Var x, var to) -> {
                    int src = slot(env, x, let);
                    Slot from = slots.get(src);
                    if (from.type().shape().vol() != t.shape().vol() || from.type().dtype() != t.dtype())
                        throw new PlanError(let, "reshape: " + from.type() + " to " + t + " changes the volume");
                    return newSlot(t, name, Origin.VIEW, from.root());
                }
                case Instr.Unary _, Instr.Binary _, Instr.Discrete _, Instr.Contraction _, Instr.Transpose _,
                     Instr.Broadcast _, Instr.Reduction _, Instr.RowWise _, Instr.Attend _, Instr.Indexing _ -> {
                    List<Var> ops = ins.operands();
                    int[] args = new int[ops.size()];
                    for (int i = 0; i < args.length; i++) args[i] = slot(env, ops.get(i), let);
                    int s = newSlot(t, name, Origin.STEP, -1);
                    steps.add(new Step(let, ins, s, args));
                    return s;
                }
            }
        } catch (EvalError e) {
            throw e.at(let);
        }
    }

    /** Refuses @device values and the dtypes the host does not run, with the interpreter's words. */
    private void refuse(Let let, Instr ins, TensorType t) {
        try {
            Kernels.requireHost(ins.op(), t);
        } catch (EvalError e) {
            throw e.at(let);
        }
    }

    private int slot(Map<Var, Bound> env, Var v, Let at) {
        if (lookup(env, v, at) instanceof SlotRef s) return s.slot();
        throw new PlanError(at, v + " is not a tensor");
    }

    private static Bound lookup(Map<Var, Bound> env, Var v, Let at) {
        Bound b = env.get(v);
        if (b == null) throw new PlanError(at, v + " is not bound");
        return b;
    }

    /** The fns visible from a fn defined now: those visible here, then those bound in this scope. */
    private static Map<String, FnRef> visible(Map<Var, Bound> env, Map<String, FnRef> fns) {
        Map<String, FnRef> m = new HashMap<>(fns);
        for (Map.Entry<Var, Bound> e : env.entrySet()) if (e.getValue() instanceof FnRef f) m.put(e.getKey().name(), f);
        return m;
    }
}
