package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kina.ad.TransformAd;
import kina.check.TypeError;
import kina.ir.DType;
import kina.ir.Printer;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * {@code handle f(x) with forwardMode(t)}: (f(x), J·t), derived from the VJP rules by transposition.
 * For every instruction (the gradcheck cases) and both example models: the recorded JVP equals the
 * oracle's eager reading bit for bit, agrees with central finite differences in F64, and satisfies
 * vᵀ(J·t) = (Jᵀv)ᵀ·t to F64 rounding, Jᵀv from reverse mode seeded with v.
 */
class ForwardModeTest {
    static final double STEP = 1e-6;

    @Provide Arbitrary<String> ops() { return Arbitraries.of(GradCheckTest.OPS); }

    @Property(tries = 60)
    void everyInstructionsJvp(@ForAll("ops") String op, @ForAll long seed) {
        for (DType dt : new DType[] {DType.F32, DType.F64}) {
            GradCheckTest.Case c = GradCheckTest.Case.make(op, new SplittableRandom(seed), dt);
            Program p = Derived.jvp(c);
            SplittableRandom rng = new SplittableRandom(seed ^ 0x2545F4914F6CDD1DL);
            Map<String, Tensor> in = Derived.withDirections(c, "tan_", rng);
            List<Tensor> rec = Programs.recorded(p, in);
            AdExamplesTest.assertBits(rec, Programs.oracle(p, in), op + " " + dt + " jvp");
            assertThat(rec.get(0).bitEquals(Programs.flatten(new Interpreter(c.inputs).run(c.forward)).getFirst()))
                    .as("%s: the primal result of forwardMode is f's", op).isTrue();
            if (dt != DType.F64) continue;
            assertJvpMatchesFiniteDifferences(c, in, rec.get(1), op);
            assertDualityWithReverseMode(c, in, rec.get(1), rng, op);
        }
    }

    @Test void everyInstructionOnFixedSeeds() {
        for (String op : GradCheckTest.OPS)
            for (long seed = 0; seed < 6; seed++) everyInstructionsJvp(op, seed * 7919 + 17);
    }

    /** (f(x + h t) − f(x − h t)) / 2h, element by element of R. */
    static void assertJvpMatchesFiniteDifferences(GradCheckTest.Case c, Map<String, Tensor> in, Tensor jt, String what) {
        double[] fp = Programs.flatten(new Interpreter(Derived.shifted(c, in, "tan_", STEP)).run(c.forward)).getFirst().floats();
        double[] fm = Programs.flatten(new Interpreter(Derived.shifted(c, in, "tan_", -STEP)).run(c.forward)).getFirst().floats();
        double[] fd = new double[fp.length];
        for (int j = 0; j < fd.length; j++) fd[j] = (fp[j] - fm[j]) / (2 * STEP);
        assertThat(Derived.relErr(fd, jt.floats())).as("%s: J·t: finite differences %s vs %s", what,
                java.util.Arrays.toString(fd), java.util.Arrays.toString(jt.floats())).isLessThan(1e-6);
    }

    /** vᵀ(J·t) against Σ_p (Jᵀv)_p · t_p, Jᵀv by reverse mode seeded with a random v. */
    static void assertDualityWithReverseMode(GradCheckTest.Case c, Map<String, Tensor> in, Tensor jt, SplittableRandom rng, String what) {
        Tensor v = Derived.random(jt.type(), rng);
        List<Tensor> rev = Programs.flatten(new Interpreter(c.inputs, new Oracle(v)).run(c.program));
        List<double[]> ts = new ArrayList<>();
        for (Rhs.Param p : Derived.floating(c)) ts.add(in.get("tan_" + p.name()).floats());
        assertDual(v, jt, rev.subList(1, rev.size()), ts, what);
    }

    /** Σ v·jt = Σ_i Σ g_i·t_i to F64 rounding: within 1e-13 of the sum of the terms' magnitudes. */
    static void assertDual(Tensor v, Tensor jt, List<Tensor> g, List<double[]> t, String what) {
        double left = 0, right = 0, scale = 0;
        for (int j = 0; j < v.size(); j++) {
            left += v.floats()[j] * jt.floats()[j];
            scale += Math.abs(v.floats()[j] * jt.floats()[j]);
        }
        for (int i = 0; i < t.size(); i++) {
            double[] gi = g.get(i).floats(), ti = t.get(i);
            for (int j = 0; j < gi.length; j++) {
                right += gi[j] * ti[j];
                scale += Math.abs(gi[j] * ti[j]);
            }
        }
        assertThat(Math.abs(left - right)).as("%s: vᵀ(J·t) = %s, (Jᵀv)ᵀt = %s", what, left, right)
                .isLessThanOrEqualTo(1e-13 * scale);
    }

