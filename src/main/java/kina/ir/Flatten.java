package kina.ir;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A checked block flattened to one let chain of instructions, the form reverse mode walks (over a
 * fn's body) and the plan schedules (over a whole program):
 * <ul>
 *   <li>a call {@code h(a, …)} is replaced by h's body, its parameters bound to the arguments (fn
 *       bodies are closed, so the body runs in a scope of its own);</li>
 *   <li>a {@code handle h(a, …) with …} is replaced by the body of the fn the {@link Stage}
 *       answers for it (reverse mode: h's reverse-mode or forward-mode fn; the plan, which runs
 *       after transform_ad, refuses it);</li>
 *   <li>tuples and destructuring lets become renames, and fn lets drop out (they stay in scope).</li>
 * </ul>
 * The block's own lets keep their names; an inlined let keeps its name where it is free, else
 * gets {@code name_1}, …; the let that computes a call's result takes the binder's name
 * ({@code let z = h(x)} gives a let {@code z}). Inputs are supplied by name, so the block's own
 * inputs come first, an inlined input keeps its name, and two inputs of one name and type are one
 * value. The flat lets compute the same values, bit for bit, as the block.
 */
public final class Flatten {

    /** What the stage that flattens decides. */
    public interface Stage {
        /**
         * The fn whose body replaces {@code handle}, let {@code at}; {@code target} is the handled
         * fn and the scope its body sees. A stage that takes no handles throws its refusal.
         */
        Rhs.Fn handle(Let at, Rhs.Handle handle, FnScope.Target target);

        /** The stage's error naming let {@code at} (null: the block's result), with {@code message}. */
        RuntimeException refuse(Let at, String message);

        /**
         * The let that goes into the flat chain for {@code flat}, which the flattener made from
         * {@code from} (its binders renamed, its operands the flat values); the stage may check
         * it, or record where it came from. By default {@code flat} itself.
         */
        default Let emit(Let from, Let flat) { return flat; }
    }

    /** The flat chain: its lets, and the values of the block's result (one per tuple element). */
    public record Flat(List<Let> lets, List<Var> result) {
        public Flat {
            lets = List.copyOf(lets);
            result = List.copyOf(result);
        }
    }

    /** Calls nested deeper than this are refused (a checked program cannot recurse; this bounds the stack). */
    private static final int MAX_DEPTH = 200;

    private final String name;
    private final Stage stage;
    private final Set<String> taken = new HashSet<>();
    private final Map<String, Var> inputs = new HashMap<>();
    private final Map<String, TensorType> inputTypes = new HashMap<>();
    private final List<Let> out = new ArrayList<>();
    private int depth;

    private Flatten(String name, Stage stage) {
        this.name = name;
        this.stage = stage;
    }

    /**
     * Block {@code b} flattened; {@code params} are its free tensor names (a fn's parameters),
     * {@code scope} the fns its calls and handles may name besides its own.
     *
     * @param name  what is flattened, for messages ("the calls in {@code name}")
     * @throws RuntimeException the stage's refusal: a call or handle of a name that is no fn in
     *     scope, a call with the wrong number of arguments or nested too deep, two inputs of one
     *     name and different types, an input named like one of the block's lets, a handle the
     *     stage does not take
     */
    public static Flat block(String name, Block b, List<Rhs.Param> params, FnScope scope, Stage stage) {
        Flatten in = new Flatten(name, stage);
        for (Rhs.Param p : params) in.taken.add(p.name().name());
        for (Let l : b.lets()) for (Var v : l.binders()) in.taken.add(v.name());
        Map<Var, Var> env = new HashMap<>();
        for (Rhs.Param p : params) env.put(p.name(), p.name());
        // The block's own inputs come first: an inlined input of the same name is then the same value.
        for (Let l : b.lets())
            if (l.rhs() instanceof Instr.Input(TensorType t)) {
                in.out.add(stage.emit(l, l));
                in.inputs.put(l.var().name(), l.var());
                in.inputTypes.put(l.var().name(), t);
                env.put(l.var(), l.var());
            }
        return new Flat(in.out, in.body(b, env, scope, Map.of(), true));
    }

    /**
     * Emits the lets of {@code b}, operands renamed by {@code env} (which binds its free names),
     * and answers the Vars of its result (one per tuple element). {@code prefer} names the lets of
     * this body that compute a caller's binder; {@code top} is the block being flattened.
     */
    private List<Var> body(Block b, Map<Var, Var> env, FnScope scope, Map<Var, String> prefer, boolean top) {
        Map<Var, List<Var>> tuples = new HashMap<>();
        FnScope local = scope;
        for (Let l : b.lets()) {
            switch (l.rhs()) {
                case Instr.Input(TensorType t) when !top -> input(l, t, env);
                case Instr.Input _ -> { }                                     // the block's own: emitted first
                case Instr ins -> {
                    Instr renamed = Instrs.mapOperands(ins, x -> resolve(env, x, l));
                    String pref = top || l.destructure() ? null : prefer.get(l.var());
                    List<Var> binders = new ArrayList<>();                  // several for an instruction of several results
                    for (Var v : l.binders()) {
                        Var nv = top ? v : new Var(pref != null ? pref : fresh(v.name()));
                        binders.add(nv);
                        env.put(v, nv);
                    }
                    out.add(stage.emit(l, top && renamed == ins ? l
                            : new Let(binders, l.destructure(), renamed, l.pos(), pref != null ? null : l.owner(), l.type())));
                }
                case Rhs.Fn fn -> local = local.with(l.var(), fn);
                case Rhs.Call(Var f, List<Var> args) -> {
                    FnScope.Target t = target(local, f, l);
                    if (t.fn().params().size() != args.size())
                        throw stage.refuse(l, "call " + f + ": expected " + t.fn().params().size() + " arguments, got " + args.size());
                    bind(l, inline(t.fn(), args, env, t.scope(), names(l, prefer, top), l), env, tuples);
                }
                case Rhs.Handle h -> {
                    FnScope.Target t = target(local, h.fn(), l);
                    bind(l, inline(stage.handle(l, h, t), h.reads(), env, FnScope.NONE, names(l, prefer, top), l), env, tuples);
                }
                case Rhs.Tuple(List<Var> elems) -> bind(l, elems.stream().map(x -> resolve(env, x, l)).toList(), env, tuples);
            }
        }
        Var r = b.result();
        List<Var> tuple = tuples.get(r);
        return tuple != null ? tuple : List.of(resolve(env, r, null));
    }

