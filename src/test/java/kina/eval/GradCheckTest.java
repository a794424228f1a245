package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import kina.check.Checker;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Placement;
import kina.ir.Pos;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Every VJP rule on random shapes and values: the recorded gradient equals the oracle bit for bit
 * (F32 and F64), and both agree with central finite differences in F64. Each case differentiates
 * {@code z = op(…) * w} with a random weight w, so the seed reaching the rule is not uniform
 * (Σ softmax would have a zero gradient and prove nothing).
 */
class GradCheckTest {

    static final List<String> OPS = List.of("neg", "exp", "log", "add", "sub", "mul", "div", "matmul", "reshape",
            "transpose", "broadcast", "sum", "softmax", "log_softmax", "take_along_axis", "gather", "reuse", "chain",
            "scatter_add", "scatter_along_axis",
            // the transformer vocabulary
            "sqrt", "rsqrt", "tanh", "sigmoid", "reciprocal", "silu", "gelu", "relu", "softcap", "maximum",
            "maximum_tie", "select", "swiglu", "rmsnorm", "layernorm", "l2norm", "rope", "attention",
            "attention_long", "set_rows", "argmax", "int_ops",
            // slices and random numbers
            "slice", "concat", "pad", "shift", "random_uniform", "random_normal", "dropout",
            // attention's adjoint vocabulary (IR-internal): its blockwise backward, the log-sum-exp and the
            // products of second derivatives (each product form's adjoints are the other two)
            "attention_lse", "attention_exp", "attention_dq", "attention_dk", "attention_dv",
            "attention_qk", "attention_pk", "attention_pq");

    @Provide Arbitrary<String> ops() { return Arbitraries.of(OPS); }

    @Property(tries = 160)
    void recordedEqualsOracleBitForBit(@ForAll("ops") String op, @ForAll long seed) {
        for (DType dt : new DType[] {DType.F32, DType.F64})
            assertRecordedEqualsOracle(Case.make(op, new SplittableRandom(seed), dt), op + " " + dt);
    }

    static void assertRecordedEqualsOracle(Case c, String what) {
        List<Tensor> rec = Programs.recorded(c.program, c.inputs);
        List<Tensor> ora = Programs.oracle(c.program, c.inputs);
        AdExamplesTest.assertBits(rec, ora, what);
    }

    /** Every op on 12 fixed seeds each, both checks: no op is left to the luck of the draw. */
    @org.junit.jupiter.api.Test
    void everyOpOnFixedSeeds() {
        for (String op : OPS)
            for (long seed = 0; seed < 12; seed++) {
                recordedEqualsOracleBitForBit(op, seed * 7919 + 17);
                agreesWithCentralFiniteDifferencesInF64(op, seed * 7919 + 17);
            }
    }

    /**
     * The three products on chosen masks, not left to the draw: GQA (H = 4 on KV = 2), a window with
     * start > 0 that leaves the last row attending nothing, a chunk with start > 0, a two-axis batch
     * prefix, and plain causal rows over more keys than rows. Both checks, F32 and F64.
     */
    @org.junit.jupiter.api.Test
    void attentionProductsOnChosenMasks() {
        record Mask(long[] lead, int h, int kv, int hd, int t, int l, int window, int chunk, int start) {}
        List<Mask> masks = List.of(
                new Mask(new long[] {2}, 4, 2, 2, 5, 5, 2, 0, 2),     // row 4: lo 5 > hi 4, nothing attended
                new Mask(new long[] {2, 1}, 2, 1, 3, 3, 4, 0, 2, 1),
                new Mask(new long[] {}, 4, 4, 1, 3, 6, 0, 0, 0),
                new Mask(new long[] {1}, 4, 1, 2, 4, 4, 3, 0, 0),
                new Mask(new long[] {}, 2, 2, 2, 2, 7, 0, 3, 4));
        long seed = 11;
        for (var form : Instr.AttentionProduct.Form.values())
            for (Mask m : masks) {
                var o = new Instr.AttnOpts(m.h(), m.kv(), Double.NaN, 0, m.window(), m.chunk(), m.start());
                String what = form.op() + " " + java.util.Arrays.toString(m.lead()) + " " + o;
                for (DType dt : new DType[] {DType.F32, DType.F64}) {
                    Case c = new Case(new SplittableRandom(seed), dt);
                    c.attentionProduct(form, m.lead(), m.t(), m.l(), m.hd(), o);
                    assertRecordedEqualsOracle(c, what + " " + dt);
                    if (dt == DType.F64) assertFiniteDifferences(c, what);
                }
                seed++;
            }
    }

