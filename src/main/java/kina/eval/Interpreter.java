package kina.eval;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import kina.ir.Block;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;
import kina.kernels.VectorApi;

/**
 * The host interpreter: runs a checked {@link Program} (every {@link Let#type()} filled) let by
 * let, calling {@link Kernels} for each instruction. It is deterministic: the same program and
 * inputs give the same bits.
 *
 * <p>Inputs ({@code let x = tensor<…> in}) take their payload from the map given at construction,
 * by the let's name, in any scope. {@code handle f(…) with reverseMode} is delegated to a
 * {@link ReverseMode} (the AD oracle plugs in here); the default refuses it.
 *
 * <p>Errors are {@link EvalError}s located at the let that failed ({@code let x: …}, its Pos):
 * index traps, a missing or mistyped input, and refusals by name, before computing, of @device
 * values and of the dtypes the host does not run (BF16, F16, F8E4M3, F8E5M2).
 */
public final class Interpreter {

    /**
     * How {@code handle f(args) with reverseMode} is answered: (R, g0, …, gk−1), or R when k = 0; and
     * {@code handle f(args) with forwardMode(tangents)}: (R, J·t).
     */
    public interface ReverseMode {
        Value apply(Interpreter in, Value.Closure f, List<Value> args, Let at);

        /** {@code with forwardMode(tangents)}; the default refuses it. */
        default Value forward(Interpreter in, Value.Closure f, List<Value> args, List<Value> tangents, Let at) {
            throw new EvalError(handleText(at) + ": forward mode is not available in this interpreter");
        }

        /** The default: {@code handle f(…) with reverseMode: reverse mode is not available in this interpreter}. */
        ReverseMode UNAVAILABLE = (in, f, args, at) -> {
            throw new EvalError(handleText(at) + ": reverse mode is not available in this interpreter");
        };
    }

    private final Map<String, Tensor> inputs;
    private final ReverseMode reverseMode;
    private boolean detectAnomaly;

    /**
     * With {@code on}, every let's floating outputs are checked for NaN and ±Inf as it runs: the
     * first let that holds one is an EvalError naming it, its op, forward (a let of the source) or
     * backward (emitted by transform_ad), the value and its element. Answers this interpreter.
     */
    public Interpreter detectAnomaly(boolean on) {
        detectAnomaly = on;
        return this;
    }

    /** An interpreter whose Input lets read {@code inputs} by name; reverse mode unavailable. */
    public Interpreter(Map<String, Tensor> inputs) { this(inputs, ReverseMode.UNAVAILABLE); }

    /**
     * An interpreter whose Input lets read {@code inputs} by name and whose handles go to {@code rm}.
     *
     * @throws kina.ir.KinaException when the JVM lacks the Vector API the kernels need ({@link VectorApi#MISSING})
     */
    public Interpreter(Map<String, Tensor> inputs, ReverseMode rm) {
        VectorApi.require();
        this.inputs = Collections.unmodifiableMap(new HashMap<>(inputs));
        this.reverseMode = rm;
    }

    /** The value of the program's top-level block: a Tensor, a Value.Tuple or a Value.Closure. */
    public Value run(Program p) {
        Block b = p.body();
        LinkedHashMap<Var, Value> env = runBlock(b, new LinkedHashMap<>(), Map.of());
        return lookup(env, b.result());
    }

    /** Calls {@code f} on {@code args} (tensors of its parameter types) and returns its result. */
    public Value call(Value.Closure f, List<Value> args) {
        return lookup(bindings(f, args), f.fn().body().result());
    }

    /**
     * Runs {@code f}'s body on {@code args} and returns every binding: the parameters first, then
     * each let's binders in program order (temporaries included), so a caller can keep the
     * forward buffers.
     */
    public LinkedHashMap<Var, Value> bindings(Value.Closure f, List<Value> args) {
        List<Rhs.Param> params = f.fn().params();
        String what = "call " + f.name();
        if (args.size() != params.size())
            throw new EvalError(what + ": expected " + params.size() + " arguments, got " + args.size());
        LinkedHashMap<Var, Value> env = new LinkedHashMap<>();
        for (int i = 0; i < params.size(); i++) {
            Rhs.Param p = params.get(i);
            Kernels.requireHost(what, p.type());
            if (!(args.get(i) instanceof Tensor t) || !t.type().equals(p.type()))
                throw new EvalError(what + ": parameter " + p.name() + " expects " + p.type()
                        + ", got " + typeOf(args.get(i)));
            env.put(p.name(), t);
        }
        return runBlock(f.fn().body(), env, f.fns());
    }

