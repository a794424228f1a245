package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kina.ad.TransformAd;
import kina.io.Npy;
import kina.ir.DType;
import kina.ir.Program;
import kina.ir.TensorType;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * Gradients of gradients, written as a nested handle: for every instruction (the gradcheck cases)
 * and for the NLL and StoryLM-0 Hessian-vector products of examples/, the recorded second-order
 * program equals the oracle's eager reading bit for bit (F32 and F64), and H·v agrees with
 * central finite differences of the first gradient along v in F64 (relative error below 1e-5).
 */
class SecondOrderTest {
    static final double STEP = 1e-5, TOL = 1e-5;

    @Provide Arbitrary<String> ops() { return Arbitraries.of(GradCheckTest.OPS); }

    @Property(tries = 40)
    void everyInstructionsSecondOrderIsRightAndRecordedEqualsOracle(@ForAll("ops") String op, @ForAll long seed) {
        for (DType dt : new DType[] {DType.F32, DType.F64}) {
            GradCheckTest.Case c = GradCheckTest.Case.make(op, new SplittableRandom(seed), dt);
            Program p = Derived.hvp(c);
            Map<String, Tensor> in = Derived.withDirections(c, "dir_", new SplittableRandom(seed ^ 0x5DEECE66DL));
            List<Tensor> rec = Programs.recorded(p, in);
            AdExamplesTest.assertBits(rec, Programs.oracle(p, in), op + " " + dt + " second order");
            // the cotangents of the directions are the first gradient, the same bits as f's own
            int k = Derived.floating(c).size();
            List<Tensor> first = Programs.recorded(c.program, c.inputs);
            AdExamplesTest.assertBits(rec.subList(1 + k, 1 + 2 * k), first.subList(1, 1 + k), op + " " + dt + " first gradient");
            if (dt == DType.F64) assertHvpMatchesFiniteDifferences(c, p, in, rec, op);
        }
    }

    @Test void everyInstructionOnFixedSeeds() {
        for (String op : GradCheckTest.OPS)
            for (long seed = 0; seed < 4; seed++) everyInstructionsSecondOrderIsRightAndRecordedEqualsOracle(op, seed * 7919 + 17);
    }

    /** rec = (s, H·dir per floating parameter, g per floating parameter); g at x ± h·dir, differenced. */
    static void assertHvpMatchesFiniteDifferences(GradCheckTest.Case c, Program p, Map<String, Tensor> in, List<Tensor> rec, String what) {
        int k = Derived.floating(c).size();
        Program t = TransformAd.transform(p);
        List<Tensor> plus = Programs.flatten(new Interpreter(Derived.shifted(c, in, "dir_", STEP)).run(t));
        List<Tensor> minus = Programs.flatten(new Interpreter(Derived.shifted(c, in, "dir_", -STEP)).run(t));
        for (int i = 0; i < k; i++) {
            double[] hv = rec.get(1 + i).floats(), fd = new double[hv.length];
            double[] gp = plus.get(1 + k + i).floats(), gm = minus.get(1 + k + i).floats();
            for (int j = 0; j < fd.length; j++) fd[j] = (gp[j] - gm[j]) / (2 * STEP);
            assertThat(Derived.relErr(fd, hv)).as("%s: H·v for %s: finite differences %s vs %s", what,
                    Derived.floating(c).get(i).name(), java.util.Arrays.toString(fd), java.util.Arrays.toString(hv)).isLessThan(TOL);
        }
    }

    // ---- the examples ----------------------------------------------------------------------------

    /** examples/inputs/DIR/NAME.npy for each name, retyped to {@code dt}. */
    static Map<String, Tensor> exampleInputs(String dir, DType dt, String... names) {
        Map<String, Tensor> in = new HashMap<>();
        for (String n : names) {
            Tensor t = Npy.read(Path.of("examples/inputs", dir, n + ".npy"));
            in.put(n, t.isFloating() ? Tensor.ofFloats(t.type().withDType(dt), t.floats().clone()) : t);
        }
        return in;
    }

