package kina.plan;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kina.eval.EvalError;
import kina.eval.Kernels;
import kina.ir.Block;
import kina.ir.Instr;
import kina.ir.Instrs;
import kina.ir.Let;
import kina.ir.Pos;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/**
 * The plan's first stage: a checked, transformed program becomes one flat let-chain of
 * instructions, the program the rewrite table and the schedule work on. Calls are inlined (fn
 * bodies are closed, so a call binds the params to the argument values in a fresh scope),
 * tuples and destructuring lets become aliases, and every name is made unique (an inlined let
 * whose name is taken gets {@code name_1}, {@code name_2}, …). Input lets keep their names (their
 * payloads are supplied by name; one let per name, in any scope), so the flat program takes the
 * same inputs and computes the same values, bit for bit, as the one it came from. Its result is
 * the flattened result: a Var, or a tuple let of them.
 */
final class Inline {

    /**
     * The flat program and, for messages, the user's let each flat let came from (a renamed
     * binder still reports under its let's own name).
     */
    record Flat(Program program, Map<Let, Let> source) {}

    /** What a name is bound to while inlining. */
    private sealed interface Bound {}
    private record Value(Var var) implements Bound {}
    private record Tuple(List<Bound> elems) implements Bound {}
    private record Fn(String name, Rhs.Fn fn, Map<String, Fn> fns) implements Bound {}

    private final List<Let> lets = new ArrayList<>();
    private final Map<Let, Let> source = new IdentityHashMap<>();
    private final Set<String> taken = new HashSet<>();
    private final Map<String, Var> inputs = new LinkedHashMap<>();
    private final Map<String, TensorType> inputTypes = new HashMap<>();
    private int depth;

    private Inline() {}

    /** The flat program of {@code p}; PlanError (naming the let) for a handle left, an unchecked let, a fn result. */
    static Flat of(Program p) {
        Inline in = new Inline();
        in.reserveInputs(p.body());
        Map<Var, Bound> env = new HashMap<>();
        in.block(p.body(), env, Map.of());
        List<Var> outs = new ArrayList<>();
        in.flatten(lookup(env, p.body().result(), null), outs);
        Var result;
        if (outs.size() == 1) {
            result = outs.getFirst();
        } else {
            result = new Var(in.fresh("result"));
            in.lets.add(Let.typed(result, new Rhs.Tuple(outs),
                    new Type.Tuple(outs.stream().map(v -> (Type) in.typeOf(v)).toList())));
        }
        return new Flat(new Program(p.file(), new Block(in.lets, result, Pos.NONE)), in.source);
    }

    /** Input names are kept, so every other name that meets one is renamed. */
    private void reserveInputs(Block b) {
        for (Let l : b.lets()) {
            if (l.rhs() instanceof Instr.Input) taken.add(l.binders().getFirst().name());
            if (l.rhs() instanceof Rhs.Fn fn) reserveInputs(fn.body());
        }
    }

    private final Map<Var, TensorType> types = new HashMap<>();

    private TensorType typeOf(Var v) { return types.get(v); }

    private String fresh(String stem) {
        String n = stem;
        for (int i = 1; taken.contains(n); i++) n = stem + "_" + i;
        taken.add(n);
        return n;
    }

    private void flatten(Bound b, List<Var> out) {
        switch (b) {
            case Value v -> out.add(v.var());
            case Tuple t -> { for (Bound e : t.elems()) flatten(e, out); }
            case Fn f -> throw new PlanError(null, "the program's result is fn " + f.name() + ", not tensors");
        }
    }

    private void block(Block b, Map<Var, Bound> env, Map<String, Fn> fns) {
        for (Let let : b.lets()) {
            Bound v = let(let, env, fns);
            if (!let.destructure()) { env.put(let.var(), v); continue; }
            if (!(v instanceof Tuple(List<Bound> elems)) || elems.size() != let.binders().size())
                throw new PlanError(let, "destructuring " + let.binders().size() + " names from a value that is not such a tuple");
            for (int i = 0; i < elems.size(); i++) env.put(let.binders().get(i), elems.get(i));
        }
    }

