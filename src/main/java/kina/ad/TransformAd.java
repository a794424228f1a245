package kina.ad;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kina.check.Checker;
import kina.ir.Block;
import kina.ir.FnScope;
import kina.ir.Let;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/**
 * transform_ad: replaces every {@code handle f(args) with reverseMode} of a checked program by a
 * call of a new fn {@code f_grad} — f's own lets followed by the lets the recording reading of the
 * VJP rules appends — returning {@code (R, g0, …, gk-1)}, or R when f has no floating parameter
 * (docs/language.md, "handle … with reverseMode"), and every {@code handle f(args) with forwardMode(ts)} by a call of
 * {@code f_jvp} returning {@code (R, J·t)}, derived from the same rules by transposition. A
 * differentiated body may call fns, destructure tuples and hold handles itself: it is flattened
 * first ({@link Inline}), so gradients of gradients need nothing more. The output is an ordinary
 * checked program: printable, runnable, plannable, and differentiable again.
 */
public final class TransformAd {
    private TransformAd() {}

    /**
     * Transforms every handle in {@code checked} (a program returned by kina.check).
     *
     * @throws AdError naming the let and the rule when a gradient is refused
     */
    public static Program transform(Program checked) { return transform(checked, false); }

    /**
     * Transforms every handle; with {@code seedInputs} the seed cotangent of each handle of fn f is
     * not ones but an input let {@code f_seed : R} (supplied at run time like any input), passed to
     * {@code f_grad} as its last parameter {@code seed}.
     *
     * @throws AdError naming the let and the rule when a gradient is refused
     */
    public static Program transform(Program checked, boolean seedInputs) {
        Set<String> taken = new HashSet<>();
        collectNames(checked.body(), taken);
        return new Program(checked.file(), block(checked.body(), FnScope.NONE, taken, seedInputs));
    }

    /**
     * The reverse-mode fn of {@code fn}: the same parameters, its lets, the recorded backward lets,
     * and a tuple result (R, g over floating params), or R alone when there is none. Its body may
     * not call or handle other fns (see {@link #reverseFn(String, Rhs.Fn, FnScope, boolean)}).
     *
     * @param name  f's name, for messages
     */
    public static Rhs.Fn reverseFn(String name, Rhs.Fn fn) { return reverseFn(name, fn, FnScope.NONE, false); }

    /**
     * As {@link #reverseFn(String, Rhs.Fn)}; with {@code seedParam} the fn takes one more, last,
     * parameter {@code seed} of R's type, the seed cotangent, instead of ones.
     */
    public static Rhs.Fn reverseFn(String name, Rhs.Fn fn, boolean seedParam) { return reverseFn(name, fn, FnScope.NONE, seedParam); }

    /**
     * The reverse-mode fn of {@code fn}, whose body may call and handle the fns of {@code scope}:
     * the body is first flattened ({@link Inline}: calls inlined, nested handles replaced by their own
     * reverse-mode fns, tuples and destructuring resolved), so gradients of gradients are ordinary.
     * The result is (R, g over floating params), or R alone when there is none; with
     * {@code seedParam} a last parameter {@code seed} of R's type replaces the ones seed.
     *
     * @throws AdError naming the let and the rule when a gradient is refused
     */
    public static Rhs.Fn reverseFn(String name, Rhs.Fn original, FnScope scope, boolean seedParam) {
        Rhs.Fn fn = Inline.flatten(name, original, scope);
        Map<Var, TensorType> types = new HashMap<>();
        for (var e : Checker.scope(fn).entrySet())
            if (e.getValue() instanceof TensorType t) types.put(e.getKey(), t);
        List<TensorType> paramTypes = fn.params().stream().map(Rhs.Param::type).toList();
        boolean anyFloating = paramTypes.stream().anyMatch(t -> t.dtype().floating());
        // A fn body is a closed scope: recorded names need only avoid the fn's own names.
        Set<String> taken = new HashSet<>();
        for (Rhs.Param prm : fn.params()) taken.add(prm.name().name());
        collectNames(fn.body(), taken);
        List<Rhs.Param> params = new ArrayList<>(fn.params());
        if (seedParam) {
            Var r = fn.body().result();
            TensorType rt = types.get(r);
            if (rt == null) throw new AdError(new Refusal.NotAnAdSpine("the body of " + name + " must end in a tensor"), name, fn.body().resultPos());
            Var seed = new Var(fresh("seed", taken));
            params.add(new Rhs.Param(seed, rt, fn.body().resultPos()));
            types.put(seed, rt);
        }
        Recording rec = new Recording(types, taken);
        Primals<Var> primals = new Primals<>() {
            @Override public Var of(Var v) { return v; }
            @Override public TensorType type(Var v) { return rec.type(v); }
        };
        // The scan checks the pass rules even when k = 0, so refusals are the same either way.
        Var seedVar = seedParam ? params.getLast().name() : ReverseScan.onesSeed(fn, primals, rec);
        var out = ReverseScan.reverse(name, fn, primals, seedVar, rec);
        if (!anyFloating && !seedParam) return fn;
        List<Let> lets = new ArrayList<>(fn.body().lets());
        lets.addAll(rec.lets());
        List<Var> elems = new ArrayList<>();
        elems.add(out.result());
        elems.addAll(out.cotangents());
        List<Type> elemTypes = new ArrayList<>();
        for (Var v : elems) elemTypes.add(rec.type(v));
        Type.Tuple tt = new Type.Tuple(elemTypes);
        Var tupleVar = new Var("%" + rec.fresh("ad_result"));
        lets.add(new Let(List.of(tupleVar), false, new Rhs.Tuple(elems), fn.body().resultPos(), "result", tt));
        if (!anyFloating) return new Rhs.Fn(params, fn.result(), fn.body());          // R alone; the seed is unused
        return new Rhs.Fn(params, tt, new Block(lets, tupleVar, fn.body().resultPos()));
    }