    // ---- the example models ----------------------------------------------------------------------

    /** The fn {@code name} of an example file, followed by inputs and {@code handle name(…) with forwardMode(…)}. */
    static String forwardOf(String file, String name, List<String> params, List<String> types, List<Boolean> floating) {
        String src = Programs.source(file, DType.F64);
        int start = src.indexOf("let " + name + " = fn(");
        int end = src.indexOf("\n} in\n", start) + 6;
        StringBuilder sb = new StringBuilder(src.substring(start, end));
        List<String> tans = new ArrayList<>();
        for (int i = 0; i < params.size(); i++) {
            sb.append("let ").append(params.get(i)).append(" = ").append(types.get(i)).append(" in\n");
            if (floating.get(i)) {
                sb.append("let tan_").append(params.get(i)).append(" = ").append(types.get(i)).append(" in\n");
                tans.add("tan_" + params.get(i));
            }
        }
        return sb.append("handle ").append(name).append("(").append(String.join(", ", params)).append(") with forwardMode(")
                .append(String.join(", ", tans)).append(")\n").toString();
    }

    static String f64(long... dims) { return TensorType.host(DType.F64, dims).toString(); }

    @Test void theNllModel() {
        String src = forwardOf("examples/nll.kina", "nll", List.of("logits"), List.of(f64(1, 4, 8)), List.of(true));
        Map<String, Tensor> in = SecondOrderTest.exampleInputs("nll", DType.F64, "logits", "targets", "v");
        in.put("tan_logits", in.remove("v"));
        assertModel(src, in, List.of("logits"), "nll");
    }

    @Test void theStoryLm0Model() {
        List<String> ps = List.of("token_ids", "emb", "mask", "scale", "wq", "wk", "wv", "wo", "lm_head");
        List<String> ts = List.of(TensorType.host(DType.I64, 1, 4).toString(), f64(8, 4), f64(1, 1, 4, 4), f64(1, 1, 1, 1),
                f64(4, 4), f64(4, 4), f64(4, 4), f64(4, 4), f64(4, 8));
        List<Boolean> fl = List.of(false, true, true, true, true, true, true, true, true);
        String src = forwardOf("examples/storylm0_ad_step.kina", "storylm0_fwd", ps, ts, fl);
        Map<String, Tensor> in = SecondOrderTest.storylm0Inputs(DType.F64);
        for (String w : SecondOrderTest.STORYLM0_PARAMS) in.put("tan_" + w, in.remove("v_" + w));
        assertModel(src, in, List.of(SecondOrderTest.STORYLM0_PARAMS), "storylm0");
    }

    private static void assertModel(String src, Map<String, Tensor> in, List<String> floating, String what) {
        Program p = Programs.checked(what + ".kina", src);
        List<Tensor> rec = Programs.recorded(p, in);
        AdExamplesTest.assertBits(rec, Programs.oracle(p, in), what + " jvp");
        // finite differences along t
        Program call = Programs.checked(what + ".kina", src.replaceAll("handle (\\w+)\\(([^)]*)\\) with forwardMode\\([^)]*\\)", "$1($2)"));
        Map<String, Tensor> plus = new HashMap<>(in), minus = new HashMap<>(in);
        for (String w : floating) {
            double[] x = in.get(w).floats(), t = in.get("tan_" + w).floats(), xp = x.clone(), xm = x.clone();
            for (int j = 0; j < x.length; j++) { xp[j] += STEP * t[j]; xm[j] -= STEP * t[j]; }
            plus.put(w, Tensor.ofFloats(in.get(w).type(), xp));
            minus.put(w, Tensor.ofFloats(in.get(w).type(), xm));
        }
        double[] fp = ((Tensor) new Interpreter(plus).run(call)).floats(), fm = ((Tensor) new Interpreter(minus).run(call)).floats();
        double[] fd = new double[fp.length];
        for (int j = 0; j < fd.length; j++) fd[j] = (fp[j] - fm[j]) / (2 * STEP);
        assertThat(Derived.relErr(fd, rec.get(1).floats())).as(what + " J·t").isLessThan(1e-6);
        // duality with reverse mode seeded by v
        Tensor v = Derived.random(rec.get(1).type(), new SplittableRandom(11));
        Program rev = Programs.checked(what + ".kina", src.replaceAll("with forwardMode\\([^)]*\\)", "with reverseMode"));
        List<Tensor> g = Programs.flatten(new Interpreter(in, new Oracle(v)).run(rev));
        List<double[]> ts = new ArrayList<>();
        for (String w : floating) ts.add(in.get("tan_" + w).floats());
        assertDual(v, rec.get(1), g.subList(1, g.size()), ts, what);
    }