    static final String[] STORYLM0_PARAMS = {"emb", "mask", "scale", "wq", "wk", "wv", "wo", "lm_head"};

    static Map<String, Tensor> storylm0Inputs(DType dt) {
        String[] names = new String[2 + 2 * STORYLM0_PARAMS.length];
        names[0] = "token_ids";
        names[1] = "targets";
        for (int i = 0; i < STORYLM0_PARAMS.length; i++) {
            names[2 + i] = STORYLM0_PARAMS[i];
            names[2 + STORYLM0_PARAMS.length + i] = "v_" + STORYLM0_PARAMS[i];
        }
        return exampleInputs("storylm0", dt, names);
    }

    /** in with each named parameter p moved by h · v_p (v for the NLL's logits). */
    static Map<String, Tensor> along(Map<String, Tensor> in, Map<String, String> dirOf, double h) {
        Map<String, Tensor> out = new HashMap<>(in);
        dirOf.forEach((p, d) -> {
            double[] x = in.get(p).floats().clone(), v = in.get(d).floats();
            for (int i = 0; i < x.length; i++) x[i] += h * v[i];
            out.put(p, Tensor.ofFloats(in.get(p).type(), x));
        });
        return out;
    }

    @Test void theNllHessianVectorProductExample() {
        for (DType dt : new DType[] {DType.F32, DType.F64}) {
            Program p = Programs.checked("examples/nll_hvp.kina", Programs.source("examples/nll_hvp.kina", dt));
            Map<String, Tensor> in = exampleInputs("nll", dt, "logits", "targets", "v");
            List<Tensor> rec = Programs.recorded(p, in);                 // (H v, gradient)
            AdExamplesTest.assertBits(rec, Programs.oracle(p, in), "nll_hvp " + dt);
            if (dt != DType.F64) continue;
            // The gradient is softmax − onehot, its Hessian diag(p) − p pᵀ per row: H v = p ⊙ (v − Σ p v).
            Tensor sm = RowKernels.softmax(in.get("logits"), 2);
            double[] v = in.get("v").floats(), s = sm.floats(), hv = rec.get(0).floats();
            for (int r = 0; r < 4; r++) {
                double pv = 0;
                for (int c = 0; c < 8; c++) pv += s[r * 8 + c] * v[r * 8 + c];
                for (int c = 0; c < 8; c++)
                    assertThat(hv[r * 8 + c]).isCloseTo(s[r * 8 + c] * (v[r * 8 + c] - pv), org.assertj.core.data.Offset.offset(1e-15));
            }
            Program t = TransformAd.transform(p);
            double[] gp = Programs.flatten(new Interpreter(along(in, Map.of("logits", "v"), STEP)).run(t)).get(1).floats();
            double[] gm = Programs.flatten(new Interpreter(along(in, Map.of("logits", "v"), -STEP)).run(t)).get(1).floats();
            double[] fd = new double[gp.length];
            for (int j = 0; j < fd.length; j++) fd[j] = (gp[j] - gm[j]) / (2 * STEP);
            assertThat(Derived.relErr(fd, hv)).isLessThan(TOL);
        }
    }

