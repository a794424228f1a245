package kina.eval;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kina.check.Checker;
import kina.ir.Block;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Pos;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Var;

/**
 * Programs of higher order built around a gradcheck case's fn f, as a user would write them:
 * <ul>
 *   <li>{@link #hvp}: {@code dot = fn(params, dir_p…) { let (r, g…) = handle f(params) with reverseMode in Σ_p ⟨g_p, dir_p⟩ }}
 *       and {@code handle dot(params, dirs) with reverseMode}: (s, H·dir per floating parameter, then
 *       the gradient itself, the cotangents of the dirs);</li>
 *   <li>{@link #jvp}: {@code handle f(params) with forwardMode(tan_p…)}: (R, J·t).</li>
 * </ul>
 */
final class Derived {
    private Derived() {}

    /** The case's fn f (its first let). */
    static Rhs.Fn fn(GradCheckTest.Case c) { return (Rhs.Fn) c.program.body().lets().getFirst().rhs(); }

    static List<Rhs.Param> floating(GradCheckTest.Case c) {
        return c.params.stream().filter(p -> p.type().dtype().floating()).toList();
    }

    /** The Hessian-vector program of the case (see the class comment), checked. */
    static Program hvp(GradCheckTest.Case c) {
        return hvp(c, List.of(Let.of(new Var("f"), fn(c), Pos.NONE)), args -> new Rhs.Handle(new Var("f"), args));
    }

    /**
     * The Hessian-vector program with the fns {@code fns} first and {@code inner(params)} in place of
     * {@code handle f(params) with reverseMode} (a call of a printed f_grad, say), checked.
     */
    static Program hvp(GradCheckTest.Case c, List<Let> fns, java.util.function.Function<List<Var>, Rhs> inner) {
        List<Rhs.Param> fl = floating(c);
        List<Let> body = new ArrayList<>();
        List<Var> binders = new ArrayList<>(List.of(new Var("r_")));
        for (Rhs.Param p : fl) binders.add(new Var("gr_" + p.name()));
        body.add(new Let(binders, true, inner.apply(c.params.stream().map(Rhs.Param::name).toList()), Pos.NONE, null, null));
        Var acc = null;
        int n = 0;
        for (Rhs.Param p : fl) {
            Var d = reduceToScalar(body, new Instr.Mul(new Var("gr_" + p.name()), new Var("dir_" + p.name())), p.type().rank(), "m" + n++);
            if (acc == null) acc = d;
            else {
                Var s = new Var("acc" + n);
                body.add(Let.of(s, new Instr.Add(acc, d), Pos.NONE));
                acc = s;
            }
        }
        List<Rhs.Param> params = new ArrayList<>(c.params);
        for (Rhs.Param p : fl) params.add(new Rhs.Param(new Var("dir_" + p.name()), p.type(), Pos.NONE));
        TensorType scalar = fl.getFirst().type().withShape(kina.ir.Shape.of());
        Rhs.Fn dot = new Rhs.Fn(params, scalar, new Block(body, acc, Pos.NONE));
        List<Let> top = new ArrayList<>(fns);
        top.add(Let.of(new Var("dot"), dot, Pos.NONE));
        for (Rhs.Param p : params) top.add(Let.of(p.name(), new Instr.Input(p.type()), Pos.NONE));
        top.add(Let.of(new Var("r"), new Rhs.Handle(new Var("dot"), params.stream().map(Rhs.Param::name).toList()), Pos.NONE));
        return Checker.check(new Program("derived", new Block(top, new Var("r"), Pos.NONE)));
    }

    /** {@code let m = ins in} then sums over axis 0 to rank 0, one let each; answers the last Var. */
    private static Var reduceToScalar(List<Let> body, Instr ins, int rank, String stem) {
        Var v = new Var(stem);
        body.add(Let.of(v, ins, Pos.NONE));
        for (int k = 0; k < rank; k++) {
            Var s = new Var(stem + "_s" + k);
            body.add(Let.of(s, new Instr.Sum(v, 0, false), Pos.NONE));
            v = s;
        }
        return v;
    }

    /** {@code handle f(params) with forwardMode(tan_p…)}, checked. */
    static Program jvp(GradCheckTest.Case c) {
        List<Rhs.Param> params = new ArrayList<>(c.params);
        List<Var> tangents = new ArrayList<>();
        for (Rhs.Param p : floating(c)) {
            params.add(new Rhs.Param(new Var("tan_" + p.name()), p.type(), Pos.NONE));
            tangents.add(new Var("tan_" + p.name()));
        }
        Rhs.Handle h = new Rhs.Handle(new Var("f"), c.params.stream().map(Rhs.Param::name).toList(), new Rhs.Mode.ForwardMode(tangents));
        return Checker.check(wrap(c, params, h));
    }

    /** f, an input for each of {@code inputs}, and {@code let r = rhs in r}. */
    private static Program wrap(GradCheckTest.Case c, List<Rhs.Param> inputs, Rhs rhs) {
        List<Let> top = new ArrayList<>();
        top.add(Let.of(new Var("f"), fn(c), Pos.NONE));
        for (Rhs.Param p : inputs) top.add(Let.of(p.name(), new Instr.Input(p.type()), Pos.NONE));
        top.add(Let.of(new Var("r"), rhs, Pos.NONE));
        return new Program("derived", new Block(top, new Var("r"), Pos.NONE));
    }

    /** The case's inputs and one random direction in [−1, 1) per floating parameter, named {@code prefix + p}. */
    static Map<String, Tensor> withDirections(GradCheckTest.Case c, String prefix, SplittableRandom rng) {
        Map<String, Tensor> in = new LinkedHashMap<>(c.inputs);
        for (Rhs.Param p : floating(c)) in.put(prefix + p.name(), random(p.type(), rng));
        return in;
    }

    static Tensor random(TensorType t, SplittableRandom rng) {
        double[] d = new double[Math.toIntExact(t.shape().vol())];
        for (int i = 0; i < d.length; i++) d[i] = Kernels.round(t.dtype(), rng.nextDouble(-1, 1));
        return Tensor.ofFloats(t, d);
    }

    /** {@code in} with each floating parameter p moved by h times the input {@code prefix + p}. */
    static Map<String, Tensor> shifted(GradCheckTest.Case c, Map<String, Tensor> in, String prefix, double h) {
        Map<String, Tensor> out = new HashMap<>(in);
        for (Rhs.Param p : floating(c)) {
            Tensor x = in.get(p.name().name()), d = in.get(prefix + p.name());
            double[] v = x.floats().clone();
            for (int i = 0; i < v.length; i++) v[i] += h * d.floats()[i];
            out.put(p.name().name(), Tensor.ofFloats(x.type(), v));
        }
        return out;
    }

    /** max_j |a_j − b_j| / max(1, max_j |b_j|): the error of a against b, relative to b's scale. */
    static double relErr(double[] a, double[] b) {
        double scale = 1, worst = 0;
        for (double x : b) scale = Math.max(scale, Math.abs(x));
        for (int j = 0; j < a.length; j++) worst = Math.max(worst, Math.abs(a[j] - b[j]));
        return worst / scale;
    }
}