    // ---- the surface form -------------------------------------------------------------------------

    static final String T = "tensor<F64, [2, 3], @host>";

    @Test void theJvpProgramHasNoBackwardAndReadsBack() {
        String src = """
                let f = fn(x: %1$s, ids: tensor<I64, [2], @host>, w: %1$s) -> %1$s {
                  let y = x * w in
                  let z = y.tanh() in
                  z
                } in
                let x = %1$s in
                let ids = tensor<I64, [2], @host> in
                let w = %1$s in
                let tx = %1$s in
                let tw = %1$s in
                handle f(x, ids, w) with forwardMode(tx, tw)
                """.formatted(T);
        Program t = TransformAd.transform(Programs.checked("t.kina", src));
        String printed = Printer.print(t);
        assertThat(printed).contains("let f_jvp = fn(x: " + T + ", ids: tensor<I64, [2], @host>, w: " + T + ", dot_x: " + T + ", dot_w: " + T + ")",
                "f_jvp(x, ids, w, tx, tw)", "(z, dot_z)").doesNotContain("seed", "g_z");
        Program again = Programs.checked("t.kina", printed);
        assertThat(Printer.print(again)).isEqualTo(printed);
        String roundTrip = Printer.print(Programs.checked("t.kina", src));
        assertThat(roundTrip).contains("handle f(x, ids, w) with forwardMode(tx, tw)");
    }

    @Test void tangentsMustMatchTheFloatingParameters() {
        String base = """
                let f = fn(x: %1$s, ids: tensor<I64, [2], @host>) -> %1$s {
                  let y = x.exp() in
                  y
                } in
                let x = %1$s in
                let ids = tensor<I64, [2], @host> in
                let tx = tensor<F64, [3, 2], @host> in
                let r = handle f(x, ids) with forwardMode(%2$s) in
                r
                """;
        assertThatThrownBy(() -> Programs.checked("t.kina", base.formatted(T, "tx, ids"))).isInstanceOf(TypeError.class)
                .hasMessage("let r: handle: forwardMode needs one tangent per floating parameter of f (1: [" + T + "]), got 2; "
                        + "discrete parameters take none");
        assertThatThrownBy(() -> Programs.checked("t.kina", base.formatted(T, "tx"))).isInstanceOf(TypeError.class)
                .hasMessage("let r: handle: tangent 1 of f (tx) has type tensor<F64, [3, 2], @host>, its floating parameter has type " + T);
        assertThatThrownBy(() -> kina.syntax.Parser.parse("t.kina", "let r = handle f(x) with sideways in r"))
                .hasMessage("expected 'reverseMode' or 'forwardMode(tangents…)' but found 'sideways'");
    }

    /** Forward over reverse: the JVP of a gradient along v is the Hessian-vector product reverse over reverse gives. */
    @Test void forwardOverReverseGivesTheHessianVectorProduct() {
        String src = """
                let f = fn(x: %1$s) -> %1$s {
                  let y = x.sigmoid() in
                  let z = y * x in
                  z
                } in
                let grad = fn(x: %1$s) -> %1$s {
                  let (z, gx) = handle f(x) with reverseMode in
                  gx
                } in
                let x = %1$s in
                let v = %1$s in
                handle grad(x) with forwardMode(v)
                """.formatted(T);
        Map<String, Tensor> in = SecondOrderTest.xs("x", "v");
        List<Tensor> fwd = SecondOrderTest.both(src, in);
        String rr = """
                let f = fn(x: %1$s) -> %1$s {
                  let y = x.sigmoid() in
                  let z = y * x in
                  z
                } in
                let dot = fn(x: %1$s, v: %1$s) -> %1$s {
                  let (z, gx) = handle f(x) with reverseMode in
                  let d = gx * v in
                  d
                } in
                let x = %1$s in
                let v = %1$s in
                let (d, hv, gv) = handle dot(x, v) with reverseMode in
                hv
                """.formatted(T);
        List<Tensor> rev = SecondOrderTest.both(rr, in);
        assertThat(Derived.relErr(fwd.get(1).floats(), rev.getFirst().floats())).isLessThan(1e-14);
    }
}