    @Test void theStoryLm0HessianVectorProductExample() {
        for (DType dt : new DType[] {DType.F32, DType.F64}) {
            Program p = Programs.checked("examples/storylm0_hvp.kina", Programs.source("examples/storylm0_hvp.kina", dt));
            Map<String, Tensor> in = storylm0Inputs(dt);
            List<Tensor> rec = Programs.recorded(p, in);                 // (H v per parameter, then the gradient)
            AdExamplesTest.assertBits(rec, Programs.oracle(p, in), "storylm0_hvp " + dt);
            assertThat(rec).hasSize(2 * STORYLM0_PARAMS.length);
            if (dt != DType.F64) continue;
            Map<String, String> dirOf = new HashMap<>();
            for (String w : STORYLM0_PARAMS) dirOf.put(w, "v_" + w);
            Program t = TransformAd.transform(p);
            List<Tensor> plus = Programs.flatten(new Interpreter(along(in, dirOf, STEP)).run(t));
            List<Tensor> minus = Programs.flatten(new Interpreter(along(in, dirOf, -STEP)).run(t));
            int n = STORYLM0_PARAMS.length;
            boolean anyNonZero = false;
            for (int i = 0; i < n; i++) {
                double[] hv = rec.get(i).floats(), gp = plus.get(n + i).floats(), gm = minus.get(n + i).floats();
                double[] fd = new double[hv.length];
                for (int j = 0; j < fd.length; j++) fd[j] = (gp[j] - gm[j]) / (2 * STEP);
                for (double x : hv) anyNonZero |= Math.abs(x) > 1e-3;
                assertThat(Derived.relErr(fd, hv)).as("H·v for %s", STORYLM0_PARAMS[i]).isLessThan(TOL);
            }
            assertThat(anyNonZero).isTrue();
        }
    }

    // ---- what may stand in a differentiated body ----------------------------------------------------

    static final String T = "tensor<F64, [2, 3], @host>";

    static List<Tensor> both(String src, Map<String, Tensor> in) {
        Program p = Programs.checked("t.kina", src);
        List<Tensor> rec = Programs.recorded(p, in);
        AdExamplesTest.assertBits(rec, Programs.oracle(p, in), src);
        return rec;
    }

    static Map<String, Tensor> xs(String... names) {
        SplittableRandom rng = new SplittableRandom(7);
        Map<String, Tensor> in = new HashMap<>();
        for (String n : names) in.put(n, Derived.random(TensorType.host(DType.F64, 2, 3), rng));
        return in;
    }

    /** A call, a destructured tuple from a fn, and a tuple destructured in place give the bits of the inline body. */
    @Test void callsAndTuplesAreDifferentiatedAsTheirInlineBodies() {
        String inline = """
                let f = fn(x: %1$s, w: %1$s) -> %1$s {
                  let a = x * w in
                  let b = a.exp() in
                  let c = b * x in
                  c
                } in
                let x = %1$s in
                let w = %1$s in
                handle f(x, w) with reverseMode
                """.formatted(T);
        String called = """
                let prod = fn(p: %1$s, q: %1$s) -> %1$s {
                  let m = p * q in
                  m
                } in
                let both = fn(a: %1$s, x: %1$s) -> (%1$s, %1$s) {
                  let e = a.exp() in
                  (e, x)
                } in
                let f = fn(x: %1$s, w: %1$s) -> %1$s {
                  let a = prod(x, w) in
                  let (b, x2) = both(a, x) in
                  let (b2, x3) = (b, x2) in
                  let c = b2 * x3 in
                  c
                } in
                let x = %1$s in
                let w = %1$s in
                handle f(x, w) with reverseMode
                """.formatted(T);
        Map<String, Tensor> in = xs("x", "w");
        AdExamplesTest.assertBits(both(called, in), both(inline, in), "inlined");
    }