    @Property(tries = 80)
    void agreesWithCentralFiniteDifferencesInF64(@ForAll("ops") String op, @ForAll long seed) {
        assertFiniteDifferences(Case.make(op, new SplittableRandom(seed), DType.F64), op);
    }

    static void assertFiniteDifferences(Case c, String op) {
        List<Tensor> grads = Programs.recorded(c.program, c.inputs);
        int gi = 1;
        for (Rhs.Param p : c.params) {
            if (!p.type().dtype().floating()) continue;
            Tensor g = grads.get(gi++);
            Tensor x = c.inputs.get(p.name().name());
            for (int i = 0; i < x.size(); i++) {
                double xi = x.floats()[i];
                double h = 1e-6 * Math.max(1, Math.abs(xi));
                double fp = c.value(p.name().name(), i, xi + h), fm = c.value(p.name().name(), i, xi - h);
                double fd = (fp - fm) / ((xi + h) - (xi - h));
                double err = Math.abs(fd - g.floats()[i]) / Math.max(1, Math.abs(g.floats()[i]));
                assertThat(err).as("%s: d/d%s[%d]: finite difference %s vs gradient %s", op, p.name(), i, fd, g.floats()[i])
                        .isLessThan(1e-6);
            }
        }
    }

    /** A differentiated fn f, a program {@code handle f(…)} and random inputs. */
    static final class Case {
        final List<Rhs.Param> params = new ArrayList<>();
        final List<Let> lets = new ArrayList<>();
        final Map<String, Tensor> inputs = new LinkedHashMap<>();
        final SplittableRandom rng;
        final DType dt;
        Program program;
        Program forward;

        Case(SplittableRandom rng, DType dt) { this.rng = rng; this.dt = dt; }

        TensorType t(long... dims) { return new TensorType(dt, new Shape(dims), Placement.HOST); }

        Var param(String name, TensorType type, double lo, double hi) {
            Var v = new Var(name);
            params.add(new Rhs.Param(v, type, Pos.NONE));
            int n = Math.toIntExact(type.shape().vol());
            double[] d = new double[n];
            for (int i = 0; i < n; i++) d[i] = lo + (hi - lo) * rng.nextDouble();
            inputs.put(name, Tensor.ofFloats(type, d));
            return v;
        }

        Var ids(String name, long bound, long... dims) { return idsBetween(name, 0, Math.min(bound, 3), dims); }   // few classes: repeats

        /** An I64 parameter with values drawn from [lo, hi). */
        Var idsBetween(String name, long lo, long hi, long... dims) {
            TensorType type = new TensorType(DType.I64, new Shape(dims), Placement.HOST);
            Var v = new Var(name);
            params.add(new Rhs.Param(v, type, Pos.NONE));
            long[] l = new long[Math.toIntExact(type.shape().vol())];
            for (int i = 0; i < l.length; i++) l[i] = rng.nextLong(lo, hi);
            inputs.put(name, Tensor.ofInts(type, l));
            return v;
        }

        Var let(String name, Instr ins) {
            Var v = new Var(name);
            lets.add(Let.of(v, ins, Pos.NONE));
            return v;
        }

        long[] dims(int rank) {
            long[] d = new long[rank];
            for (int i = 0; i < rank; i++) d[i] = 1 + rng.nextInt(4);
            return d;
        }

        /** Closes the body with z = y * w and builds the programs. */
        void finish(Var y, Shape yShape) {
            Var w = param("w", t(yShape.dims()), -1, 1);
            Var z = let("z", new Instr.Mul(y, w));
            List<Let> body = new ArrayList<>(lets);
            Rhs.Fn fn = new Rhs.Fn(params, t(yShape.dims()), new Block(body, z, Pos.NONE));
            program = Checker.check(wrap(fn, true));
            forward = Checker.check(wrap(fn, false));
        }

