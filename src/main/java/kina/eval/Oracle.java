package kina.eval;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import kina.ad.Primals;
import kina.ad.ReverseScan;
import kina.ir.Let;
import kina.ir.TensorType;
import kina.ir.Var;

/**
 * The oracle: a forward run that keeps its buffers, then the reverse scan calling the VJP rules
 * eagerly (DESIGN §4). Its bits are the truth the recorded gradient is proven against.
 * Plugged into the {@link Interpreter} as its reverse mode.
 */
public final class Oracle implements Interpreter.ReverseMode {
    private final Tensor seed;

    /** The oracle with the default seed, ones of the result. */
    public Oracle() { this(null); }

    /** The oracle with a supplied seed cotangent (of the result's type), or null for ones. */
    public Oracle(Tensor seed) { this.seed = seed; }

    @Override public Value apply(Interpreter in, Value.Closure f, List<Value> args, Let at) {
        LinkedHashMap<Var, Value> kept = in.bindings(f, args);
        Primals<Tensor> p = new Primals<>() {
            @Override public Tensor of(Var v) {
                if (kept.get(v) instanceof Tensor t) return t;
                throw new IllegalStateException("no tensor kept for " + v);
            }

            @Override public TensorType type(Var v) { return of(v).type(); }
        };
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
}