    /**
     * Gradients to any depth: f = Σ exp(x); the nested handles give ∇f = exp(x), then
     * ∇⟨∇f, v⟩ = exp(x)·v, then ∇⟨∇⟨∇f, v⟩, w⟩ = exp(x)·v·w, each a handle of a fn holding a handle.
     */
    @Test void gradientsOfGradientsToAnyDepth() {
        String src = """
                let f = fn(x: %1$s) -> %1$s {
                  let y = x.exp() in
                  y
                } in
                let g1 = fn(x: %1$s, v: %1$s) -> %1$s {
                  let (y, gx) = handle f(x) with reverseMode in
                  let d = gx * v in
                  d
                } in
                let g2 = fn(x: %1$s, v: %1$s, w: %1$s) -> %1$s {
                  let (d, hx, hv) = handle g1(x, v) with reverseMode in
                  let e = hx * w in
                  e
                } in
                let x = %1$s in
                let v = %1$s in
                let w = %1$s in
                let (e, tx, tv, tw) = handle g2(x, v, w) with reverseMode in
                (tx, tv, tw)
                """.formatted(T);
        Map<String, Tensor> in = xs("x", "v", "w");
        List<Tensor> out = both(src, in);
        double[] x = in.get("x").floats(), v = in.get("v").floats(), w = in.get("w").floats();
        for (int j = 0; j < x.length; j++) {
            double e = StrictMath.exp(x[j]);
            assertThat(out.get(0).floats()[j]).isCloseTo(e * v[j] * w[j], org.assertj.core.data.Offset.offset(1e-14));
            assertThat(out.get(1).floats()[j]).isCloseTo(e * w[j], org.assertj.core.data.Offset.offset(1e-14));
            assertThat(out.get(2).floats()[j]).isCloseTo(e * v[j], org.assertj.core.data.Offset.offset(1e-14));
        }
        String printed = kina.ir.Printer.print(TransformAd.transform(Programs.checked("t.kina", src)));
        Program again = Programs.checked("t.kina", printed);
        AdExamplesTest.assertBits(Programs.flatten(new Interpreter(in).run(again)), out, "reparsed third order");
    }

    /** A fn that holds a handle, called (not handled) from the differentiated fn. */
    @Test void aCallOfAFnHoldingAHandleIsDifferentiated() {
        String viaCall = """
                let f = fn(x: %1$s) -> %1$s {
                  let y = x.tanh() in
                  y
                } in
                let grad_dot = fn(x: %1$s, v: %1$s) -> %1$s {
                  let (y, gx) = handle f(x) with reverseMode in
                  let d = gx * v in
                  d
                } in
                let outer = fn(x: %1$s, v: %1$s) -> %1$s {
                  let d = grad_dot(x, v) in
                  d
                } in
                let x = %1$s in
                let v = %1$s in
                handle outer(x, v) with reverseMode
                """.formatted(T);
        Map<String, Tensor> in = xs("x", "v");
        List<Tensor> out = both(viaCall, in);
        double[] x = in.get("x").floats(), v = in.get("v").floats();
        for (int j = 0; j < x.length; j++) {            // d/dx (1 − tanh²x) v = −2 tanh x (1 − tanh²x) v
            double t = StrictMath.tanh(x[j]);
            assertThat(out.get(1).floats()[j]).isCloseTo(-2 * t * (1 - t * t) * v[j], org.assertj.core.data.Offset.offset(1e-14));
            assertThat(out.get(2).floats()[j]).isCloseTo(1 - t * t, org.assertj.core.data.Offset.offset(1e-15));
        }
    }

    /** A pass rule broken inside a called fn is refused at the callee's let, by the callee's source position. */
    @Test void aRefusalInsideACalledFnNamesTheCalleesLet() {
        String src = """
                let h = fn(p: %1$s) -> %1$s {
                  let q = p.exp().log() in
                  q
                } in
                let f = fn(x: %1$s) -> %1$s {
                  let z = h(x) in
                  z
                } in
                let x = %1$s in
                handle f(x) with reverseMode
                """.formatted(T);
        Program p = Programs.checked("t.kina", src);
        kina.ad.AdError e = org.assertj.core.api.Assertions.catchThrowableOfType(kina.ad.AdError.class, () -> TransformAd.transform(p));
        assertThat(e.oneLine()).startsWith("t.kina:2:").contains("split it into one let per operation");
        Map<String, Tensor> in = xs("x");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new Interpreter(in, new Oracle()).run(p))
                .hasMessageContaining("split it into one let per operation");
    }
}
