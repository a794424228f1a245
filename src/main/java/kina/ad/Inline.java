package kina.ad;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kina.ir.Block;
import kina.ir.Instr;
import kina.ir.Instrs;
import kina.ir.Let;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/**
 * The body of a fn to differentiate, flattened to a let-chain of instructions, which is what the
 * reverse scan walks (nested reverse mode):
 * <ul>
 *   <li>a call {@code h(a, …)} is replaced by h's body, its parameters bound to the arguments;</li>
 *   <li>a nested {@code handle h(a, …) with reverseMode} is replaced by the body of h's
 *       reverse-mode fn (h's lets and the backward lets transform_ad records for them), so a
 *       gradient is differentiated again like any other instructions; a {@code forwardMode}
 *       handle likewise by the body of h's forward-mode fn;</li>
 *   <li>tuples and destructuring lets become renames, and fn lets drop out (they stay in scope).</li>
 * </ul>
 * The fn's own lets keep their names; an inlined let keeps its name where it is free, else gets
 * {@code name_1}, …; the let that computes a call's result takes the binder's name ({@code let z =
 * h(x)} gives a let {@code z}). Inputs are supplied by name, so an inlined input keeps its name and
 * two inputs of one name and type are one value. Both readings flatten the same way, so the oracle
 * and the recorded gradient walk the same lets. A body with nothing to flatten comes back as it is.
 */
public final class Inline {
    private final String fnName;
    private final Set<String> taken = new HashSet<>();
    private final Map<String, Var> inputs = new HashMap<>();
    private final Map<String, TensorType> inputTypes = new HashMap<>();
    private final List<Let> out = new ArrayList<>();

    private Inline(String fnName) { this.fnName = fnName; }

    /**
     * {@code fn}'s body flattened (see the class comment); the same parameters and result type.
     *
     * @param name  the fn's name, for messages
     * @param scope the fns its body may call or handle
     * @throws AdError when a call's target is not a fn in scope, or two inlined inputs of one name clash
     */
    public static Rhs.Fn flatten(String name, Rhs.Fn fn, FnScope scope) {
        if (flat(fn.body())) return fn;
        Inline in = new Inline(name);
        for (Rhs.Param p : fn.params()) in.taken.add(p.name().name());
        for (Let l : fn.body().lets()) for (Var v : l.binders()) in.taken.add(v.name());
        Map<Var, Var> env = new HashMap<>();
        for (Rhs.Param p : fn.params()) env.put(p.name(), p.name());
        // The fn's own inputs come first: an inlined input of the same name is then the same value.
        for (Let l : fn.body().lets())
            if (l.rhs() instanceof Instr.Input(TensorType t)) {
                in.out.add(l);
                in.inputs.put(l.var().name(), l.var());
                in.inputTypes.put(l.var().name(), t);
                env.put(l.var(), l.var());
            }
        List<Var> result = in.body(fn.body(), env, scope, Map.of(), true);
        if (result.size() != 1)
            throw new IllegalStateException("fn " + name + " returns " + result.size() + " values; reverse mode needs one tensor");
        return new Rhs.Fn(fn.params(), fn.result(), new Block(in.out, result.getFirst(), fn.body().resultPos()));
    }

    /** True when every let is an instruction or a fn (which the scan skips): nothing to flatten. */
    private static boolean flat(Block b) {
        for (Let l : b.lets()) if (!(l.rhs() instanceof Instr || l.rhs() instanceof Rhs.Fn)) return false;
        return true;
    }

