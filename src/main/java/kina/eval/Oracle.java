package kina.eval;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import kina.ir.FnScope;
import kina.ad.Inline;
import kina.ad.Primals;
import kina.ad.ReverseScan;
import kina.ad.TransformAd;
import kina.ir.Let;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Var;

/**
 * The oracle: a forward run that keeps its buffers, then the reverse scan calling the VJP rules
 * eagerly. Its bits are the truth the recorded gradient is proven against.
 * Plugged into the {@link Interpreter} as its reverse mode. A body with calls or nested handles is
 * flattened first as transform_ad flattens it; a nested handle's gradient is then the recorded one
 * (a gradient is differentiated as a program), and this scan reads it eagerly.
 */
public final class Oracle implements Interpreter.ReverseMode {
    private final Tensor seed;

    /** The oracle with the default seed, ones of the result. */
    public Oracle() { this(null); }

    /** The oracle with a supplied seed cotangent (of the result's type), or null for ones. */
    public Oracle(Tensor seed) { this.seed = seed; }

    /** The forward buffers kept by a run, as the rules read them. */
    private static Primals<Tensor> primals(LinkedHashMap<Var, Value> kept) {
        return new Primals<>() {
            @Override public Tensor of(Var v) {
                if (kept.get(v) instanceof Tensor t) return t;
                throw new IllegalStateException("no tensor kept for " + v);
            }

            @Override public TensorType type(Var v) { return of(v).type(); }
        };
    }

    /** The fns a closure's body sees, as the reverse scan's inlining looks them up. */
    static FnScope scope(Value.Closure c) {
        return f -> {
            Value.Closure d = c.fns().get(f.name());
            return d == null ? null : new FnScope.Target(d.name(), d.fn(), scope(d));
        };
    }

    /**
     * The closure's body flattened as transform_ad flattens it ({@link Inline}: calls inlined, nested
     * handles replaced by their recorded reverse-mode fns), so this scan walks the same lets.
     */
    static Value.Closure flat(Value.Closure f) {
        Rhs.Fn flat = Inline.flatten(f.name(), f.fn(), scope(f));
        return flat == f.fn() ? f : new Value.Closure(f.name(), flat, f.fns());
    }

    @Override public Value apply(Interpreter in, Value.Closure original, List<Value> args, Let at) {
        Value.Closure f = flat(original);
        LinkedHashMap<Var, Value> kept = in.bindings(f, args);
        Primals<Tensor> p = primals(kept);
        Tensor s = seed != null ? seed : ReverseScan.onesSeed(f.fn(), p, Eager.INSTANCE);
        if (seed != null && !seed.type().equals(p.type(f.fn().body().result())))
            throw new EvalError("the seed cotangent has type " + seed.type()
                    + " but " + f.name() + " returns " + p.type(f.fn().body().result())).at(at);
        var out = ReverseScan.reverse(f.name(), f.fn(), p, s, Eager.INSTANCE);
        if (out.cotangents().isEmpty()) return out.result();
        List<Value> elems = new ArrayList<>();
        elems.add(out.result());
        elems.addAll(out.cotangents());
        return new Value.Tuple(elems);
    }

    /**
     * {@code handle f(args) with forwardMode(tangents)}: (R, J·t) by the transposition transform_ad
     * records ({@link ReverseScan#transpose}), read eagerly over f's reverse-mode fn run with the seed
     * parameter u = +0.0 (its cotangents are linear in u, so any u will do).
     */
    @Override public Value forward(Interpreter in, Value.Closure f, List<Value> args, List<Value> tangents, Let at) {
        Rhs.Fn rev = TransformAd.reverseFn(f.name(), f.fn(), scope(f), true);
        TensorType rt = rev.params().getLast().type();
        List<Value> withSeed = new ArrayList<>(args);
        withSeed.add(Kernels.fill(rt, 0.0));
        LinkedHashMap<Var, Value> kept = in.bindings(new Value.Closure(f.name(), rev, f.fns()), withSeed);
        Primals<Tensor> p = primals(kept);
        Value result = kept.get(rev.body().result());
        if (!(result instanceof Value.Tuple(List<Value> elems)))              // no floating parameter: J·t = 0
            return new Value.Tuple(List.of(result, Kernels.fill(rt, 0.0)));
        List<Tensor> ts = new ArrayList<>();
        for (Value t : tangents) ts.add((Tensor) t);
        Tensor jt = ReverseScan.transpose(f.name(), rev, ts, p, Eager.INSTANCE);
        return new Value.Tuple(List.of(elems.getFirst(), jt));
    }
}
