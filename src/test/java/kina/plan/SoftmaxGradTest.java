package kina.plan;

import static kina.plan.PlanTest.assertBits;
import static kina.plan.PlanTest.assertBitsAtOneAndTwoThreads;
import static kina.plan.PlanTest.interpret;
import static kina.plan.PlanTest.randomInputs;
import static kina.plan.PlanTest.transformed;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import kina.kernels.Parallel;
import kina.eval.Tensor;
import kina.ir.Program;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Plan.softmaxGrads: the steps m = p·dp, d = Σ m (last axis), ds = p·(dp − d) run as one row pass
 * ({@code softmax_grad}) and equal the interpreter bit for bit, special values included; patterns
 * that differ in any part keep their steps.
 */
class SoftmaxGradTest {

    @AfterAll static void restoreThreads() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    /** The pattern over [rows, c]: {@code dot} and {@code scale} are the two products' spellings, {@code out} the outputs. */
    static String pattern(int rows, int c, String dot, String scale, String out) {
        String t = "tensor<F32, [" + rows + ", " + c + "], @host>";
        return "let p = " + t + " in\nlet dp = " + t + " in\n"
                + "let m = " + dot + " in\n"
                + "let d = m.sum(axis=1, keepdims=true) in\n"
                + "let s = dp - d.broadcast([" + rows + ", " + c + "]) in\n"
                + "let ds = " + scale + " in\n" + out + "\n";
    }

    static Stream<Arguments> matching() {
        return Stream.of(
                Arguments.of("7 rows (4 + 3), 13 wide (a lane tail)", pattern(7, 13, "p * dp", "p * s", "ds")),
                Arguments.of("operands swapped in both products", pattern(9, 8, "dp * p", "s * p", "ds")),
                Arguments.of("d read outside (written too)", pattern(5, 17, "p * dp", "p * s", "(ds, d)")),
                Arguments.of("one column", pattern(6, 1, "p * dp", "p * s", "(ds, d.sum(axis=0))")),
                Arguments.of("an empty axis: d = +0.0", pattern(5, 0, "p * dp", "p * s", "(ds, d)")),
                Arguments.of("softmax under reverseMode", """
                        let f = fn(x: tensor<F32, [6, 37], @host>, w: tensor<F32, [6, 37], @host>) -> tensor<F32, [6, 37], @host> {
                          let y = x.softmax(axis=1) in
                          let z = y * w in
                          z
                        } in
                        let x = tensor<F32, [6, 37], @host> in
                        let w = tensor<F32, [6, 37], @host> in
                        handle f(x, w) with reverseMode
                        """));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("matching")
    void theRowPassEqualsTheInterpreterBitForBit(String what, String src) {
        Program p = transformed(what, src);
        Plan fused = Plan.compile(p), plain = Plan.compile(p, Plan.UNFUSED);
        assertThat(fused.nativeKinds()).as(what).containsKey("softmax_grad:F32");
        assertThat(plain.nativeKinds()).as(what).doesNotContainKey("softmax_grad:F32");
        for (int threads : new int[] {1, 2}) {
            Parallel.setThreads(threads);
            for (int run = 0; run < 3; run++) {
                boolean specials = run == 2;
                Map<String, Tensor> in = specials ? special(fused, 7L * threads) : randomInputs(fused, 10L * threads + run, 4);
                List<Tensor> want = interpret(p, in);
                check(fused.run(in), want, specials, what + ", threads " + threads + " run " + run);
                check(plain.run(in), want, specials, what + " unfused, threads " + threads + " run " + run);
            }
        }
    }

    /** Raw bits; with specials two NaNs match (a product of two NaNs keeps the operand the JIT puts first: PlanKernelsExpTest). */
    static void check(List<Tensor> got, List<Tensor> want, boolean specials, String what) {
        if (!specials) { assertBits(got, want, what); return; }
        assertThat(got).as(what).hasSameSizeAs(want);
        for (int i = 0; i < want.size(); i++) {
            Tensor g = got.get(i), w = want.get(i);
            assertThat(g.type()).as(what).isEqualTo(w.type());
            for (int j = 0; j < w.size(); j++) {
                double a = g.get(j), b = w.get(j);
                if (Double.isNaN(a) && Double.isNaN(b)) continue;
                if (Double.doubleToRawLongBits(a) != Double.doubleToRawLongBits(b))
                    throw new AssertionError(what + " output " + i + " element " + j + ": plan " + a + ", interpreter " + b);
            }
        }
    }

    /** Inputs with ±0.0, ±∞, NaN and huge values among gaussians (the products and the folds meet them). */
    static Map<String, Tensor> special(Plan plan, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        double[] odd = {0.0, -0.0, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NaN, 3e38, -3e38, 1e-45};
        Map<String, Tensor> in = new LinkedHashMap<>();
        plan.inputs().forEach((k, t) -> {
            double[] v = new double[(int) t.shape().vol()];
            for (int i = 0; i < v.length; i++) v[i] = r.nextInt(4) == 0 ? odd[r.nextInt(odd.length)] : r.nextGaussian();
            in.put(k, Tensor.ofFloats(t, v));
        });
        return in;
    }

    @Test
    void aLargeRowPassSplitAcrossThreadsEqualsTheInterpreter() {
        Program p = transformed("large", pattern(4099, 65, "p * dp", "p * s", "(ds, d)"));
        Plan fused = Plan.compile(p);
        assertBitsAtOneAndTwoThreads(fused, p, t -> t, "large, ");
    }

    static Stream<Arguments> differing() {
        return Stream.of(
                Arguments.of("m read twice", pattern(4, 8, "p * dp", "p * s", "(ds, m)")),
                Arguments.of("s read outside", pattern(4, 8, "p * dp", "p * s", "(ds, s)")),
                Arguments.of("scaled by dp, not p", pattern(4, 8, "p * dp", "dp * s", "ds")),
                Arguments.of("a sub with the operands swapped", pattern(4, 8, "p * dp", "p * s", "ds")
                        .replace("dp - d.broadcast([4, 8])", "d.broadcast([4, 8]) - dp")),
                Arguments.of("a sum over the first axis", """
                        let p = tensor<F32, [4, 8], @host> in
                        let dp = tensor<F32, [4, 8], @host> in
                        let d = (p * dp).sum(axis=0, keepdims=true) in
                        p * (dp - d.broadcast([4, 8]))
                        """),
                Arguments.of("F64", pattern(4, 8, "p * dp", "p * s", "ds").replace("F32", "F64")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("differing")
    void otherShapesOfTheStepsAreNotMerged(String what, String src) {
        Program p = transformed(what, src);
        Plan plan = Plan.compile(p);
        assertThat(plan.nativeKinds().keySet()).as(what).noneMatch(k -> k.startsWith("softmax_grad"));
        Map<String, Tensor> in = randomInputs(plan, 3, 4);
        assertBits(plan.run(in), interpret(p, in), what);
    }
}
