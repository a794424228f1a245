package kina.ad;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.Set;
import kina.check.TypeRules;
import kina.ir.Instr;
import kina.ir.Instrs;
import kina.ir.Let;
import kina.ir.TensorType;
import kina.ir.Var;

/**
 * The recording reading of the vocabulary ({@code Ops<Var>}): each call appends one ordinary,
 * typed let and answers its Var. This is what makes transform_ad's output just more program
 * (printable, checkable, differentiable again). Temporaries are named {@code t0, t1, …}; the
 * scan names cotangents {@code g_x}.
 */
public final class Recording implements Ops<Var> {
    private final Set<String> taken;
    private final Map<Var, TensorType> types;
    private final List<Let> lets = new ArrayList<>();
    private final Set<Var> unnamed = new HashSet<>();
    private final Map<Var, Var> renamed = new HashMap<>();     // a recorded Var → the name it was given
    private final Map<Var, Integer> defAt = new HashMap<>();   // a recorded Var → the index of its let
    private int counter;

    /**
     * @param scope the types of every value the rules may read (the fn's params and lets)
     * @param taken names that must not be reused (every name of the enclosing program)
     */
    public Recording(Map<Var, TensorType> scope, Set<String> taken) {
        this.types = new HashMap<>(scope);
        this.taken = new HashSet<>(taken);
    }

    /**
     * The lets recorded so far, in order, every operand under its final name (renames by
     * {@link #named} are applied here, once, rather than by rewriting the recorded lets at each
     * rename, which made recording quadratic in the program size).
     */
    public List<Let> lets() {
        List<Let> out = new ArrayList<>(lets.size());
        for (Let l : lets) out.add(renamed.isEmpty() ? l : l.withRhs(Instrs.mapOperands((Instr) l.rhs(), this::resolve)));
        return out;
    }

    /** A name not used anywhere in the program nor recorded yet; reserves it. */
    public String fresh(String stem) { return fresh(stem, taken); }

    /** {@code stem}, or {@code stem_1}, {@code stem_2}, … : the first not in {@code taken}, which it joins. */
    static String fresh(String stem, Set<String> taken) {
        String n = stem;
        for (int i = 1; taken.contains(n); i++) n = stem + "_" + i;
        taken.add(n);
        return n;
    }

    /** The current Var of {@code x}: a rule may still hold a value the scan has since named. */
    private Var resolve(Var x) { return renamed.getOrDefault(x, x); }

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
        defAt.put(v, lets.size());
        lets.add(Let.typed(v, ins, t));
        types.put(v, t);
        unnamed.add(v);
        return v;
    }

    @Override public Var named(Var given, String name) {
        Var x = resolve(given);
        if (!unnamed.remove(x)) return x;                 // a primal, the seed, or already named
        Var nv = new Var(fresh(name));
        int at = defAt.remove(x);                         // readers recorded since are renamed in lets()
        Let def = lets.get(at);
        lets.set(at, Let.typed(nv, def.rhs(), def.type()));
        types.put(nv, types.remove(x));
        renamed.put(x, nv);
        return nv;
    }

    @Override public TensorType type(Var x) {
        TensorType t = types.get(resolve(x));
        if (t == null) throw new IllegalStateException("unknown value " + x);
        return t;
    }

    /** Appends {@code ins}, its operands read through {@code operand}, as a new typed let; answers its Var. */
    @Override public Var apply(Instr ins, Function<Var, Var> operand) {
        return emit(Instrs.mapOperands(ins, v -> resolve(operand.apply(v))));
    }
}