    private Bound let(Let let, Map<Var, Bound> env, Map<String, Fn> fns) {
        return switch (let.rhs()) {
            case Instr ins -> instr(let, ins, env);
            case Rhs.Fn fn -> new Fn(let.displayName(), fn, visible(env, fns));
            case Rhs.Call c -> call(let, c, env, fns);
            case Rhs.Handle h -> throw new PlanError(let, "handle " + h.fn() + "(…) with reverseMode is not planned;"
                    + " transform the program first (kina.ad.TransformAd)");
            case Rhs.Tuple t -> {
                List<Bound> elems = new ArrayList<>();
                for (Var v : t.elems()) elems.add(lookup(env, v, let));
                yield new Tuple(elems);
            }
        };
    }

    private Bound call(Let let, Rhs.Call c, Map<Var, Bound> env, Map<String, Fn> fns) {
        Bound target = env.containsKey(c.fn()) ? env.get(c.fn()) : fns.get(c.fn().name());
        if (!(target instanceof Fn f)) throw new PlanError(let, c.fn() + " is not a fn");
        List<Rhs.Param> params = f.fn().params();
        if (params.size() != c.args().size())
            throw new PlanError(let, "call " + c.fn() + ": expected " + params.size() + " arguments, got " + c.args().size());
        if (++depth > 200) throw new PlanError(let, "calls nested deeper than 200 (recursion is not planned)");
        Map<Var, Bound> inner = new HashMap<>();
        for (int i = 0; i < params.size(); i++) {
            Bound a = lookup(env, c.args().get(i), let);
            if (!(a instanceof Value v) || !typeOf(v.var()).equals(params.get(i).type()))
                throw new PlanError(let, "call " + c.fn() + ": parameter " + params.get(i).name() + " expects " + params.get(i).type());
            inner.put(params.get(i).name(), a);
        }
        block(f.fn().body(), inner, f.fns());
        depth--;
        return lookup(inner, f.fn().body().result(), let);
    }

    private Bound instr(Let let, Instr ins, Map<Var, Bound> env) {
        if (!(let.type() instanceof TensorType t)) throw new PlanError(let, "the program must be checked first (kina.check)");
        try {
            Kernels.requireHost(ins.op(), t);                 // @device values and dtypes the host does not run
            if (ins instanceof Instr.Literal(TensorType lt, var payload)) Kernels.literal(lt, payload);   // a bad payload is a compile error
        } catch (EvalError e) {
            throw e.at(let);
        }
        String name = let.binders().getFirst().name();
        if (ins instanceof Instr.Input(TensorType it)) {
            Var known = inputs.get(name);
            if (known != null) {
                if (!inputTypes.get(name).equals(it))
                    throw new PlanError(let, "input " + name + " is declared as " + inputTypes.get(name) + " and as " + it);
                return new Value(known);
            }
            Var v = new Var(name);
            inputs.put(name, v);
            inputTypes.put(name, it);
            return new Value(emit(let, v, ins, t));
        }
        Instr mapped = Instrs.mapOperands(ins, x -> {
            if (lookup(env, x, let) instanceof Value(Var y)) return y;
            throw new PlanError(let, x + " is not a tensor");
        });
        return new Value(emit(let, new Var(fresh(name)), mapped, t));
    }

    private Var emit(Let from, Var v, Instr ins, TensorType t) {
        Let l = Let.typed(v, ins, t);
        lets.add(l);
        source.put(l, from);
        types.put(v, t);
        return v;
    }

    private static Bound lookup(Map<Var, Bound> env, Var v, Let at) {
        Bound b = env.get(v);
        if (b == null) throw new PlanError(at, v + " is not bound");
        return b;
    }

    /** The fns visible from a fn defined now: those visible here, then those bound in this scope. */
    private static Map<String, Fn> visible(Map<Var, Bound> env, Map<String, Fn> fns) {
        Map<String, Fn> m = new HashMap<>(fns);
        for (Map.Entry<Var, Bound> e : env.entrySet()) if (e.getValue() instanceof Fn f) m.put(e.getKey().name(), f);
        return m;
    }
}