    /**
     * The forward-mode fn of {@code fn}, derived from the VJP rules, not from rules of its own: f's
     * parameters, then a tangent {@code dot_p} for each floating parameter p, returning (R, J·t).
     * J·t is the transpose of f's linear pullback: the reverse scan over f's reverse-mode fn
     * (seeded by a parameter u) with the tangents planted on its cotangents answers u's cotangent
     * ({@link ReverseScan#transpose}); lets the result does not read (the first-order backward,
     * u itself) are dropped.
     *
     * @throws AdError naming the let and the rule when a gradient is refused
     */
    public static Rhs.Fn forwardFn(String name, Rhs.Fn original, FnScope scope) {
        Rhs.Fn rev = reverseFn(name, original, scope, true);
        Rhs.Param u = rev.params().getLast();
        TensorType rt = u.type();
        Set<String> taken = new HashSet<>();
        for (Rhs.Param prm : rev.params()) taken.add(prm.name().name());
        collectNames(rev.body(), taken);
        List<Rhs.Param> params = new ArrayList<>(rev.params().subList(0, rev.params().size() - 1));
        Map<Var, TensorType> types = new HashMap<>();
        for (var e : Checker.scope(rev).entrySet())
            if (e.getValue() instanceof TensorType t) types.put(e.getKey(), t);
        List<Var> tangents = new ArrayList<>();
        for (Rhs.Param prm : original.params()) {
            if (!prm.type().dtype().floating()) continue;
            Var t = new Var(fresh("dot_" + prm.name().name(), taken));
            params.add(new Rhs.Param(t, prm.type(), prm.pos()));
            types.put(t, prm.type());
            tangents.add(t);
        }
        List<Let> lets = new ArrayList<>();
        lets.add(Let.typed(u.name(), new kina.ir.Instr.Fill(rt, 0.0), rt));      // any u will do: g is linear in it
        Var r, jt;
        Recording rec = new Recording(types, taken);
        if (tangents.isEmpty()) {                                               // nothing to vary: J·t = 0
            lets.addAll(rev.body().lets());
            r = rev.body().result();
            jt = rec.named(rec.fill(rt, 0.0), "dot_" + r.name());
        } else {
            Primals<Var> primals = new Primals<>() {
                @Override public Var of(Var v) { return v; }
                @Override public TensorType type(Var v) { return rec.type(v); }
            };
            jt = ReverseScan.transpose(name, rev, tangents, primals, rec);
            lets.addAll(rev.body().lets());
            r = ((Rhs.Tuple) rev.body().binding(rev.body().result()).rhs()).elems().getFirst();
        }
        lets.addAll(rec.lets());
        Type.Tuple tt = new Type.Tuple(List.of(rt, rt));
        Var tupleVar = new Var("%" + rec.fresh("fwd_result"));
        lets.add(new Let(List.of(tupleVar), false, new Rhs.Tuple(List.of(r, rec.named(jt, "dot_" + r.name()))),
                rev.body().resultPos(), "result", tt));
        return new Rhs.Fn(params, tt, new Block(live(lets, tupleVar), tupleVar, rev.body().resultPos()));
    }