    // ---- blocks and lets ----------------------------------------------------------------------

    /** Runs the lets of {@code b} into {@code env}; {@code fns} are the fns visible from outside. */
    private LinkedHashMap<Var, Value> runBlock(Block b, LinkedHashMap<Var, Value> env, Map<String, Value.Closure> fns) {
        for (Let let : b.lets()) {
            try {
                Value v = eval(let, env, fns);
                checkType(let, v);
                if (detectAnomaly) anomaly(let, v);
                bind(let, v, env);
            } catch (EvalError e) {
                throw e.at(let);
            }
        }
        return env;
    }

    private Value eval(Let let, Map<Var, Value> env, Map<String, Value.Closure> fns) {
        return switch (let.rhs()) {
            case Instr ins -> {
                refuse(ins.op(), let, ins, env);
                yield instr(let, ins, env);
            }
            case Rhs.Fn fn -> new Value.Closure(let.displayName(), fn, visible(env, fns));
            case Rhs.Call c -> {
                Value.Closure f = closure(c.fn(), env, fns);
                List<Value> args = values(c.args(), env);
                refuseType("call " + c.fn(), let.type());
                yield call(f, args);
            }
            case Rhs.Handle h -> {
                Value.Closure f = closure(h.fn(), env, fns);
                List<Value> args = values(h.args(), env);
                refuseType("handle " + h.fn(), let.type());
                for (Rhs.Param p : f.fn().params()) Kernels.requireHost("handle " + h.fn(), p.type());
                yield switch (h.mode()) {
                    case Rhs.Mode.ReverseMode _ -> reverseMode.apply(this, f, args, let);
                    case Rhs.Mode.ForwardMode(List<Var> tangents) -> reverseMode.forward(this, f, args, values(tangents, env), let);
                };
            }
            case Rhs.Tuple t -> new Value.Tuple(values(t.elems(), env));
        };
    }

    /**
     * An instruction's value: an input's payload by the let's name, a plan fusion's values (a tuple
     * when it makes several), else its reference kernel through the one dispatch.
     */
    private Value instr(Let let, Instr ins, Map<Var, Value> env) {
        if (ins instanceof Instr.Input(TensorType t)) return input(let, t);
        if (ins instanceof Instr.Fused f) {
            List<Tensor> out = Kernels.fused(f, v -> tensor(env, v));
            return out.size() == 1 ? out.getFirst() : new Value.Tuple(List.copyOf(out));
        }
        return Eager.INSTANCE.apply(ins, v -> tensor(env, v));
    }

    /** The supplied payload of an Input let, by the let's name; it must have the declared type. */
    private Tensor input(Let let, TensorType t) {
        String name = let.binders().getFirst().name();
        Tensor x = inputs.get(name);
        if (x == null) throw new EvalError("input: no payload supplied for " + t);
        if (!x.type().equals(t)) throw new EvalError("input: expected " + t + ", got " + x.type());
        return x;
    }

    // ---- refusals and types -------------------------------------------------------------------

    /**
     * Refuses @device and non-host dtypes in the let's type (which is every attribute type: an
     * input's, a literal's, a fill's and a scatter's dest are its result type) and in its operands.
     */
    private static void refuse(String op, Let let, Instr ins, Map<Var, Value> env) {
        refuseType(op, let.type());
        for (Var v : ins.operands()) if (env.get(v) instanceof Tensor t) Kernels.requireHost(op, t.type());
    }

    /** Refuses every tensor in {@code t} (a tensor or tuple type; fn types and null pass). */
    private static void refuseType(String op, Type t) {
        switch (t) {
            case null -> { }
            case TensorType tt -> Kernels.requireHost(op, tt);
            case Type.Tuple tu -> { for (Type e : tu.elems()) refuseType(op, e); }
            case Type.Fn _ -> { }
        }
    }

    /** The run-time type of a value. */
    public static Type typeOf(Value v) {
        return switch (v) {
            case Tensor t -> t.type();
            case Value.Tuple t -> new Type.Tuple(t.elems().stream().map(Interpreter::typeOf).toList());
            case Value.Closure c -> new Type.Fn(c.fn().params().stream().map(Rhs.Param::type).toList(), c.fn().result());
        };
    }

