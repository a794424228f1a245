package kina.eval;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Predicate;
import kina.ad.Refusal;
import kina.ir.DType;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * Random well-typed kina programs over the whole vocabulary, written as source, with inputs for
 * them. A program defines fns (one may call another or hold a reverse- or forward-mode handle of
 * it), then a fn {@code f} whose parameters are floating tensors and I64 indices, and ends in
 * {@code handle f(…) with reverseMode} or {@code … with forwardMode(…)}; {@link Generated#forward}
 * is the same program ending in the call {@code f(…)}, for finite differences.
 *
 * <p>Well-typed by construction: every let is made from values of the right types (shapes, axes,
 * permutations, heads, index bounds), and every floating value carries an interval that bounds
 * it, so that log, sqrt, rsqrt, reciprocal and division see only values ≥ 0.1 and exp only values
 * ≤ 4: the programs are smooth where they are evaluated and finite differences apply. Axes and
 * permutation entries are written counting from the end at random. Some programs plant a refusal
 * (a method chain that receives a cotangent, a rope table computed from a parameter, a discrete
 * result), and say which ({@link Generated#refusal}).
 *
 * <p>The structure depends only on the seed: the same seed in F32 and F64 gives the same program
 * up to the dtype, and inputs drawn from the same numbers.
 */
public final class ProgramGen {

    /** How the program ends. */
    public enum Mode { REVERSE, FORWARD }

    /**
     * A generated program: its source, the source ending in a plain call of f, its inputs by name,
     * f's floating parameters (in order), the tangent inputs of a forward-mode program, and the
     * refusal it plants (null: transform_ad must succeed).
     */
    public record Generated(String source, String forward, Map<String, Tensor> inputs, List<String> params,
                            List<String> tangents, DType dtype, Mode mode, Class<? extends Refusal> refusal) {}

    private enum Kind { FLOAT, INDEX, MASK }

    /** A value in scope: its name, shape and kind; floats an interval [lo, hi]; indices their range [0, bound). */
    private static final class Val {
        final String name;
        final Shape shape;
        final Kind kind;
        final double lo, hi;
        final long bound;
        final boolean active;         // computed from a floating parameter of the fn being written
        int uses;

        Val(String name, Shape shape, Kind kind, double lo, double hi, long bound, boolean active) {
            this.name = name;
            this.shape = shape;
            this.kind = kind;
            this.lo = lo;
            this.hi = hi;
            this.bound = bound;
            this.active = active;
        }

        double mag() { return Math.max(Math.abs(lo), Math.abs(hi)); }

        int rank() { return shape.rank(); }

        long last() { return shape.dim(shape.rank() - 1); }
    }

    /** A parameter of a fn: for f, also a top-level input; {@code distinct} ids (set_rows). */
    private record Param(Val val, boolean distinct) {}

    /** A fn being written: its parameters, lets and the values in scope. */
    private final class Body {
        final String name;
        final List<Param> params = new ArrayList<>();
        final StringBuilder lets = new StringBuilder();
        final List<Val> pool = new ArrayList<>();
        final boolean top;            // f: parameters are inputs; inner fns get theirs as arguments
        final List<Val> mustReach = new ArrayList<>();   // a planted refusal's value: the result reads it
        int budget;                   // parameters it may still add

        Body(String name, boolean top, int budget) {
            this.name = name;
            this.top = top;
            this.budget = budget;
        }
    }

    /** An inner fn that f may call or handle. */
    private record Callee(String name, List<Param> params, Val result) {}

    private static final double MAX_MAG = 1e4;
    private static final double[] EPS = {0.05, 0.1, 0.5};

    private final SplittableRandom r;
    private final DType dt;
    private final String ty;
    private final Map<String, Tensor> inputs = new LinkedHashMap<>();
    private final SplittableRandom values;      // input payloads, drawn apart from the structure
    private int fresh;
    private Class<? extends Refusal> refusal;

    private ProgramGen(long seed, DType dt) {
        this.r = new SplittableRandom(seed);
        this.values = new SplittableRandom(seed ^ 0x5DEECE66DL);
        this.dt = dt;
        this.ty = dt.spelling();
    }

    /** The program of {@code seed} in {@code dt} (F32 or F64). */
    public static Generated generate(long seed, DType dt) { return new ProgramGen(seed, dt).program(); }

    // ---- the program ----------------------------------------------------------------------------

    private Generated program() {
        StringBuilder src = new StringBuilder();
        if (r.nextInt(8) == 0) src.append("// generated\n");
        List<Callee> callees = new ArrayList<>();
        int inner = r.nextInt(3) == 0 ? 0 : 1 + (r.nextInt(3) == 0 ? 1 : 0);
        for (int i = 0; i < inner; i++) {
            Body h = new Body(name("h"), false, 3);
            lets(h, 2 + r.nextInt(3), callees, false);
            Val res = finish(h, false);
            src.append(fnText(h, res));
            callees.add(new Callee(h.name, h.params, res));
        }
        Body f = new Body("f", true, 6);
        lets(f, 2 + r.nextInt(5), callees, true);
        Val res = finish(f, true);
        src.append(fnText(f, res));
        List<String> args = new ArrayList<>(), floats = new ArrayList<>();
        for (Param p : f.params) {
            src.append("let ").append(p.val.name).append(" = ").append(type(p.val)).append(" in\n");
            args.add(p.val.name);
            if (p.val.kind == Kind.FLOAT) floats.add(p.val.name);
            inputs.put(p.val.name, payload(p));
        }
        Mode mode = refusal == null && r.nextInt(5) == 0 ? Mode.FORWARD : Mode.REVERSE;
        List<String> tangents = new ArrayList<>();
        String head = src.toString();
        String call = "f(" + String.join(", ", args) + ")";
        String last;
        if (mode == Mode.FORWARD) {
            StringBuilder t = new StringBuilder();
            for (Param p : f.params) {
                if (p.val.kind != Kind.FLOAT) continue;
                String n = "dot_" + p.val.name;
                t.append("let ").append(n).append(" = ").append(type(p.val)).append(" in\n");
                tangents.add(n);
                inputs.put(n, floats(p.val.shape, -1, 1));
            }
            head += t;
            last = "handle " + call + " with forwardMode(" + String.join(", ", tangents) + ")\n";
        } else {
            last = "handle " + call + " with reverseMode\n";
        }
        return new Generated(head + last, head + call + "\n", inputs, floats, tangents, dt, mode, refusal);
    }

    private String fnText(Body b, Val res) {
        StringBuilder s = new StringBuilder("let ").append(b.name).append(" = fn(");
        for (int i = 0; i < b.params.size(); i++) {
            Val p = b.params.get(i).val;
            s.append(i > 0 ? ", " : "").append(p.name).append(": ").append(type(p));
        }
        s.append(") -> ").append(type(res)).append(" {\n").append(b.lets).append("  ").append(res.name).append("\n} in\n");
        return s.toString();
    }

    /** The last lets of a fn: the values not used yet, weighted and summed, so every let reaches the result. */
    private Val finish(Body b, boolean top) {
        if (top && refusal == null && r.nextInt(25) == 0) {     // a discrete result: refused by name
            Val x = pickFloat(b, v -> v.rank() >= 1);
            if (x == null) x = param(b, shape(1, 3), -1, 1);
            if (x != null) {
                refusal = Refusal.NotDifferentiated.class;
                int axis = r.nextInt(x.rank());
                return let(b, x.name + ".argmax(axis=" + axis(axis, x.rank()) + ")", x.shape.drop(axis), Kind.INDEX, 0, 0,
                        x.shape.dim(axis), false, x);
            }
        }
        List<Val> leaves = new ArrayList<>();
        for (Val v : b.pool) if (v.kind == Kind.FLOAT && v.uses == 0 && v.active && !b.mustReach.contains(v)) leaves.add(v);
        if (leaves.isEmpty() && b.mustReach.isEmpty()) {
            Val x = pickFloat(b, v -> v.active);
            if (x == null) x = b.params.stream().map(Param::val).filter(v -> v.kind == Kind.FLOAT).findFirst().orElseThrow(
                    () -> new IllegalStateException("fn " + b.name + " has no floating parameter"));
            leaves.add(x);
        }
        while (leaves.size() > 3) leaves.remove(r.nextInt(leaves.size()));
        leaves.addAll(b.mustReach);
        if (!top && leaves.size() == 1 && b.mustReach.isEmpty() && r.nextBoolean()) return leaves.getFirst();   // a tensor result
        Val acc = null;
        for (Val leaf : leaves) {
            Val x = top || r.nextBoolean() ? product(b, leaf, weight(b, leaf.shape)) : leaf;
            while (x.rank() > 0) x = reduce(b, x);
            acc = acc == null ? x : product(b, "+", acc, x, acc.lo + x.lo, acc.hi + x.hi);
        }
        if (top && refusal == null && r.nextInt(14) == 0) {    // a method chain that receives a cotangent
            refusal = Refusal.NotAnAdSpine.class;
            return unchecked(b, acc.name + ".tanh().exp()", acc.shape, 0, 3, true, acc);
        }
        return acc;
    }

    /** A weight for a leaf of the result, so the seed reaching it is not uniform: a parameter, or a literal. */
    private Val weight(Body b, Shape s) {
        Val w = param(b, s, -1, 1);
        if (w != null) return w;
        StringBuilder p = new StringBuilder();
        for (int i = 0; i < s.vol(); i++) p.append(i > 0 ? ", " : "").append(Math.round((values.nextDouble() * 2 - 1) * 64) / 64.0);
        return unchecked(b, tensor(s) + " payload { " + p + " }", s, -1, 1, false);
    }

    private Val product(Body b, Val x, Val y) {
        double[] q = products(x.lo, x.hi, y.lo, y.hi);
        return product(b, "*", x, y, q[0], q[1]);
    }

    private Val product(Body b, String op, Val x, Val y, double lo, double hi) {
        return unchecked(b, x.name + " " + op + " " + y.name, x.shape, lo, hi, x.active || y.active, x, y);
    }

    private Val reduce(Body b, Val x) {
        int axis = r.nextInt(x.rank());
        long n = x.shape.dim(axis);
        return unchecked(b, x.name + ".sum(axis=" + axis(axis, x.rank()) + ")", x.shape.drop(axis),
                n * Math.min(0, x.lo), n * Math.max(0, x.hi), x.active, x);
    }

    /** A floating let whose interval may be wide: the result's reductions, which nothing transforms further. */
    private Val unchecked(Body b, String expr, Shape s, double lo, double hi, boolean active, Val... operands) {
        for (Val o : operands) o.uses++;
        Val v = new Val(name("v"), s, Kind.FLOAT, lo, hi, 0, active);
        b.lets.append("  let ").append(v.name).append(" = ").append(expr).append(" in\n");
        b.pool.add(v);
        return v;
    }

    // ---- lets -----------------------------------------------------------------------------------

    private void lets(Body b, int n, List<Callee> callees, boolean differentiated) {
        param(b, shape(1, 2), -1, 1);
        for (int i = 0, tries = 0; i < n && tries < 200; tries++) if (step(b, callees, differentiated)) i++;
    }

    /** One let of a randomly chosen kind; false when the pool offers nothing it applies to. */
    private boolean step(Body b, List<Callee> callees, boolean differentiated) {
        return switch (r.nextInt(30)) {
            case 0, 1, 2 -> unary(b);
            case 3, 4, 5 -> binaryOp(b);
            case 6 -> matmul(b);
            case 7 -> reshape(b);
            case 8 -> transpose(b);
            case 9 -> broadcast(b);
            case 10 -> sum(b);
            case 11 -> softmax(b);
            case 12 -> norm(b);
            case 13 -> rope(b, differentiated);
            case 14 -> attention(b);
            case 15 -> takeAlongAxis(b);
            case 16 -> gather(b);
            case 17 -> setRows(b);
            case 18 -> select(b);
            case 19 -> constant(b);
            case 20 -> scatter(b);
            case 21 -> attentionInternal(b);
            case 22, 23 -> call(b, callees);
            case 24, 25 -> handle(b, callees);
            case 26 -> argmaxPick(b);
            case 27 -> slices(b);
            case 28 -> random(b);
            default -> unary(b) || binaryOp(b);
        };
    }

    private boolean unary(Body b) {
        Val x = pickFloat(b, v -> true);
        if (x == null) return false;
        int op = r.nextInt(13);
        if (op >= 2 && op <= 5 && x.lo < 0.1 && r.nextBoolean()) x = positive(b, x);
        double lo = x.lo, hi = x.hi;
        return switch (op) {
            case 0 -> let(b, "-" + x.name, x.shape, Kind.FLOAT, -hi, -lo, 0, x.active, x) != null;
            case 1 -> hi <= 4 && let(b, x.name + ".exp()", x.shape, Kind.FLOAT, Math.exp(lo), Math.exp(hi), 0, x.active, x) != null;
            case 2 -> lo >= 0.1 && let(b, x.name + ".log()", x.shape, Kind.FLOAT, Math.log(lo), Math.log(hi), 0, x.active, x) != null;
            case 3 -> lo >= 0.1 && let(b, x.name + ".sqrt()", x.shape, Kind.FLOAT, Math.sqrt(lo), Math.sqrt(hi), 0, x.active, x) != null;
            case 4 -> lo >= 0.1 && let(b, x.name + ".rsqrt()", x.shape, Kind.FLOAT, 1 / Math.sqrt(hi), 1 / Math.sqrt(lo), 0, x.active, x) != null;
            case 5 -> lo >= 0.1 && let(b, x.name + ".reciprocal()", x.shape, Kind.FLOAT, 1 / hi, 1 / lo, 0, x.active, x) != null;
            case 6 -> let(b, x.name + ".tanh()", x.shape, Kind.FLOAT, Math.tanh(lo), Math.tanh(hi), 0, x.active, x) != null;
            case 7 -> let(b, x.name + ".sigmoid()", x.shape, Kind.FLOAT, sigmoid(lo), sigmoid(hi), 0, x.active, x) != null;
            case 8 -> let(b, x.name + ".silu()", x.shape, Kind.FLOAT, lo < 0 ? -0.28 : lo * sigmoid(lo), Math.max(hi, 0), 0, x.active, x) != null;
            case 9 -> let(b, x.name + ".gelu()", x.shape, Kind.FLOAT, lo < 0 ? -0.18 : 0, Math.max(hi, 0), 0, x.active, x) != null;
            case 10 -> let(b, x.name + ".relu()", x.shape, Kind.FLOAT, Math.max(lo, 0), Math.max(hi, 0), 0, x.active, x) != null;
            case 11 -> {
                double cap = 0.5 + r.nextInt(6) * 0.5;
                yield let(b, x.name + ".softcap(cap=" + cap + ")", x.shape, Kind.FLOAT, cap * Math.tanh(lo / cap),
                        cap * Math.tanh(hi / cap), 0, x.active, x) != null;
            }
            default -> positive(b, x) != null;
        };
    }

    /** A positive value made from x, for the ops that need one: exp(x) or σ(x), plus a fill ≥ 0.1. */
    private Val positive(Body b, Val x) {
        Val e = x.hi <= 4 ? let(b, x.name + ".exp()", x.shape, Kind.FLOAT, Math.exp(x.lo), Math.exp(x.hi), 0, x.active, x)
                : let(b, x.name + ".sigmoid()", x.shape, Kind.FLOAT, sigmoid(x.lo), sigmoid(x.hi), 0, x.active, x);
        Val c = fill(b, e.shape, 0.1 + r.nextInt(5) * 0.25);
        return binary(b, "+", e, c, e.lo + c.lo, e.hi + c.hi);
    }

    private boolean binaryOp(Body b) {
        Val x = pickFloat(b, v -> true);
        if (x == null) return false;
        int op = r.nextInt(7);
        Val y = op == 3 ? sameShape(b, x, v -> v.lo >= 0.1, 0.5, 1.5) : sameShape(b, x, v -> true, -1, 1);
        if (y == null) return false;
        return switch (op) {
            case 0 -> binary(b, "+", x, y, x.lo + y.lo, x.hi + y.hi) != null;
            case 1 -> binary(b, "-", x, y, x.lo - y.hi, x.hi - y.lo) != null;
            case 2 -> mul(b, x, y) != null;
            case 3 -> {
                double[] q = products(x.lo, x.hi, 1 / y.hi, 1 / y.lo);
                yield binary(b, "/", x, y, q[0], q[1]) != null;
            }
            case 4 -> let(b, x.name + ".maximum(" + y.name + ")", x.shape, Kind.FLOAT, Math.max(x.lo, y.lo),
                    Math.max(x.hi, y.hi), 0, x.active || y.active, x, y) != null;
            case 5 -> {
                double[] q = products(x.lo < 0 ? -0.28 : 0, Math.max(x.hi, 0), y.lo, y.hi);
                yield let(b, x.name + ".swiglu(" + y.name + ")", x.shape, Kind.FLOAT, q[0], q[1], 0, x.active || y.active, x, y) != null;
            }
            default -> binary(b, "+", x, y, x.lo + y.lo, x.hi + y.hi) != null;
        };
    }

    private boolean matmul(Body b) {
        Val a = pickFloat(b, v -> v.rank() >= 2);
        if (a == null) {
            if (r.nextBoolean()) return false;
            a = param(b, shape(2, 3), -1, 1);
            if (a == null) return false;
        }
        int rk = a.rank();
        long k = a.last();
        long n = 1 + r.nextInt(3);
        Shape bs = a.shape.prefix(rk - 2).concat(k, n);
        Val c = ofShape(b, bs, v -> true, -1, 1);
        if (c == null) return false;
        double[] q = products(a.lo, a.hi, c.lo, c.hi);
        Shape out = a.shape.prefix(rk - 2).concat(a.shape.dim(rk - 2), n);
        return binary(b, "@", a, c, k * q[0], k * q[1], out) != null;
    }

    private boolean reshape(Body b) {
        Val x = pickAny(b, v -> v.kind != Kind.MASK);
        if (x == null) return false;
        Shape to = factor(x.shape.vol());
        return let(b, x.name + ".reshape(" + to + ")", to, x.kind, x.lo, x.hi, x.bound, x.active, x) != null;
    }

    private boolean transpose(Body b) {
        Val x = pickAny(b, v -> v.rank() >= 1 && v.kind != Kind.MASK);
        if (x == null) return false;
        int rk = x.rank();
        int[] perm = new int[rk];
        for (int i = 0; i < rk; i++) perm[i] = i;
        for (int i = rk - 1; i > 0; i--) { int j = r.nextInt(i + 1); int t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
        long[] d = new long[rk];
        StringBuilder p = new StringBuilder("[");
        for (int i = 0; i < rk; i++) {
            d[i] = x.shape.dim(perm[i]);
            p.append(i > 0 ? ", " : "").append(axis(perm[i], rk));
        }
        return let(b, x.name + ".transpose(" + p + "])", new Shape(d), x.kind, x.lo, x.hi, x.bound, x.active, x) != null;
    }

    private boolean broadcast(Body b) {
        Val x = pickAny(b, v -> v.rank() <= 3 && v.kind != Kind.MASK);
        if (x == null) return false;
        int lead = r.nextInt(3) == 0 ? 1 : 0;
        long[] to = new long[x.rank() + lead];
        for (int i = 0; i < lead; i++) to[i] = 1 + r.nextInt(3);
        for (int i = 0; i < x.rank(); i++) {
            long d = x.shape.dim(i);
            to[lead + i] = d == 1 && r.nextBoolean() ? 2 + r.nextInt(2) : d;
        }
        Shape s = new Shape(to);
        return let(b, x.name + ".broadcast(" + s + ")", s, x.kind, x.lo, x.hi, x.bound, x.active, x) != null;
    }

    private boolean sum(Body b) {
        Val x = pickAny(b, v -> v.rank() >= 1 && v.kind == Kind.FLOAT);
        if (x == null) return false;
        int axis = r.nextInt(x.rank());
        boolean keep = r.nextBoolean();
        long n = x.shape.dim(axis);
        Shape out = keep ? x.shape.with(axis, 1) : x.shape.drop(axis);
        String kw = keep ? ", keepdims=true" : r.nextInt(4) == 0 ? ", keepdims=false" : "";
        return let(b, x.name + ".sum(axis=" + axis(axis, x.rank()) + kw + ")", out, Kind.FLOAT,
                n * Math.min(x.lo, 0), n * Math.max(x.hi, 0), 0, x.active, x) != null;
    }

    private boolean softmax(Body b) {
        Val x = pickFloat(b, v -> v.rank() >= 1);
        if (x == null) return false;
        int axis = r.nextInt(x.rank());
        long n = x.shape.dim(axis);
        if (r.nextBoolean())
            return let(b, x.name + ".softmax(axis=" + axis(axis, x.rank()) + ")", x.shape, Kind.FLOAT, 0, 1, 0, x.active, x) != null;
        return let(b, x.name + ".log_softmax(axis=" + axis(axis, x.rank()) + ")", x.shape, Kind.FLOAT,
                -(x.hi - x.lo) - Math.log(n) - 1e-9, 0, 0, x.active, x) != null;
    }

    private boolean norm(Body b) {
        Val x = pickFloat(b, v -> v.rank() >= 1);
        if (x == null) return false;
        long d = x.last();
        double eps = EPS[r.nextInt(EPS.length)];
        String e = ", eps=" + eps + ")";
        int kind = r.nextInt(3);
        if (kind == 2) return let(b, x.name + ".l2norm(eps=" + eps + ")", x.shape, Kind.FLOAT, -1, 1, 0, x.active, x) != null;
        Val w = r.nextInt(3) == 0 ? null : ofShape(b, Shape.of(d), v -> v.mag() <= 10, 0.5, 1.5);
        double wm = w == null ? 1 : w.mag(), s = Math.sqrt(d) * wm;
        if (kind == 0) {
            Val res = w != null && r.nextBoolean() ? sameShape(b, x, v -> true, -1, 1) : null;
            String args = w == null ? "" : w.name + (res == null ? "" : ", " + res.name) + ", ";
            String call = x.name + ".rmsnorm(" + args + (w == null ? e.substring(2) : e.substring(2));
            return let(b, call, x.shape, Kind.FLOAT, -s, s, 0, x.active || w != null && w.active || res != null && res.active,
                    x, w, res) != null;
        }
        Val bias = w != null && r.nextBoolean() ? ofShape(b, Shape.of(d), v -> true, -1, 1) : null;
        double bm = bias == null ? 0 : bias.mag();
        String args = w == null ? "" : w.name + (bias == null ? "" : ", " + bias.name) + ", ";
        return let(b, x.name + ".layernorm(" + args + e.substring(2), x.shape, Kind.FLOAT, -s - bm, s + bm, 0,
                x.active || w != null && w.active || bias != null && bias.active, x, w, bias) != null;
    }

    private boolean rope(Body b, boolean differentiated) {
        int heads = 1 + r.nextInt(2), hd = 2 * (1 + r.nextInt(2));
        long w = (long) heads * hd;
        Val x = pickFloat(b, v -> v.rank() >= 2 && v.last() == w);
        if (x == null) x = param(b, shape(0, 1).concat(1 + r.nextInt(3), w), -1, 1);
        if (x == null) return false;
        long t = x.shape.dim(x.rank() - 2);
        int rot = 2 * (1 + r.nextInt(hd / 2)), start = r.nextInt(3);
        long l = start + t + r.nextInt(2);
        Shape tab = Shape.of(l, rot / 2);
        String cos, sin;
        boolean planted = differentiated && b.top && refusal == null && x.active && r.nextInt(6) == 0;
        if (planted) {                                          // a table computed from a parameter: refused by name
            Val p = param(b, tab, -1, 1);
            if (p == null) return false;
            refusal = Refusal.NotDifferentiated.class;
            cos = unchecked(b, p.name + ".tanh()", tab, -1, 1, true, p).name;
            sin = unchecked(b, p.name + ".sigmoid()", tab, 0, 1, true, p).name;
        } else {
            cos = name("cos");
            sin = name("sin");
            double[] cs = new double[(int) tab.vol()], sn = new double[cs.length];
            for (int i = 0; i < cs.length; i++) {
                double th = -3 + 6 * values.nextDouble();
                cs[i] = StrictMath.cos(th);
                sn[i] = StrictMath.sin(th);
            }
            TensorType tt = new TensorType(dt, tab, kina.ir.Placement.HOST);
            inputs.put(cos, Tensor.ofFloats(tt, cs));
            inputs.put(sin, Tensor.ofFloats(tt, sn));
            b.lets.append("  let ").append(cos).append(" = ").append(tt).append(" in\n");
            b.lets.append("  let ").append(sin).append(" = ").append(tt).append(" in\n");
        }
        String kw = "heads=" + heads + (rot == hd && r.nextBoolean() ? "" : ", rotary=" + rot) + (start > 0 || r.nextBoolean() ? ", start=" + start : "");
        double m = Math.sqrt(2) * x.mag();
        Val y = let(b, x.name + ".rope(" + cos + ", " + sin + ", " + kw + ")", x.shape, Kind.FLOAT, -m, m, 0, x.active, x);
        if (planted) {
            if (y == null) y = unchecked(b, x.name + ".rope(" + cos + ", " + sin + ", " + kw + ")", x.shape, -m, m, true, x);
            b.mustReach.add(y);
        }
        return y != null;
    }

    /** Heads, kv heads and the mask options of one attention, written as its keywords. */
    private record Attn(int heads, int kv, long hd, String kw) {}

    private Attn attnOpts(long width) {
        List<int[]> hs = new ArrayList<>();
        for (int h = 1; h <= 4; h++) if (width % h == 0) for (int kv = 1; kv <= h; kv++) if (h % kv == 0) hs.add(new int[] {h, kv});
        int[] hk = hs.get(r.nextInt(hs.size()));
        StringBuilder kw = new StringBuilder("heads=" + hk[0] + ", kv_heads=" + hk[1]);
        if (r.nextBoolean()) kw.append(", scale=").append(0.25 + r.nextInt(4) * 0.25);
        if (r.nextInt(3) == 0) kw.append(", softcap=").append(1.0 + r.nextInt(3));
        switch (r.nextInt(4)) {
            case 0 -> kw.append(", window=").append(1 + r.nextInt(3));
            case 1 -> kw.append(", chunk=").append(1 + r.nextInt(3));
            default -> { }
        }
        if (r.nextInt(3) == 0) kw.append(", start=").append(r.nextInt(3));
        return new Attn(hk[0], hk[1], width / hk[0], kw.toString());
    }

    private boolean attention(Body b) {
        Val q = pickFloat(b, v -> v.rank() >= 2 && v.rank() <= 3 && v.mag() <= 50);
        if (q == null) q = param(b, shape(0, 1).concat(1 + r.nextInt(3), 1 + r.nextInt(4)), -1, 1);
        if (q == null) return false;
        Attn o = attnOpts(q.last());
        Shape ks = q.shape.prefix(q.rank() - 2).concat(1 + r.nextInt(4), o.kv * o.hd);
        Val k = ofShape(b, ks, v -> v.mag() <= 50, -1, 1), v = ofShape(b, ks, x -> true, -1, 1);
        if (k == null || v == null) return false;
        Val sinks = r.nextInt(3) == 0 ? ofShape(b, Shape.of(o.heads), x -> x.mag() <= 10, -1, 1) : null;
        String call = q.name + ".attention(" + k.name + ", " + v.name + (sinks == null ? "" : ", " + sinks.name) + ", " + o.kw + ")";
        return let(b, call, q.shape, Kind.FLOAT, Math.min(v.lo, 0), Math.max(v.hi, 0), 0,
                q.active || k.active || v.active || sinks != null && sinks.active, q, k, v, sinks) != null;
    }

    /** The IR-internal adjoint forms the parser reads back: attention_lse and the three products. */
    private boolean attentionInternal(Body b) {
        Val q = pickFloat(b, v -> v.rank() >= 2 && v.rank() <= 3 && v.mag() <= 10);
        if (q == null) return false;
        Attn o = attnOpts(q.last());
        Shape lead = q.shape.prefix(q.rank() - 2);
        long t = q.shape.dim(q.rank() - 2), l = 1 + r.nextInt(4);
        Shape ks = lead.concat(l, o.kv * o.hd);
        Val k = ofShape(b, ks, v -> v.mag() <= 10, -1, 1);
        if (k == null) return false;
        switch (r.nextInt(4)) {
            case 0 -> {
                // with a sink every row's lse is finite (a row may attend no position)
                Val sinks = ofShape(b, Shape.of(o.heads), x -> x.mag() <= 10, -1, 1);
                if (sinks == null) return false;
                String call = "%attention_lse(" + q.name + ", " + k.name + ", " + sinks.name + ", " + o.kw + ")";
                double m = o.hd * q.mag() * k.mag() + sinks.mag() + Math.log(l + 1.0);
                return let(b, call, lead.concat(t, o.heads), Kind.FLOAT, -m, m, 0,
                        q.active || k.active || sinks.active, q, k, sinks) != null;
            }
            case 1 -> {
                double m = o.hd * q.mag() * k.mag();
                return let(b, "%attention_qk(" + q.name + ", " + k.name + ", " + o.kw + ")", lead.concat(o.heads, t, l),
                        Kind.FLOAT, -m, m, 0, q.active || k.active, q, k) != null;
            }
            case 2 -> {
                Val p = ofShape(b, lead.concat(o.heads, t, l), v -> v.mag() <= 10, -1, 1);
                if (p == null) return false;
                double m = l * p.mag() * k.mag();
                return let(b, "%attention_pk(" + p.name + ", " + k.name + ", " + o.kw + ")", q.shape, Kind.FLOAT, -m, m, 0,
                        p.active || k.active, p, k) != null;
            }
            default -> {
                Val p = ofShape(b, lead.concat(o.heads, t, l), v -> v.mag() <= 10, -1, 1);
                if (p == null) return false;
                double m = o.heads * t * p.mag() * q.mag();
                return let(b, "%attention_pq(" + p.name + ", " + q.name + ", " + o.kw + ")", ks, Kind.FLOAT, -m, m, 0,
                        p.active || q.active, p, q) != null;
            }
        }
    }

    private boolean takeAlongAxis(Body b) {
        Val x = pickFloat(b, v -> v.rank() >= 1);
        if (x == null) return false;
        int axis = r.nextInt(x.rank());
        Val idx = indices(b, x.shape.drop(axis), x.shape.dim(axis));
        if (idx == null) return false;
        return let(b, x.name + ".take_along_axis(" + idxText(idx, x.shape.dim(axis)) + ", axis=" + axis(axis, x.rank()) + ")",
                x.shape.drop(axis), Kind.FLOAT, x.lo, x.hi, 0, x.active, x, idx) != null;
    }

    /** take_along_axis of argmax: the max along an axis, whose gradient is the arg-max mask. */
    private boolean argmaxPick(Body b) {
        Val x = pickFloat(b, v -> v.rank() >= 1);
        if (x == null) return false;
        int axis = r.nextInt(x.rank());
        Val am = let(b, x.name + ".argmax(axis=" + axis(axis, x.rank()) + ")", x.shape.drop(axis), Kind.INDEX, 0, 0,
                x.shape.dim(axis), false, x);
        return let(b, x.name + ".take_along_axis(" + am.name + ", axis=" + axis(axis, x.rank()) + ")", x.shape.drop(axis),
                Kind.FLOAT, x.lo, x.hi, 0, x.active, x, am) != null;
    }

    private boolean gather(Body b) {
        Val v = pickFloat(b, x -> x.rank() == 2);
        if (v == null) v = param(b, shape(2, 2), -1, 1);
        if (v == null) return false;
        long rows = v.shape.dim(0);
        Val ids = indices(b, shape(1, 2), rows);
        if (ids == null) return false;
        String method = ids.rank() == 1 && ids.shape.dim(0) == 1 && r.nextBoolean() ? ".row(" : ".gather(";
        return let(b, v.name + method + idxText(ids, rows) + ")", ids.shape.concat(v.shape.dim(1)), Kind.FLOAT,
                v.lo, v.hi, 0, v.active, v, ids) != null;
    }

    private boolean setRows(Body b) {
        Val t = pickFloat(b, x -> x.rank() == 2);
        if (t == null) return false;
        long v = t.shape.dim(0), d = t.shape.dim(1);
        int n = 1 + r.nextInt((int) Math.min(v, 3));
        Val ids = distinctIds(b, n, v);
        Val rows = ofShape(b, Shape.of(n, d), x -> true, -1, 1);
        if (ids == null || rows == null) return false;
        return let(b, t.name + ".set_rows(" + ids.name + ", " + rows.name + ")", t.shape, Kind.FLOAT,
                Math.min(t.lo, rows.lo), Math.max(t.hi, rows.hi), 0, t.active || rows.active, t, ids, rows) != null;
    }

    private boolean select(Body b) {
        Val a = pickFloat(b, v -> true);
        if (a == null) return false;
        Val c = sameShape(b, a, v -> true, -1, 1), d = sameShape(b, a, v -> true, -1, 1), e = sameShape(b, a, v -> true, -1, 1);
        if (c == null || d == null || e == null) return false;
        String mask;
        if (r.nextBoolean()) mask = c.name + ".greater(" + d.name + ")";           // nested: a mask receives no cotangent
        else mask = let(b, c.name + ".greater(" + d.name + ")", a.shape, Kind.MASK, 0, 0, 2, false, c, d).name;
        c.uses++;
        d.uses++;
        return let(b, "(" + mask + ").select(" + a.name + ", " + e.name + ")", a.shape, Kind.FLOAT, Math.min(a.lo, e.lo),
                Math.max(a.hi, e.hi), 0, a.active || e.active, a, e) != null;
    }

    private boolean constant(Body b) {
        Shape s = shape(0, 3);
        switch (r.nextInt(4)) {
            case 0 -> fill(b, s, (r.nextInt(9) - 4) * 0.25);
            case 1 -> let(b, "ones(" + tensor(s) + ")", s, Kind.FLOAT, 1, 1, 0, false);
            case 2 -> let(b, "zeros(" + tensor(s) + ")", s, Kind.FLOAT, 0, 0, 0, false);
            default -> {
                int n = (int) s.vol();
                StringBuilder p = new StringBuilder();
                double lo = 0, hi = 0;
                for (int i = 0; i < n; i++) {
                    double x = Math.round((values.nextDouble() * 2 - 1) * 64) / 64.0;
                    lo = Math.min(lo, x);
                    hi = Math.max(hi, x);
                    p.append(i > 0 ? ", " : "").append(x);
                }
                let(b, tensor(s) + " payload { " + p + " }", s, Kind.FLOAT, lo, hi, 0, false);
            }
        }
        return true;
    }

    /** A slice, pad or concat of a floating or index value along an axis (an index pad's zeros are valid indices). */
    private boolean slices(Body b) {
        Val x = pickAny(b, v -> v.rank() >= 1 && v.kind != Kind.MASK);
        if (x == null) return false;
        int axis = r.nextInt(x.rank());
        long d = x.shape.dim(axis);
        String ax = "axis=" + axis(axis, x.rank());
        switch (r.nextInt(3)) {
            case 0 -> {
                long size = 1 + r.nextInt((int) d), start = r.nextInt((int) (d - size) + 1);
                return let(b, x.name + ".slice(" + ax + ", start=" + start + ", size=" + size + ")", x.shape.with(axis, size),
                        x.kind, x.lo, x.hi, x.bound, x.active, x) != null;
            }
            case 1 -> {
                long before = r.nextInt(3), after = r.nextInt(3);
                String kw = (before > 0 || r.nextBoolean() ? ", before=" + before : "") + (after > 0 || r.nextBoolean() ? ", after=" + after : "");
                return let(b, x.name + ".pad(" + ax + kw + ")", x.shape.with(axis, d + before + after), x.kind,
                        Math.min(x.lo, 0), Math.max(x.hi, 0), x.bound, x.active, x) != null;
            }
            default -> {
                Shape ys = x.shape.with(axis, 1 + r.nextInt(3));
                Val y = x.kind == Kind.FLOAT ? ofShape(b, ys, v -> true, -1, 1) : indices(b, ys, x.bound);
                if (y == null || y.kind != x.kind) return false;
                return let(b, x.name + ".concat(" + y.name + ", " + ax + ")", x.shape.with(axis, d + ys.dim(axis)), x.kind,
                        Math.min(x.lo, y.lo), Math.max(x.hi, y.hi), Math.min(x.bound, y.bound), x.active || y.active, x, y) != null;
            }
        }
    }

    /** A uniform or normal draw from a key (any I64 [1] or [2]), or a dropout of a floating value. */
    private boolean random(Body b) {
        Val key = indices(b, Shape.of(1 + r.nextInt(2)), 1 << 20);
        if (key == null) return false;
        int kind = r.nextInt(3);
        if (kind < 2) {
            Shape s = shape(0, 3);
            String call = key.name + (kind == 0 ? ".random_uniform(" : ".random_normal(") + tensor(s) + ")";
            return let(b, call, s, Kind.FLOAT, kind == 0 ? 0 : -8.6, kind == 0 ? 1 : 8.6, 0, false, key) != null;
        }
        Val x = pickFloat(b, v -> true);
        if (x == null) return false;
        double p = new double[] {0, 0.1, 0.25, 0.5}[r.nextInt(4)], s = 1 / (1 - p);
        return let(b, x.name + ".dropout(" + key.name + ", p=" + p + ")", x.shape, Kind.FLOAT, Math.min(0, x.lo * s),
                Math.max(0, x.hi * s), 0, x.active, x, key) != null;
    }

    /** The IR-internal scatters, written as %scatter_add / %scatter_along_axis. */
    private boolean scatter(Body b) {
        if (r.nextBoolean()) {
            Val u = pickFloat(b, v -> v.rank() >= 2 && v.rank() <= 3);
            if (u == null) return false;
            Shape sigma = u.shape.prefix(u.rank() - 1);
            long rows = 1 + r.nextInt(4);
            Val ids = indices(b, sigma, rows);
            if (ids == null) return false;
            Shape dest = Shape.of(rows, u.last());
            double m = sigma.vol() * u.mag();
            return let(b, "%scatter_add(" + u.name + ", " + idxText(ids, rows) + ", " + tensor(dest) + ")", dest, Kind.FLOAT,
                    -m, m, 0, u.active, u, ids) != null;
        }
        Val u = pickFloat(b, v -> v.rank() <= 2);
        if (u == null) return false;
        int axis = r.nextInt(u.rank() + 1);
        long c = 1 + r.nextInt(3);
        Shape dest = u.shape.insert(axis, c);
        Val idx = indices(b, u.shape, c);
        if (idx == null) return false;
        return let(b, "%scatter_along_axis(" + u.name + ", " + idxText(idx, c) + ", " + tensor(dest) + ", axis="
                + axis(axis, dest.rank()) + ")", dest, Kind.FLOAT, Math.min(u.lo, 0), Math.max(u.hi, 0), 0, u.active, u, idx) != null;
    }

    /** A call of an inner fn, its arguments within the intervals it was written for. */
    private boolean call(Body b, List<Callee> callees) {
        if (callees.isEmpty()) return false;
        Callee h = callees.get(r.nextInt(callees.size()));
        List<Val> args = arguments(b, h);
        if (args == null) return false;
        boolean active = args.stream().anyMatch(a -> a.active);
        return let(b, h.name + "(" + names(args) + ")", h.result.shape, h.result.kind, h.result.lo, h.result.hi, h.result.bound,
                active, args.toArray(new Val[0])) != null;
    }

    /** A reverse- or forward-mode handle of an inner fn: its result and cotangents (or J·t) join the pool. */
    private boolean handle(Body b, List<Callee> callees) {
        List<Callee> floating = callees.stream().filter(c -> c.result.kind == Kind.FLOAT).toList();
        if (floating.isEmpty()) return false;
        Callee h = floating.get(r.nextInt(floating.size()));
        List<Val> args = arguments(b, h);
        if (args == null) return false;
        List<Val> fl = new ArrayList<>();
        for (int i = 0; i < h.params.size(); i++) if (h.params.get(i).val.kind == Kind.FLOAT) fl.add(args.get(i));
        boolean active = args.stream().anyMatch(a -> a.active);
        for (Val a : args) a.uses++;
        double g = MAX_MAG / 10;
        if (r.nextInt(3) == 0 && !fl.isEmpty()) {
            List<Val> ts = new ArrayList<>();
            for (Val a : fl) {
                Val t = ofShape(b, a.shape, v -> v.mag() <= 2, -1, 1);
                if (t == null) return false;
                t.uses++;
                ts.add(t);
            }
            String rn = name("r"), jn = name("jt");
            b.lets.append("  let (").append(rn).append(", ").append(jn).append(") = handle ").append(h.name).append('(')
                    .append(names(args)).append(") with forwardMode(").append(names(ts)).append(") in\n");
            b.pool.add(new Val(rn, h.result.shape, Kind.FLOAT, h.result.lo, h.result.hi, 0, active));
            b.pool.add(new Val(jn, h.result.shape, Kind.FLOAT, -g, g, 0, active || ts.stream().anyMatch(t -> t.active)));
            return true;
        }
        String rn = name("r");
        List<String> binders = new ArrayList<>(List.of(rn));
        List<Val> grads = new ArrayList<>();
        for (Val a : fl) {
            String gn = name("g");
            binders.add(gn);
            grads.add(new Val(gn, a.shape, Kind.FLOAT, -g, g, 0, active));
        }
        String pat = binders.size() == 1 ? rn : "(" + String.join(", ", binders) + ")";
        b.lets.append("  let ").append(pat).append(" = handle ").append(h.name).append('(').append(names(args))
                .append(") with reverseMode in\n");
        b.pool.add(new Val(rn, h.result.shape, Kind.FLOAT, h.result.lo, h.result.hi, 0, active));
        b.pool.addAll(grads);
        return true;
    }

    private List<Val> arguments(Body b, Callee h) {
        List<Val> args = new ArrayList<>();
        for (Param p : h.params) {
            Val want = p.val;
            Val a;
            if (want.kind == Kind.FLOAT)
                a = ofShape(b, want.shape, v -> v.lo >= want.lo && v.hi <= want.hi, want.lo, want.hi);
            else if (p.distinct) a = distinctIds(b, (int) want.shape.dim(0), want.bound);
            else a = indices(b, want.shape, want.bound);
            if (a == null || a.kind != want.kind) return null;
            args.add(a);
        }
        return args;
    }

    // ---- operands -------------------------------------------------------------------------------

    /** A floating value satisfying p, preferring those not used yet; null when there is none. */
    private Val pickFloat(Body b, Predicate<Val> p) { return pick(b, v -> v.kind == Kind.FLOAT && v.mag() <= MAX_MAG && p.test(v)); }

    private Val pickAny(Body b, Predicate<Val> p) { return pick(b, p); }

    private Val pick(Body b, Predicate<Val> p) {
        List<Val> fresh = new ArrayList<>(), used = new ArrayList<>();
        for (Val v : b.pool) if (p.test(v)) (v.uses == 0 ? fresh : used).add(v);
        if (!fresh.isEmpty() && (used.isEmpty() || r.nextInt(4) > 0)) return fresh.get(r.nextInt(fresh.size()));
        return used.isEmpty() ? null : used.get(r.nextInt(used.size()));
    }

    private Val sameShape(Body b, Val x, Predicate<Val> p, double lo, double hi) { return ofShape(b, x.shape, p, lo, hi); }

    /** A floating value of shape s satisfying p: one in scope, a new parameter in [lo, hi], or a fill. */
    private Val ofShape(Body b, Shape s, Predicate<Val> p, double lo, double hi) {
        Val v = r.nextInt(4) > 0 ? pickFloat(b, x -> x.shape.equals(s) && p.test(x)) : null;
        if (v != null) return v;
        Val q = r.nextInt(5) > 0 ? param(b, s, lo, hi) : null;
        if (q != null) return q;
        return fill(b, s, lo >= 0.1 ? Math.max(lo, 0.5) : (lo + hi) / 2 + 0.25);
    }

    /** I64 indices of shape s in [0, bound): an I64 parameter, a clamp / requant / relu of one, or an argmax. */
    private Val indices(Body b, Shape s, long bound) {
        for (Val v : b.pool)
            if (v.kind == Kind.INDEX && v.lo >= 0 && v.shape.equals(s) && v.bound <= bound && r.nextBoolean()) return v;
        if (b.budget <= 0) return null;
        b.budget--;
        boolean wide = r.nextInt(3) == 0;                           // a wider range, brought into [0, bound) by clamp
        String n = name(b.top ? "ids" : "i");
        Val p = new Val(n, s, Kind.INDEX, wide ? -3 : 0, 0, wide ? bound + 3 : bound, false);
        b.params.add(new Param(p, false));
        if (!wide) {
            b.pool.add(p);
            return p;
        }
        return new Val(n + ".clamp(lo=0, hi=" + (bound - 1) + ")" + (r.nextBoolean() ? ".relu()" : ""), s, Kind.INDEX, 0, 0, bound, false);
    }

    /** How an index value is written as an operand: a nested chain of clamp / requant is a temporary, which is fine for indices. */
    private String idxText(Val idx, long bound) {
        if (!idx.name.contains(".") && r.nextInt(5) == 0 && bound >= 1) return idx.name + ".requant(shift=0)";
        return idx.name;
    }

    private Val distinctIds(Body b, int n, long bound) {
        if (b.budget <= 0) return null;
        b.budget--;
        Val p = new Val(name(b.top ? "ids" : "i"), Shape.of(n), Kind.INDEX, 0, 0, bound, false);
        b.params.add(new Param(p, true));
        return p;
    }

    /** A new floating parameter, or null when the fn has enough. */
    private Val param(Body b, Shape s, double lo, double hi) {
        if (b.budget <= 0 || s.vol() > 24) return null;
        b.budget--;
        Val p = new Val(name(b.top ? "p" : "a"), s, Kind.FLOAT, lo, hi, 0, true);
        b.params.add(new Param(p, false));
        b.pool.add(p);
        return p;
    }

    private Val fill(Body b, Shape s, double v) {
        return let(b, "fill(" + tensor(s) + ", " + v + ")", s, Kind.FLOAT, v, v, 0, false);
    }

    // ---- lets and text --------------------------------------------------------------------------

    private Val mul(Body b, Val x, Val y) {
        double[] q = products(x.lo, x.hi, y.lo, y.hi);
        return binary(b, "*", x, y, q[0], q[1]);
    }

    private Val binary(Body b, String op, Val x, Val y, double lo, double hi) { return binary(b, op, x, y, lo, hi, x.shape); }

    private Val binary(Body b, String op, Val x, Val y, double lo, double hi, Shape out) {
        return let(b, x.name + " " + op + " " + y.name, out, Kind.FLOAT, lo, hi, 0, x.active || y.active, x, y);
    }

    /** {@code let v = expr in} of a new value; marks the operands used. Null when the interval is too wide. */
    private Val let(Body b, String expr, Shape s, Kind k, double lo, double hi, long bound, boolean active, Val... operands) {
        if (k == Kind.FLOAT && !(Math.max(Math.abs(lo), Math.abs(hi)) <= MAX_MAG)) return null;
        for (Val o : operands) if (o != null) o.uses++;
        Val v = new Val(name("v"), s, k, lo, hi, bound, active);
        b.lets.append("  let ").append(v.name).append(" = ").append(expr).append(" in\n");
        b.pool.add(v);
        return v;
    }

    private String type(Val v) {
        return "tensor<" + (v.kind == Kind.FLOAT ? ty : v.kind == Kind.INDEX ? "I64" : "I1") + ", " + v.shape + ", @host>";
    }

    private String tensor(Shape s) { return "tensor<" + ty + ", " + s + ", @host>"; }

    private String name(String stem) { return stem + fresh++; }

    private static String names(List<Val> vs) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < vs.size(); i++) s.append(i > 0 ? ", " : "").append(vs.get(i).name);
        return s.toString();
    }

    /** Axis {@code a} of a rank-{@code rank} value, written counting from the end a third of the time. */
    private String axis(int a, int rank) { return String.valueOf(r.nextInt(3) == 0 ? a - rank : a); }

    /** A shape of rank in [lo, hi], dims 1 to 3. */
    private Shape shape(int lo, int hi) {
        int rank = lo + r.nextInt(hi - lo + 1);
        long[] d = new long[rank];
        for (int i = 0; i < rank; i++) d[i] = 1 + r.nextInt(3);
        return new Shape(d);
    }

    /** A random shape of volume n (rank 0 for n = 1 sometimes). */
    private Shape factor(long n) {
        List<Long> d = new ArrayList<>();
        long left = n;
        for (long p = 2; p <= left; p++) while (left % p == 0) { d.add(p); left /= p; }
        List<Long> dims = new ArrayList<>();
        for (long x : d) {
            if (!dims.isEmpty() && r.nextBoolean()) dims.set(dims.size() - 1, dims.getLast() * x);
            else dims.add(x);
        }
        if (r.nextInt(3) == 0) dims.add(r.nextInt(dims.size() + 1), 1L);
        long[] a = new long[dims.size()];
        for (int i = 0; i < a.length; i++) a[i] = dims.get(i);
        return new Shape(a);
    }

    private static double[] products(double a, double b, double c, double d) {
        double p1 = a * c, p2 = a * d, p3 = b * c, p4 = b * d;
        return new double[] {Math.min(Math.min(p1, p2), Math.min(p3, p4)), Math.max(Math.max(p1, p2), Math.max(p3, p4))};
    }

    private static double sigmoid(double x) { return 1 / (1 + Math.exp(-x)); }

    // ---- inputs ---------------------------------------------------------------------------------

    private Tensor payload(Param p) {
        Val v = p.val;
        int n = (int) v.shape.vol();
        if (v.kind == Kind.FLOAT) return floats(v.shape, v.lo, v.hi);
        long[] l = new long[n];
        if (p.distinct) {
            List<Long> all = new ArrayList<>();
            for (long i = 0; i < v.bound; i++) all.add(i);
            for (int i = 0; i < n; i++) l[i] = all.remove(values.nextInt(all.size()));
        } else {
            for (int i = 0; i < n; i++) l[i] = (long) v.lo + values.nextLong(v.bound - (long) v.lo);
        }
        return Tensor.ofInts(new TensorType(DType.I64, v.shape, kina.ir.Placement.HOST), l);
    }

    private Tensor floats(Shape s, double lo, double hi) {
        double[] d = new double[(int) s.vol()];
        for (int i = 0; i < d.length; i++) d[i] = lo + (hi - lo) * values.nextDouble();
        return Tensor.ofFloats(new TensorType(dt, s, kina.ir.Placement.HOST), d);
    }
}