    /**
     * Emits the lets of {@code b}, operands renamed by {@code env} (which binds its free names),
     * and answers the Vars of its result (one per tuple element). {@code prefer} names the lets of
     * this body that compute a caller's binder; {@code top} is the differentiated fn's own body.
     */
    private List<Var> body(Block b, Map<Var, Var> env, FnScope scope, Map<Var, String> prefer, boolean top) {
        Map<Var, List<Var>> tuples = new HashMap<>();
        FnScope local = scope;
        for (Let l : b.lets()) {
            switch (l.rhs()) {
                case Instr.Input(TensorType t) when !top -> input(l, t, env);
                case Instr.Input _ -> { }                                     // the fn's own: emitted first
                case Instr ins -> {
                    Instr renamed = Instrs.mapOperands(ins, x -> resolve(env, x));
                    String pref = top || l.destructure() ? null : prefer.get(l.var());
                    List<Var> binders = new ArrayList<>();                  // several for an instruction of several results
                    for (Var v : l.binders()) {
                        Var nv = top ? v : new Var(pref != null ? pref : fresh(v.name()));
                        binders.add(nv);
                        env.put(v, nv);
                    }
                    out.add(top && renamed == ins ? l
                            : new Let(binders, l.destructure(), renamed, l.pos(), pref != null ? null : l.owner(), l.type()));
                }
                case Rhs.Fn fn -> local = local.with(l.var(), fn);
                case Rhs.Call(Var f, List<Var> args) -> {
                    FnScope.Target t = target(local, f, l);
                    bind(l, inline(t.fn(), args, env, t.scope(), names(l, prefer, top)), env, tuples);
                }
                case Rhs.Handle h -> {
                    FnScope.Target t = target(local, h.fn(), l);
                    Rhs.Fn derived = switch (h.mode()) {
                        case Rhs.Mode.ReverseMode _ -> TransformAd.reverseFn(t.name(), t.fn(), t.scope(), false);
                        case Rhs.Mode.ForwardMode _ -> TransformAd.forwardFn(t.name(), t.fn(), t.scope());
                    };
                    bind(l, inline(derived, h.reads(), env, FnScope.NONE, names(l, prefer, top)), env, tuples);
                }
                case Rhs.Tuple(List<Var> elems) -> bind(l, elems.stream().map(x -> resolve(env, x)).toList(), env, tuples);
            }
        }
        Var r = b.result();
        List<Var> tuple = tuples.get(r);
        return tuple != null ? tuple : List.of(resolve(env, r));
    }

    /** fn's body with its parameters bound to {@code args}; the lets computing its results take {@code names} where given. */
    private List<Var> inline(Rhs.Fn fn, List<Var> args, Map<Var, Var> env, FnScope scope, List<String> names) {
        Map<Var, Var> inner = new HashMap<>();
        for (int i = 0; i < args.size(); i++) inner.put(fn.params().get(i).name(), resolve(env, args.get(i)));
        return body(fn.body(), inner, scope, preferred(fn.body(), names), false);
    }

    /** Which let of {@code b} computes which result element, for the names a caller binds them to. */
    private Map<Var, String> preferred(Block b, List<String> names) {
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
     * The names a call or handle let hands to the callee's results: in the fn's own body its
     * binders' (which then bind no let of their own), below it the caller's preferences.
     */
    private static List<String> names(Let l, Map<Var, String> prefer, boolean top) {
        if (!l.destructure() && !(l.type() instanceof TensorType)) return List.of();
        List<String> ns = new ArrayList<>();
        for (Var v : l.binders()) ns.add(top ? v.name() : prefer.get(v));
        return ns;
    }

    /** Binds a call's, handle's or tuple's values: destructured, one tensor, or a tuple kept by name. */
    private static void bind(Let l, List<Var> values, Map<Var, Var> env, Map<Var, List<Var>> tuples) {
        if (l.destructure()) {
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
                throw new AdError(new Refusal.NotAnAdSpine("input " + n + " : " + t + " meets an input " + n + " : "
                        + inputTypes.get(n) + " when the calls in " + fnName + " are inlined (inputs are supplied by name); rename one"),
                        l.displayName(), l.pos());
            env.put(l.var(), have);
            return;
        }
        if (taken.contains(n))
            throw new AdError(new Refusal.NotAnAdSpine("input " + n + " meets a let " + n + " of " + fnName
                    + " when its calls are inlined (inputs are supplied by name); rename one"), l.displayName(), l.pos());
        taken.add(n);
        inputs.put(n, l.var());
        inputTypes.put(n, t);
        out.add(new Let(List.of(l.var()), false, l.rhs(), l.pos(), null, l.type()));
        env.put(l.var(), l.var());
    }

    private FnScope.Target target(FnScope scope, Var f, Let at) {
        FnScope.Target t = scope.lookup(f);
        if (t == null)
            throw new AdError(new Refusal.NotAnAdSpine(f + " is not a fn in scope of " + fnName), at.displayName(), at.pos());
        return t;
    }

    private static Var resolve(Map<Var, Var> env, Var x) {
        Var v = env.get(x);
        if (v == null) throw new IllegalStateException("inlining: " + x + " is not bound");
        return v;
    }

    private String fresh(String stem) { return Recording.fresh(stem, taken); }
}