    /** The value must have the let's checked type (when filled). */
    /** The first NaN or ±Inf of {@code v}'s floating tensors, as an EvalError (see {@link #detectAnomaly}). */
    private static void anomaly(Let let, Value v) {
        List<Tensor> ts = new java.util.ArrayList<>();
        if (v instanceof Tensor t) ts.add(t);
        else if (v instanceof Value.Tuple tup) for (Value e : tup.elems()) if (e instanceof Tensor t) ts.add(t);
        for (int k = 0; k < ts.size(); k++) {
            Tensor t = ts.get(k);
            if (!t.dtype().floating()) continue;
            for (int i = 0; i < t.size(); i++) {
                double x = t.get(i);
                if (Double.isFinite(x)) continue;
                String op = switch (let.rhs()) {
                    case Instr ins -> ins.op();
                    case Rhs.Fn _ -> "fn";
                    case Rhs.Call c -> "call " + c.fn().name();
                    case Rhs.Handle _ -> "handle";
                    case Rhs.Tuple _ -> "tuple";
                };
                boolean backward = let.pos() == null || let.pos().equals(kina.ir.Pos.NONE);
                throw new EvalError("--detect-anomaly: " + op + " (" + (backward ? "backward, emitted by transform_ad" : "forward")
                        + ") gives " + x + " at element " + i + (ts.size() > 1 ? " of output " + k : "") + " of " + t.type()
                        + (let.rhs() instanceof Instr.Input ? " (an input holds it)" : " (the first non-finite value; what it read was finite)"));
            }
        }
    }

    private static void checkType(Let let, Value v) {
        if (let.type() == null) return;
        Type got = typeOf(v);
        if (!got.equals(let.type()))
            throw new EvalError(opOf(let) + ": computed " + got + " but the let is typed " + let.type());
    }

    private static String opOf(Let let) {
        return switch (let.rhs()) {
            case Instr i -> i.op();
            case Rhs.Fn _ -> "fn";
            case Rhs.Call c -> "call " + c.fn();
            case Rhs.Handle _ -> handleText(let);
            case Rhs.Tuple _ -> "tuple";
        };
    }

    /** {@code handle f(a, b) with reverseMode}, for messages. */
    static String handleText(Let at) {
        if (at != null && at.rhs() instanceof Rhs.Handle(Var fn, List<Var> args, Rhs.Mode mode))
            return "handle " + fn + names(args) + " with " + switch (mode) {
                case Rhs.Mode.ReverseMode _ -> "reverseMode";
                case Rhs.Mode.ForwardMode(List<Var> tangents) -> "forwardMode" + names(tangents);
            };
        return "handle … with reverseMode";
    }

    private static String names(List<Var> vs) { return vs.stream().map(Var::name).collect(Collectors.joining(", ", "(", ")")); }

    // ---- environment --------------------------------------------------------------------------

    private static void bind(Let let, Value v, Map<Var, Value> env) {
        if (!let.destructure()) {
            env.put(let.var(), v);
            return;
        }
        if (!(v instanceof Value.Tuple(List<Value> elems)) || elems.size() != let.binders().size())
            throw new EvalError("destructuring " + let.binders().size() + " names from " + typeOf(v));
        for (int i = 0; i < elems.size(); i++) env.put(let.binders().get(i), elems.get(i));
    }

    /** The fns visible from a fn defined now: those visible here, then those bound in this scope. */
    private static Map<String, Value.Closure> visible(Map<Var, Value> env, Map<String, Value.Closure> fns) {
        Map<String, Value.Closure> m = new LinkedHashMap<>(fns);
        for (Map.Entry<Var, Value> e : env.entrySet())
            if (e.getValue() instanceof Value.Closure c) m.put(e.getKey().name(), c);
        return Collections.unmodifiableMap(m);
    }

    private static Value.Closure closure(Var f, Map<Var, Value> env, Map<String, Value.Closure> fns) {
        Value v = env.get(f);
        if (v == null) v = fns.get(f.name());
        if (v instanceof Value.Closure c) return c;
        throw new EvalError(f + " is not a fn" + (v == null ? " in scope" : " (" + typeOf(v) + ")"));
    }

    private static Value lookup(Map<Var, Value> env, Var v) {
        Value x = env.get(v);
        if (x == null) throw new EvalError(v + " is not bound");
        return x;
    }

    private static Tensor tensor(Map<Var, Value> env, Var v) {
        if (lookup(env, v) instanceof Tensor t) return t;
        throw new EvalError(v + " is " + typeOf(env.get(v)) + ", not a tensor");
    }

    private static List<Value> values(List<Var> vs, Map<Var, Value> env) {
        List<Value> out = new ArrayList<>(vs.size());
        for (Var v : vs) out.add(lookup(env, v));
        return out;
    }
}