        private Program wrap(Rhs.Fn fn, boolean handle) {
            List<Let> top = new ArrayList<>();
            top.add(Let.of(new Var("f"), fn, Pos.NONE));
            List<Var> args = new ArrayList<>();
            for (Rhs.Param p : params) {
                top.add(Let.of(p.name(), new Instr.Input(p.type()), Pos.NONE));
                args.add(p.name());
            }
            Var r = new Var("r");
            top.add(Let.of(r, handle ? new Rhs.Handle(new Var("f"), args) : new Rhs.Call(new Var("f"), args), Pos.NONE));
            return new Program("gradcheck", new Block(top, r, Pos.NONE));
        }

        /** Σ f(inputs with element i of {@code name} set to v), in double. */
        double value(String name, int i, double v) {
            Map<String, Tensor> in = new HashMap<>(inputs);
            Tensor x = inputs.get(name);
            double[] d = x.floats().clone();
            d[i] = v;
            in.put(name, Tensor.ofFloats(x.type(), d));
            Tensor out = (Tensor) new Interpreter(in).run(forward);
            double s = 0;
            for (double e : out.floats()) s += e;
            return s;
        }

        /** cos and sin tables [l, half] of random angles, as Input lets of the body (not parameters). */
        Var[] ropeTables(int l, int half) {
            TensorType tt = t(l, half);
            double[] cs = new double[l * half], sn = new double[l * half];
            for (int i = 0; i < cs.length; i++) {
                double th = -3 + 6 * rng.nextDouble();
                cs[i] = Kernels.round(dt, StrictMath.cos(th));
                sn[i] = Kernels.round(dt, StrictMath.sin(th));
            }
            inputs.put("cos", Tensor.ofFloats(tt, cs));
            inputs.put("sin", Tensor.ofFloats(tt, sn));
            return new Var[] {let("cos", new Instr.Input(tt)), let("sin", new Instr.Input(tt))};
        }

        /** Random attention options: GQA, a window or a chunk cutting rows, softcap, scale, start. */
        Instr.AttnOpts attnOpts(int h, int kv) {
            double scale = rng.nextBoolean() ? Double.NaN : 0.3 + rng.nextDouble();
            double cap = rng.nextBoolean() ? 0 : 0.5 + 2 * rng.nextDouble();
            int mode = rng.nextInt(3);
            int window = mode == 1 ? 1 + rng.nextInt(3) : 0, chunk = mode == 2 ? 1 + rng.nextInt(3) : 0;
            return new Instr.AttnOpts(h, kv, scale, cap, window, chunk, rng.nextInt(4));
        }

        /**
         * y = attention_qk / _pk / _pq of a and b: QK a σ++[T, H·hd], b σ++[L, KV·hd]; PK a σ++[H, T, L],
         * b σ++[L, KV·hd]; PQ a σ++[H, T, L], b σ++[T, H·hd] (σ = lead).
         */
        void attentionProduct(Instr.AttentionProduct.Form form, long[] lead, int t, int l, int hd, Instr.AttnOpts o) {
            Shape rows = new Shape(lead).concat(t, (long) o.heads() * hd), keys = new Shape(lead).concat(l, (long) o.kvHeads() * hd);
            Shape probs = new Shape(lead).concat(o.heads(), t, l);
            Shape sa = form == Instr.AttentionProduct.Form.QK ? rows : probs;
            Shape sb = form == Instr.AttentionProduct.Form.PQ ? rows : keys;
            Shape sy = switch (form) {
                case QK -> probs;
                case PK -> rows;
                case PQ -> keys;
            };
            Var a = param("a", t(sa.dims()), -1.5, 1.5), b = param("b", t(sb.dims()), -1.5, 1.5);
            finish(let("y", new Instr.AttentionProduct(a, b, o, form)), sy);
        }

        /** n distinct I64 ids in [0, bound), shape [n]. */
        Var distinctIds(String name, long bound, int n) {
            TensorType type = new TensorType(DType.I64, Shape.of(n), Placement.HOST);
            Var v = new Var(name);
            params.add(new Rhs.Param(v, type, Pos.NONE));
            List<Long> all = new ArrayList<>();
            for (long i = 0; i < bound; i++) all.add(i);
            long[] l = new long[n];
            for (int i = 0; i < n; i++) l[i] = all.remove(rng.nextInt(all.size()));
            inputs.put(name, Tensor.ofInts(type, l));
            return v;
        }