    /** fn's body with its parameters bound to {@code args}; the lets computing its results take {@code names} where given. */
    private List<Var> inline(Rhs.Fn fn, List<Var> args, Map<Var, Var> env, FnScope scope, List<String> names, Let at) {
        if (++depth > MAX_DEPTH) throw stage.refuse(at, "calls nested deeper than " + MAX_DEPTH + " (recursion is not flattened)");
        Map<Var, Var> inner = new HashMap<>();
        for (int i = 0; i < args.size(); i++) inner.put(fn.params().get(i).name(), resolve(env, args.get(i), at));
        List<Var> result = body(fn.body(), inner, scope, preferred(fn.body(), names), false);
        depth--;
        return result;
    }

    /** Which let of {@code b} computes which result element, for the names a caller binds them to. */
    private static Map<Var, String> preferred(Block b, List<String> names) {
        Map<Var, String> m = new HashMap<>();
        if (names.isEmpty()) return m;
        Let def = b.binding(b.result());
        List<Var> elems = def != null && !def.destructure() && def.rhs() instanceof Rhs.Tuple(List<Var> es) ? es : List.of(b.result());
        Set<String> used = new HashSet<>();
        for (int i = 0; i < elems.size() && i < names.size(); i++) {
            String n = names.get(i);
            Let at = b.binding(elems.get(i));
            if (n == null || at == null || at.rhs() instanceof Instr.Input || m.containsKey(elems.get(i)) || !used.add(n)) continue;
            m.put(elems.get(i), n);
        }
        return m;
    }

    /**
     * The names a call or handle let hands to the callee's results: in the block's own lets its
     * binders' (which then bind no let of their own), below it the caller's preferences.
     */
    private static List<String> names(Let l, Map<Var, String> prefer, boolean top) {
        if (!l.destructure() && !(l.type() instanceof TensorType)) return List.of();
        List<String> ns = new ArrayList<>();
        for (Var v : l.binders()) ns.add(top ? v.name() : prefer.get(v));
        return ns;
    }

    /** Binds a call's, handle's or tuple's values: destructured, one tensor, or a tuple kept by name. */
    private void bind(Let l, List<Var> values, Map<Var, Var> env, Map<Var, List<Var>> tuples) {
        if (l.destructure()) {
            if (values.size() != l.binders().size())
                throw stage.refuse(l, "destructuring " + l.binders().size() + " names from " + values.size() + " values");
            for (int i = 0; i < l.binders().size(); i++) env.put(l.binders().get(i), values.get(i));
        } else if (l.type() instanceof Type.Tuple) {
            tuples.put(l.var(), values);
        } else {
            env.put(l.var(), values.getFirst());
        }
    }

    /** An inlined input: the value of the input of that name when there is one, else a let of that name. */
    private void input(Let l, TensorType t, Map<Var, Var> env) {
        String n = l.var().name();
        Var have = inputs.get(n);
        if (have != null) {
            if (!inputTypes.get(n).equals(t))
                throw stage.refuse(l, "input " + n + " : " + t + " meets an input " + n + " : " + inputTypes.get(n)
                        + " when the calls in " + name + " are inlined (inputs are supplied by name); rename one");
            env.put(l.var(), have);
            return;
        }
        if (taken.contains(n))
            throw stage.refuse(l, "input " + n + " meets a let " + n + " of " + name
                    + " when its calls are inlined (inputs are supplied by name); rename one");
        taken.add(n);
        inputs.put(n, l.var());
        inputTypes.put(n, t);
        out.add(stage.emit(l, new Let(List.of(l.var()), false, l.rhs(), l.pos(), null, l.type())));
        env.put(l.var(), l.var());
    }

    private FnScope.Target target(FnScope scope, Var f, Let at) {
        FnScope.Target t = scope.lookup(f);
        if (t == null) throw stage.refuse(at, f + " is not a fn in scope of " + name);
        return t;
    }

    /** The flat value of {@code x}; a name bound to no tensor (a fn, a tuple used whole) is refused at {@code at}. */
    private Var resolve(Map<Var, Var> env, Var x, Let at) {
        Var v = env.get(x);
        if (v == null) throw stage.refuse(at, x + " is not a tensor here" + (at == null ? ": the result must be tensors" : ""));
        return v;
    }

    private String fresh(String stem) {
        String n = stem;
        for (int i = 1; taken.contains(n); i++) n = stem + "_" + i;
        taken.add(n);
        return n;
    }
}
