package kina.ad;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
    public String fresh(String stem) {
        String n = stem;
        for (int i = 1; taken.contains(n); i++) n = stem + "_" + i;
        taken.add(n);
        return n;
    }

    /** The current Var of {@code x}: a rule may still hold a value the scan has since named. */
    private Var resolve(Var x) { return renamed.getOrDefault(x, x); }

    private Var emit(Instr given) {
        Instr ins = Instrs.mapOperands(given, this::resolve);
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
    @Override public Var sqrt(Var x) { return emit(new Sqrt(x)); }
    @Override public Var rsqrt(Var x) { return emit(new Rsqrt(x)); }
    @Override public Var tanh(Var x) { return emit(new Tanh(x)); }
    @Override public Var sigmoid(Var x) { return emit(new Sigmoid(x)); }
    @Override public Var reciprocal(Var x) { return emit(new Reciprocal(x)); }
    @Override public Var silu(Var x) { return emit(new Silu(x)); }
    @Override public Var gelu(Var x) { return emit(new Gelu(x)); }
    @Override public Var relu(Var x) { return emit(new Relu(x)); }
    @Override public Var softcap(Var x, double cap) { return emit(new Softcap(x, cap)); }
    @Override public Var argmax(Var x, int axis) { return emit(new ArgMax(x, axis)); }
    @Override public Var clamp(Var x, long lo, long hi) { return emit(new Clamp(x, lo, hi)); }
    @Override public Var requant(Var x, int shift) { return emit(new Requant(x, shift)); }
    @Override public Var maximum(Var a, Var b) { return emit(new Maximum(a, b)); }
    @Override public Var greater(Var a, Var b) { return emit(new Greater(a, b)); }
    @Override public Var select(Var mask, Var a, Var b) { return emit(new Select(mask, a, b)); }
    @Override public Var swiglu(Var gate, Var up) { return emit(new Swiglu(gate, up)); }
    @Override public Var rmsnorm(Var x, Optional<Var> weight, Optional<Var> residual, double eps) { return emit(new RmsNorm(x, weight, residual, eps)); }
    @Override public Var layernorm(Var x, Optional<Var> weight, Optional<Var> bias, double eps) { return emit(new LayerNorm(x, weight, bias, eps)); }
    @Override public Var l2norm(Var x, double eps) { return emit(new L2Norm(x, eps)); }
    @Override public Var rope(Var x, Var cos, Var sin, int heads, int rotary, int start) { return emit(new Rope(x, cos, sin, heads, rotary, start)); }
    @Override public Var attention(Var q, Var k, Var v, Optional<Var> sinks, AttnOpts opts) { return emit(new Attention(q, k, v, sinks, opts)); }
    @Override public Var setRows(Var table, Var ids, Var rows) { return emit(new SetRows(table, ids, rows)); }
    @Override public Var attentionProduct(Var a, Var b, AttnOpts opts, AttentionProduct.Form form) { return emit(new AttentionProduct(a, b, opts, form)); }
    @Override public Var attentionProbs(Var q, Var k, Optional<Var> sinks, AttnOpts opts, boolean sinkColumn) { return emit(new AttentionProbs(q, k, sinks, opts, sinkColumn)); }
}