        static Case make(String op, SplittableRandom rng, DType dt) {
            Case c = new Case(rng, dt);
            int rank = 1 + rng.nextInt(3);
            long[] d = c.dims(rank);
            switch (op) {
                case "neg", "exp" -> {
                    Var x = c.param("x", c.t(d), -1, 1);
                    c.finish(c.let("y", op.equals("neg") ? new Instr.Neg(x) : new Instr.Exp(x)), new Shape(d));
                }
                case "log" -> c.finish(c.let("y", new Instr.Log(c.param("x", c.t(d), 0.5, 1.5))), new Shape(d));
                case "add", "sub", "mul" -> {
                    Var a = c.param("a", c.t(d), -1, 1), b = c.param("b", c.t(d), -1, 1);
                    Instr ins = switch (op) {
                        case "add" -> new Instr.Add(a, b);
                        case "sub" -> new Instr.Sub(a, b);
                        default -> new Instr.Mul(a, b);
                    };
                    c.finish(c.let("y", ins), new Shape(d));
                }
                case "div" -> {
                    Var a = c.param("a", c.t(d), -1, 1), b = c.param("b", c.t(d), 0.5, 1.5);
                    c.finish(c.let("y", new Instr.Div(a, b)), new Shape(d));
                }
                case "matmul" -> {
                    int r = 2 + rng.nextInt(3);
                    long[] batch = c.dims(r - 2);
                    long m = 1 + rng.nextInt(4), k = 1 + rng.nextInt(4), n = 1 + rng.nextInt(4);
                    Shape sa = new Shape(batch).concat(m, k), sb = new Shape(batch).concat(k, n);
                    Var a = c.param("a", c.t(sa.dims()), -1, 1), b = c.param("b", c.t(sb.dims()), -1, 1);
                    c.finish(c.let("y", new Instr.Matmul(a, b)), new Shape(batch).concat(m, n));
                }
                case "reshape" -> {
                    Var x = c.param("x", c.t(d), -1, 1);
                    long vol = new Shape(d).vol();
                    Shape to = rng.nextBoolean() ? Shape.of(vol) : Shape.of(1, vol);
                    c.finish(c.let("y", new Instr.Reshape(x, to)), to);
                }
                case "transpose" -> {
                    int r = 2 + rng.nextInt(3);
                    long[] dd = c.dims(r);
                    int[] perm = new int[r];
                    for (int i = 0; i < r; i++) perm[i] = i;
                    for (int i = r - 1; i > 0; i--) { int j = rng.nextInt(i + 1); int t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
                    Var x = c.param("x", c.t(dd), -1, 1);
                    kina.ir.Perm p = kina.ir.Perm.of(perm);
                    c.finish(c.let("y", new Instr.Transpose(x, p)), p.apply(new Shape(dd)));
                }
                case "broadcast" -> {                     // same rank, or new leading axes as NumPy adds them
                    long[] to = c.dims(rank);
                    for (int i = 0; i < rank; i++) to[i] = 2 + rng.nextInt(3);
                    int lead = rng.nextInt(3) == 0 ? 0 : rng.nextInt(rank + 1);
                    long[] from = java.util.Arrays.copyOfRange(to, lead, rank);
                    for (int i = 0; i < from.length; i++) if (rng.nextBoolean()) from[i] = 1;
                    Var x = c.param("x", c.t(from), -1, 1);
                    c.finish(c.let("y", new Instr.Broadcast(x, new Shape(to))), new Shape(to));
                }
                case "sum" -> {
                    int axis = rng.nextInt(rank);
                    boolean keep = rng.nextBoolean();
                    Var x = c.param("x", c.t(d), -1, 1);
                    Shape out = keep ? new Shape(d).with(axis, 1) : new Shape(d).drop(axis);
                    c.finish(c.let("y", new Instr.Sum(x, axis, keep)), out);
                }
                case "softmax", "log_softmax" -> {
                    int axis = rng.nextInt(rank);
                    Var x = c.param("x", c.t(d), -2, 2);
                    c.finish(c.let("y", op.equals("softmax") ? new Instr.Softmax(x, axis) : new Instr.LogSoftmax(x, axis)), new Shape(d));
                }
                case "take_along_axis" -> {               // rank 1 too: a rank-0 index picks one element
                    int r = 1 + rng.nextInt(3);
                    long[] dd = c.dims(r);
                    int axis = rng.nextInt(r);
                    Shape rho = new Shape(dd).drop(axis);
                    Var idx = c.ids("idx", dd[axis], rho.dims());
                    Var x = c.param("x", c.t(dd), -1, 1);
                    c.finish(c.let("y", new Instr.TakeAlongAxis(x, idx, axis)), rho);
                }
                case "gather" -> {
                    long v = 2 + rng.nextInt(5), dim = 1 + rng.nextInt(4);
                    long[] sigma = c.dims(1 + rng.nextInt(2));
                    Var ids = c.ids("ids", v, sigma);
                    Var vals = c.param("values", c.t(v, dim), -1, 1);
                    c.finish(c.let("y", new Instr.Gather(vals, ids)), new Shape(sigma).concat(dim));
                }
                case "reuse" -> {                         // x·x + x: three uses of x, accumulation order
                    Var x = c.param("x", c.t(d), -1, 1);
                    Var sq = c.let("sq", new Instr.Mul(x, x));
                    c.finish(c.let("y", new Instr.Add(sq, x)), new Shape(d));
                }
                case "chain" -> {                         // exp(log_softmax(x)) · x / x.sum(keepdims).broadcast
                    int axis = rng.nextInt(rank);
                    Var x = c.param("x", c.t(d), 0.5, 1.5);
                    Var ls = c.let("ls", new Instr.LogSoftmax(x, axis));
                    Var e = c.let("e", new Instr.Exp(ls));
                    Var s = c.let("s", new Instr.Sum(x, axis, true));
                    Var b = c.let("b", new Instr.Broadcast(s, new Shape(d)));
                    Var q = c.let("q", new Instr.Div(x, b));
                    c.finish(c.let("y", new Instr.Mul(e, q)), new Shape(d));
                }
                case "scatter_add" -> {                   // closure: the adjoint of gather has a rule too
                    long v = 2 + rng.nextInt(5), dim = 1 + rng.nextInt(4);
                    long[] sigma = c.dims(1 + rng.nextInt(2));
                    Var ids = c.ids("ids", v, sigma);
                    Var u = c.param("u", c.t(new Shape(sigma).concat(dim).dims()), -1, 1);
                    TensorType dest = c.t(v, dim);
                    c.finish(c.let("y", new Instr.ScatterAdd(u, ids, dest)), dest.shape());
                }
                case "scatter_along_axis" -> {
                    int r = 1 + rng.nextInt(3);
                    long[] dd = c.dims(r);
                    int axis = rng.nextInt(r);
                    Shape rho = new Shape(dd).drop(axis);
                    Var idx = c.ids("idx", dd[axis], rho.dims());
                    Var u = c.param("u", c.t(rho.dims()), -1, 1);
                    c.finish(c.let("y", new Instr.ScatterAlongAxis(axis, u, idx, c.t(dd))), new Shape(dd));
                }
                case "sqrt", "rsqrt", "reciprocal" -> {
                    Var x = c.param("x", c.t(d), 0.5, 1.5);
                    c.finish(c.let("y", switch (op) {
                        case "sqrt" -> new Instr.Sqrt(x);
                        case "rsqrt" -> new Instr.Rsqrt(x);
                        default -> new Instr.Reciprocal(x);
                    }), new Shape(d));
                }
                case "tanh", "sigmoid", "silu", "gelu", "relu" -> {
                    Var x = c.param("x", c.t(d), -2, 2);
                    c.finish(c.let("y", switch (op) {
                        case "tanh" -> new Instr.Tanh(x);
                        case "sigmoid" -> new Instr.Sigmoid(x);
                        case "silu" -> new Instr.Silu(x);
                        case "gelu" -> new Instr.Gelu(x);
                        default -> new Instr.Relu(x);
                    }), new Shape(d));
                }
                case "softcap" -> {
                    Var x = c.param("x", c.t(d), -3, 3);
                    c.finish(c.let("y", new Instr.Softcap(x, 0.5 + 2.5 * rng.nextDouble())), new Shape(d));
                }
                case "maximum", "swiglu" -> {
                    Var a = c.param("a", c.t(d), -2, 2), b = c.param("b", c.t(d), -2, 2);
                    c.finish(c.let("y", op.equals("maximum") ? new Instr.Maximum(a, b) : new Instr.Swiglu(a, b)), new Shape(d));
                }
                case "maximum_tie" -> {                   // every element a tie: all of g goes to the first operand
                    Var x = c.param("x", c.t(d), -1, 1);
                    c.finish(c.let("y", new Instr.Maximum(x, x)), new Shape(d));
                }
                case "select" -> {                        // greater makes the mask; select routes g
                    Var a = c.param("a", c.t(d), -1, 1), b = c.param("b", c.t(d), -1, 1);
                    Var m = c.let("m", new Instr.Greater(a, b));
                    c.finish(c.let("y", new Instr.Select(m, a, b)), new Shape(d));
                }
                case "rmsnorm", "layernorm" -> {
                    Var x = c.param("x", c.t(d), -2, 2);
                    long last = d[rank - 1];
                    Optional<Var> w = rng.nextInt(3) > 0 ? Optional.of(c.param("wt", c.t(last), 0.5, 1.5)) : Optional.empty();
                    Optional<Var> extra = w.isPresent() && rng.nextBoolean()
                            ? Optional.of(op.equals("rmsnorm") ? c.param("res", c.t(d), -1, 1) : c.param("bias", c.t(last), -1, 1))
                            : Optional.empty();
                    double eps = rng.nextBoolean() ? 1e-5 : 0.1;
                    c.finish(c.let("y", op.equals("rmsnorm") ? new Instr.RmsNorm(x, w, extra, eps)
                            : new Instr.LayerNorm(x, w, extra, eps)), new Shape(d));
                }
                case "l2norm" -> {
                    Var x = c.param("x", c.t(d), -2, 2);
                    c.finish(c.let("y", new Instr.L2Norm(x, rng.nextBoolean() ? 1e-6 : 0.1)), new Shape(d));
                }
                case "rope" -> {                          // partial rotary and start > 0; tables are inputs, not parameters
                    long[] lead = c.dims(rng.nextInt(2));
                    int t = 1 + rng.nextInt(3), h = 1 + rng.nextInt(3), hd = 2 * (1 + rng.nextInt(3));
                    int rot = 2 * (1 + rng.nextInt(hd / 2)), start = rng.nextInt(3), l = start + t + rng.nextInt(2);
                    Shape xs = new Shape(lead).concat(t, (long) h * hd);
                    Var x = c.param("x", c.t(xs.dims()), -1, 1);
                    Var[] tabs = c.ropeTables(l, rot / 2);
                    c.finish(c.let("y", new Instr.Rope(x, tabs[0], tabs[1], h, rot == hd && rng.nextBoolean() ? 0 : rot, start)), xs);
                }
                case "attention", "attention_lse" -> {
                    long[] lead = c.dims(rng.nextInt(2));
                    int kv = 1 + rng.nextInt(2), h = kv * (1 + rng.nextInt(2)), hd = 1 + rng.nextInt(3);
                    int t = 1 + rng.nextInt(4), l = 1 + rng.nextInt(5);
                    Instr.AttnOpts o = c.attnOpts(h, kv);
                    boolean withSinks = rng.nextBoolean();
                    if (op.equals("attention_lse") && !withSinks) {   // every row attends a key: no lse of −∞ (finite differences)
                        l = Math.max(l, t);
                        o = new Instr.AttnOpts(h, kv, o.scale(), o.softcap(), o.window(), o.chunk(), 0);
                    }
                    Var q = c.param("q", c.t(new Shape(lead).concat(t, (long) h * hd).dims()), -1.5, 1.5);
                    Var k = c.param("k", c.t(new Shape(lead).concat(l, (long) kv * hd).dims()), -1.5, 1.5);
                    Optional<Var> sinks = withSinks ? Optional.of(c.param("sinks", c.t(h), -1, 1)) : Optional.empty();
                    if (op.equals("attention")) {
                        Var v = c.param("v", c.t(new Shape(lead).concat(l, (long) kv * hd).dims()), -1, 1);
                        c.finish(c.let("y", new Instr.Attention(q, k, v, sinks, o)), new Shape(lead).concat(t, (long) h * hd));
                    } else {
                        c.finish(c.let("y", new Instr.AttentionLse(q, k, sinks, o)), new Shape(lead).concat(t, h));
                    }
                }
                case "attention_long" -> {                // rows over several key blocks: the online softmax's rescales
                    int kv = 1 + rng.nextInt(2), h = kv, hd = 1 + rng.nextInt(2), t = 1 + rng.nextInt(3);
                    int l = Instr.AttnOpts.KEY_BLOCK + 1 + rng.nextInt(2 * Instr.AttnOpts.KEY_BLOCK);
                    int window = rng.nextBoolean() ? 0 : Instr.AttnOpts.KEY_BLOCK / 2 + rng.nextInt(Instr.AttnOpts.KEY_BLOCK);
                    Instr.AttnOpts o = new Instr.AttnOpts(h, kv, rng.nextBoolean() ? Double.NaN : 2.0, rng.nextBoolean() ? 0 : 2.5,
                            window, 0, l - t - rng.nextInt(3));
                    Var q = c.param("q", c.t(t, (long) h * hd), -1.5, 1.5);
                    Var k = c.param("k", c.t(l, (long) kv * hd), -1.5, 1.5), v = c.param("v", c.t(l, (long) kv * hd), -1, 1);
                    Optional<Var> sinks = rng.nextBoolean() ? Optional.of(c.param("sinks", c.t(h), -1, 1)) : Optional.empty();
                    c.finish(c.let("y", new Instr.Attention(q, k, v, sinks, o)), Shape.of(t, (long) h * hd));
                }
                case "attention_exp", "attention_dq", "attention_dk", "attention_dv" -> {   // lse and d as free operands
                    long[] lead = c.dims(rng.nextInt(2));
                    int kv = 1 + rng.nextInt(2), h = kv * (1 + rng.nextInt(2)), hd = 1 + rng.nextInt(3);
                    int t = 1 + rng.nextInt(4), l = 1 + rng.nextInt(5);
                    Instr.AttnOpts o = c.attnOpts(h, kv);
                    Shape rows = new Shape(lead).concat(t, (long) h * hd), keys = new Shape(lead).concat(l, (long) kv * hd);
                    Var q = c.param("q", c.t(rows.dims()), -1.5, 1.5), k = c.param("k", c.t(keys.dims()), -1.5, 1.5);
                    Var lse = c.param("lse", c.t(new Shape(lead).concat(t, h).dims()), 0.5, 2);
                    if (op.equals("attention_exp")) {
                        c.finish(c.let("y", new Instr.AttentionExp(q, k, lse, o)), new Shape(lead).concat(h, t, l));
                    } else {
                        Var v = c.param("v", c.t(keys.dims()), -1, 1), g = c.param("g", c.t(rows.dims()), -1, 1);
                        Var dd = c.param("d", c.t(new Shape(lead).concat(t, h).dims()), -1, 1);
                        var wrt = Instr.AttentionGrad.Wrt.valueOf(op.substring(op.length() - 1).toUpperCase());
                        c.finish(c.let("y", new Instr.AttentionGrad(q, k, v, g, lse, dd, o, wrt)), wrt == Instr.AttentionGrad.Wrt.Q ? rows : keys);
                    }
                }
                case "attention_qk", "attention_pk", "attention_pq" -> {   // masks and GQA as attention's
                    long[] lead = c.dims(rng.nextInt(3));
                    int kv = 1 + rng.nextInt(2), h = kv * (1 + rng.nextInt(2)), hd = 1 + rng.nextInt(3);
                    int t = 1 + rng.nextInt(4), l = 1 + rng.nextInt(5);
                    var form = switch (op) {
                        case "attention_qk" -> Instr.AttentionProduct.Form.QK;
                        case "attention_pk" -> Instr.AttentionProduct.Form.PK;
                        default -> Instr.AttentionProduct.Form.PQ;
                    };
                    c.attentionProduct(form, lead, t, l, hd, c.attnOpts(h, kv));
                }
                case "set_rows" -> {                      // distinct ids; overwritten rows of the table get 0
                    long v = 2 + rng.nextInt(4), dim = 1 + rng.nextInt(3);
                    int n = 1 + rng.nextInt((int) v);
                    Var ids = c.distinctIds("ids", v, n);
                    Var table = c.param("table", c.t(v, dim), -1, 1), rows = c.param("rows", c.t(n, dim), -1, 1);
                    c.finish(c.let("y", new Instr.SetRows(table, ids, rows)), Shape.of(v, dim));
                }
                case "argmax" -> {                        // take_along_axis(argmax): the max, its gradient the arg-max mask
                    long[] dd = c.dims(1 + rng.nextInt(3));
                    int axis = rng.nextInt(dd.length);
                    Var x = c.param("x", c.t(dd), -1, 1);
                    Var am = c.let("am", new Instr.ArgMax(x, axis));
                    c.finish(c.let("y", new Instr.TakeAlongAxis(x, am, axis)), new Shape(dd).drop(axis));
                }
                case "int_ops" -> {                       // clamp, requant and integer relu feed gather's indices
                    long v = 3 + rng.nextInt(3), dim = 1 + rng.nextInt(3);
                    long[] sigma = c.dims(1 + rng.nextInt(2));
                    Var ids = c.idsBetween("ids", -3, v + 3, sigma);           // values clamp, requant and relu all change
                    Var cl = c.let("cl", new Instr.Clamp(ids, -1, v - 1));
                    Var rq = c.let("rq", new Instr.Requant(cl, rng.nextInt(2)));
                    Var rl = c.let("rl", new Instr.Relu(rq));
                    Var vals = c.param("values", c.t(v, dim), -1, 1);
                    c.finish(c.let("y", new Instr.Gather(vals, rl)), new Shape(sigma).concat(dim));
                }
                case "slice" -> {                         // any piece of any axis, empty ones included
                    int axis = rng.nextInt(rank);
                    long start = rng.nextInt((int) d[axis] + 1), size = rng.nextInt((int) (d[axis] - start) + 1);
                    Var x = c.param("x", c.t(d), -1, 1);
                    c.finish(c.let("y", new Instr.Slice(x, axis, start, size)), new Shape(d).with(axis, size));
                }
                case "concat" -> {
                    int axis = rng.nextInt(rank);
                    long[] db = d.clone();
                    db[axis] = rng.nextInt(4);
                    Var a = c.param("a", c.t(d), -1, 1), b = c.param("b", c.t(db), -1, 1);
                    c.finish(c.let("y", new Instr.Concat(a, b, axis)), new Shape(d).with(axis, d[axis] + db[axis]));
                }
                case "pad" -> {
                    int axis = rng.nextInt(rank);
                    long before = rng.nextInt(3), after = rng.nextInt(3);
                    Var x = c.param("x", c.t(d), -1, 1);
                    c.finish(c.let("y", new Instr.Pad(x, axis, before, after)), new Shape(d).with(axis, d[axis] + before + after));
                }
                case "shift" -> {                         // slice then pad back: a sequence shifted along an axis, times itself
                    int axis = rng.nextInt(rank);
                    long by = rng.nextInt((int) d[axis] + 1);
                    Var x = c.param("x", c.t(d), -1, 1);
                    Var s = c.let("s", new Instr.Slice(x, axis, 0, d[axis] - by));
                    Var sh = c.let("sh", new Instr.Pad(s, axis, by, 0));
                    c.finish(c.let("y", new Instr.Mul(sh, x)), new Shape(d));
                }
                case "random_uniform", "random_normal" -> {   // a constant of the key times x: x's cotangent is g·u
                    Var key = c.idsBetween("key", Long.MIN_VALUE, Long.MAX_VALUE, 1 + rng.nextInt(2));
                    Var x = c.param("x", c.t(d), -1, 1);
                    Var u = c.let("u", op.equals("random_uniform") ? new Instr.RandomUniform(key, c.t(d)) : new Instr.RandomNormal(key, c.t(d)));
                    c.finish(c.let("y", new Instr.Mul(x, u)), new Shape(d));
                }
                case "dropout" -> {
                    Var key = c.idsBetween("key", Long.MIN_VALUE, Long.MAX_VALUE, 1 + rng.nextInt(2));
                    Var x = c.param("x", c.t(d), -1, 1);
                    double p = rng.nextInt(4) == 0 ? 0 : 0.9 * rng.nextDouble();
                    c.finish(c.let("y", new Instr.Dropout(x, key, p)), new Shape(d));
                }
                default -> throw new IllegalArgumentException(op);
            }
            return c;
        }
    }

}