    /** The lets {@code result} reads, directly or not, and every input (inputs are the program's interface). */
    private static List<Let> live(List<Let> lets, Var result) {
        Set<Var> need = new HashSet<>(Set.of(result));
        boolean[] keep = new boolean[lets.size()];
        for (int i = lets.size() - 1; i >= 0; i--) {
            Let l = lets.get(i);
            if (!(l.rhs() instanceof kina.ir.Instr.Input) && l.binders().stream().noneMatch(need::contains)) continue;
            keep[i] = true;
            switch (l.rhs()) {
                case kina.ir.Instr ins -> need.addAll(ins.operands());
                case Rhs.Tuple t -> need.addAll(t.elems());
                case Rhs.Fn _, Rhs.Call _, Rhs.Handle _ -> throw new IllegalStateException("a flattened body holds " + l.displayName());
            }
        }
        List<Let> out = new ArrayList<>();
        for (int i = 0; i < lets.size(); i++) if (keep[i]) out.add(lets.get(i));
        return out;
    }

    // ---- the walk over blocks --------------------------------------------------------------

    /**
     * The block with its handles replaced; {@code scope} holds the fns visible from outside it. A
     * handle's target is read from the program as written (before its own handles were replaced).
     */
    private static Block block(Block b, FnScope scope, Set<String> taken, boolean seedInputs) {
        List<Let> out = new ArrayList<>();
        Map<Var, Var> grads = new HashMap<>(), jvps = new HashMap<>();   // f -> f_grad / f_jvp already inserted here
        for (int i = 0; i < b.lets().size(); i++) {
            Let let = b.lets().get(i);
            Let cur = let;
            if (let.rhs() instanceof Rhs.Fn fn) {
                cur = let.withRhs(new Rhs.Fn(fn.params(), fn.result(), block(fn.body(), FnScope.of(b, i, scope), taken, seedInputs)));
            } else if (let.rhs() instanceof Rhs.Handle h) {
                boolean forward = h.mode() instanceof Rhs.Mode.ForwardMode;
                Map<Var, Var> made = forward ? jvps : grads;
                Var g = made.get(h.fn());
                if (g == null) {
                    FnScope.Target target = FnScope.of(b, i, scope).lookup(h.fn());
                    if (target == null)
                        throw new IllegalStateException("handle of unbound fn " + h.fn() + " (the checker should have refused it)");
                    Rhs.Fn derived = forward ? forwardFn(target.name(), target.fn(), target.scope())
                            : reverseFn(target.name(), target.fn(), target.scope(), seedInputs);
                    g = new Var(fresh(h.fn().name() + (forward ? "_jvp" : "_grad"), taken));
                    Type.Fn ft = new Type.Fn(derived.params().stream().map(Rhs.Param::type).toList(), derived.result());
                    out.add(new Let(List.of(g), false, derived, let.pos(), null, ft));
                    made.put(h.fn(), g);
                }
                List<Var> args = new ArrayList<>(h.reads());
                if (seedInputs && !forward) {
                    Var made1 = g;
                    Rhs.Fn rev = (Rhs.Fn) out.stream().filter(l -> l.binders().contains(made1)).findFirst().orElseThrow().rhs();
                    TensorType rt = rev.params().getLast().type();
                    Var seed = new Var(fresh(h.fn().name() + "_seed", taken));
                    out.add(new Let(List.of(seed), false, new kina.ir.Instr.Input(rt), let.pos(), null, rt));
                    args.add(seed);
                }
                cur = let.withRhs(new Rhs.Call(g, args));
            }
            out.add(cur);
        }
        return new Block(out, b.result(), b.resultPos());
    }

    private static String fresh(String stem, Set<String> taken) { return Recording.fresh(stem, taken); }

    private static void collectNames(Block b, Set<String> names) {
        for (Let l : b.lets()) {
            for (Var v : l.binders()) names.add(v.name());
            if (l.rhs() instanceof Rhs.Fn fn) {
                for (Rhs.Param p : fn.params()) names.add(p.name().name());
                collectNames(fn.body(), names);
            }
        }
    }
}
