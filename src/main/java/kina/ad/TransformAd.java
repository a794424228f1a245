package kina.ad;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kina.check.Checker;
import kina.ir.Block;
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
 * (Section 14 §3, DESIGN §5). The output is an ordinary checked program: printable, runnable,
 * plannable, and differentiable again.
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
        return new Program(checked.file(), block(checked.body(), new ArrayList<>(), taken, seedInputs));
    }

    /**
     * The reverse-mode fn of {@code fn}: the same parameters, its lets, the recorded backward lets,
     * and a tuple result (R, g over floating params), or R alone when there is none.
     *
     * @param name  f's name, for messages
     */
    public static Rhs.Fn reverseFn(String name, Rhs.Fn fn) { return reverseFn(name, fn, false); }

    /**
     * As {@link #reverseFn(String, Rhs.Fn)}; with {@code seedParam} the fn takes one more, last,
     * parameter {@code seed} of R's type, the seed cotangent, instead of ones.
     */
    public static Rhs.Fn reverseFn(String name, Rhs.Fn fn, boolean seedParam) {
        Map<Var, TensorType> scope = new HashMap<>();
        for (var e : Checker.scope(fn).entrySet())
            if (e.getValue() instanceof TensorType t) scope.put(e.getKey(), t);
        List<TensorType> paramTypes = fn.params().stream().map(Rhs.Param::type).toList();
        boolean anyFloating = paramTypes.stream().anyMatch(t -> t.dtype().floating());
        // A fn body is a closed scope: recorded names need only avoid the fn's own names.
        Set<String> taken = new HashSet<>();
        for (Rhs.Param prm : fn.params()) taken.add(prm.name().name());
        collectNames(fn.body(), taken);
        List<Rhs.Param> params = new ArrayList<>(fn.params());
        if (seedParam) {
            Var r = fn.body().result();
            TensorType rt = scope.get(r);
            if (rt == null) throw new AdError(new Refusal.NotAnAdSpine("the body of " + name + " must end in a tensor"), name, fn.body().resultPos());
            String seedName = "seed";
            for (int i = 1; taken.contains(seedName); i++) seedName = "seed_" + i;
            taken.add(seedName);
            Var seed = new Var(seedName);
            params.add(new Rhs.Param(seed, rt, fn.body().resultPos()));
            scope.put(seed, rt);
        }
        Recording rec = new Recording(scope, taken);
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

    // ---- the walk over blocks --------------------------------------------------------------

    private static Block block(Block b, List<Block> outer, Set<String> taken, boolean seedInputs) {
        List<Block> chain = new ArrayList<>(outer);
        chain.add(b);
        List<Let> out = new ArrayList<>();
        Map<Var, Var> made = new HashMap<>();          // f -> f_grad already inserted in this block
        List<Let> seen = new ArrayList<>();
        for (Let let : b.lets()) {
            Let cur = let;
            if (let.rhs() instanceof Rhs.Fn fn) {
                cur = let.withRhs(new Rhs.Fn(fn.params(), fn.result(), block(fn.body(), chain, taken, seedInputs)));
            } else if (let.rhs() instanceof Rhs.Handle h) {
                Var g = made.get(h.fn());
                if (g == null) {
                    Let def = find(h.fn(), seen, chain);
                    Rhs.Fn target = (Rhs.Fn) def.rhs();
                    Rhs.Fn rev = reverseFn(h.fn().name(), target, seedInputs);
                    g = new Var(fresh(h.fn().name() + "_grad", taken));
                    Type.Fn ft = new Type.Fn(rev.params().stream().map(Rhs.Param::type).toList(), rev.result());
                    out.add(new Let(List.of(g), false, rev, let.pos(), null, ft));
                    made.put(h.fn(), g);
                }
                List<Var> args = new ArrayList<>(h.args());
                if (seedInputs) {
                    Rhs.Fn rev = (Rhs.Fn) out.stream().filter(l -> l.binders().contains(made.get(h.fn()))).findFirst().orElseThrow().rhs();
                    TensorType rt = rev.params().getLast().type();
                    Var seed = new Var(fresh(h.fn().name() + "_seed", taken));
                    Let in = new Let(List.of(seed), false, new kina.ir.Instr.Input(rt), let.pos(), null, rt);
                    out.add(in);
                    seen.add(in);
                    args.add(seed);
                }
                cur = let.withRhs(new Rhs.Call(g, args));
            }
            out.add(cur);
            seen.add(cur);
        }
        return new Block(out, b.result(), b.resultPos());
    }

    /** The let binding fn {@code f}: earlier in this block, else in an enclosing block. */
    private static Let find(Var f, List<Let> seen, List<Block> chain) {
        for (int i = seen.size() - 1; i >= 0; i--) if (seen.get(i).binders().contains(f)) return seen.get(i);
        for (int c = chain.size() - 2; c >= 0; c--) {
            Let l = chain.get(c).binding(f);
            if (l != null) return l;
        }
        throw new IllegalStateException("handle of unbound fn " + f + " (the checker should have refused it)");
    }

    private static String fresh(String stem, Set<String> taken) {
        String n = stem;
        for (int i = 1; taken.contains(n); i++) n = stem + "_" + i;
        taken.add(n);
        return n;
    }

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
