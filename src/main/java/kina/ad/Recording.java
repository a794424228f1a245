package kina.ad;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kina.check.TypeRules;
import kina.ir.Instr;
import kina.ir.Instr.*;
import kina.ir.Instrs;
import kina.ir.Let;
import kina.ir.Perm;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Var;

/**
 * The recording reading of the vocabulary ({@code Ops<Var>}): each call appends one ordinary,
 * typed let and answers its Var. This is what makes transform_ad's output just more program
 * (DESIGN §4). Temporaries are named {@code t0, t1, …}; the scan names cotangents {@code g_x}.
 */
public final class Recording implements Ops<Var> {
    private final Set<String> taken;
    private final Map<Var, TensorType> types;
    private final List<Let> lets = new ArrayList<>();
    private final Set<Var> unnamed = new HashSet<>();
    private int counter;

    /**
     * @param scope the types of every value the rules may read (the fn's params and lets)
     * @param taken names that must not be reused (every name of the enclosing program)
     */
    public Recording(Map<Var, TensorType> scope, Set<String> taken) {
        this.types = new HashMap<>(scope);
        this.taken = new HashSet<>(taken);
    }

    /** The lets recorded so far, in order. */
    public List<Let> lets() { return List.copyOf(lets); }

    /** A name not used anywhere in the program nor recorded yet; reserves it. */
    public String fresh(String stem) {
        String n = stem;
        for (int i = 1; taken.contains(n); i++) n = stem + "_" + i;
        taken.add(n);
        return n;
    }

    private Var emit(Instr ins) {
        TensorType t;
        try {
            t = TypeRules.infer(ins, v -> {
                TensorType vt = types.get(v);
                if (vt == null) throw new IllegalStateException("recorded " + ins.op() + " reads unknown value " + v);
                return vt;
            });
        } catch (TypeRules.Mismatch m) {
            throw new IllegalStateException("a VJP rule recorded an ill-typed " + ins.op() + ": " + m.getMessage(), m);
        }
        String n;
        do { n = "t" + counter++; } while (taken.contains(n));
        taken.add(n);
        Var v = new Var(n);
        lets.add(Let.typed(v, ins, t));
        types.put(v, t);
        unnamed.add(v);
        return v;
    }

    @Override public Var named(Var x, String name) {
        if (!unnamed.remove(x)) return x;                 // a primal, the seed, or already named
        Var nv = new Var(fresh(name));
        int at = -1;
        for (int i = 0; i < lets.size(); i++) if (lets.get(i).binders().contains(x)) { at = i; break; }
        Let def = lets.get(at);
        lets.set(at, Let.typed(nv, def.rhs(), def.type()));
        for (int i = at + 1; i < lets.size(); i++) {
            Let l = lets.get(i);
            lets.set(i, l.withRhs(Instrs.mapOperands((Instr) l.rhs(), v -> v.equals(x) ? nv : v)));
        }
        types.put(nv, types.remove(x));
        return nv;
    }

    @Override public TensorType type(Var x) {
        TensorType t = types.get(x);
        if (t == null) throw new IllegalStateException("unknown value " + x);
        return t;
    }

    @Override public Var fill(TensorType t, double value) { return emit(new Fill(t, value)); }
    @Override public Var neg(Var x) { return emit(new Neg(x)); }
    @Override public Var exp(Var x) { return emit(new Exp(x)); }
    @Override public Var log(Var x) { return emit(new Log(x)); }
    @Override public Var add(Var a, Var b) { return emit(new Add(a, b)); }
    @Override public Var sub(Var a, Var b) { return emit(new Sub(a, b)); }
    @Override public Var mul(Var a, Var b) { return emit(new Mul(a, b)); }
    @Override public Var div(Var a, Var b) { return emit(new Div(a, b)); }
    @Override public Var matmul(Var a, Var b) { return emit(new Matmul(a, b)); }
    @Override public Var reshape(Var x, Shape to) { return emit(new Reshape(x, to)); }
    @Override public Var transpose(Var x, Perm perm) { return emit(new Transpose(x, perm)); }
    @Override public Var broadcast(Var x, Shape to) { return emit(new Broadcast(x, to)); }
    @Override public Var sum(Var x, int axis, boolean keepDims) { return emit(new Sum(x, axis, keepDims)); }
    @Override public Var softmax(Var x, int axis) { return emit(new Softmax(x, axis)); }
    @Override public Var logSoftmax(Var x, int axis) { return emit(new LogSoftmax(x, axis)); }
    @Override public Var takeAlongAxis(Var values, Var indices, int axis) { return emit(new TakeAlongAxis(values, indices, axis)); }
    @Override public Var gather(Var values, Var indices) { return emit(new Gather(values, indices)); }
    @Override public Var scatterAdd(Var updates, Var indices, TensorType dest) { return emit(new ScatterAdd(updates, indices, dest)); }
    @Override public Var scatterAlongAxis(int axis, Var updates, Var indices, TensorType dest) {
        return emit(new ScatterAlongAxis(axis, updates, indices, dest));
    }
}
