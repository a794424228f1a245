package kina.plan;

import static kina.plan.PlanTest.assertBitsAtOneAndTwoThreads;
import static kina.plan.PlanTest.transformed;
import static org.assertj.core.api.Assertions.assertThat;

import kina.ir.Program;
import kina.kernels.FusedCodeKnobs;
import kina.kernels.Parallel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Plans whose fused groups run as compiled loops (kina.kernels.FusedCode; their bits against the
 * chunked pass: kina.kernels.FusedCodeTest) equal the interpreter bit for bit at 1 and 2 threads.
 */
class FusedCodePlanTest {
    private final int saved = FusedCodeKnobs.minElements();

    @AfterEach void restore() {
        FusedCodeKnobs.minElements(saved);
        Parallel.setThreads(Runtime.getRuntime().availableProcessors());
    }

    /** The optimizer's and the backward's groups of a train step, all compiled, against the interpreter at 1 and 2 threads. */
    @Test void aTrainStepWithEveryGroupCompiledEqualsTheInterpreter() {
        FusedCodeKnobs.minElements(0);
        Program p = PlanTest.trainStep("tiny");
        Plan plan = Plan.compile(p);
        assertThat(plan.fusedSteps()).isGreaterThan(20);
        assertBitsAtOneAndTwoThreads(plan, p, t -> 31 * t, "tiny train step, ");
    }

    /**
     * Chains at 1 and 2 threads: over [300, 1032] with a column, a row and a scalar broadcast (whole
     * vectors only), and over [300, 1027] with a scalar (308,100 elements: the compiled loop, then
     * the chunked pass for the last 4).
     */
    @Test void largeChainsEqualTheInterpreterAtOneAndTwoThreads() {
        String whole = """
                let x = tensor<F32, [300, 1032], @host> in
                let y = tensor<F32, [300, 1032], @host> in
                let c = tensor<F32, [300, 1], @host> in
                let b = tensor<F32, [1, 1032], @host> in
                let s = tensor<F32, [1, 1], @host> in
                let u = (x * c.broadcast([300, 1032]) + y).maximum(b.broadcast([300, 1032])) in
                let v = (u * u + s.broadcast([300, 1032])).sqrt() / (y - x) in
                (u, -v)
                """;
        String tail = """
                let x = tensor<F32, [300, 1027], @host> in
                let y = tensor<F32, [300, 1027], @host> in
                let s = tensor<F32, [1, 1], @host> in
                let u = (x * s.broadcast([300, 1027]) + y).maximum(x) in
                let v = (u * u + s.broadcast([300, 1027])).sqrt() / (y - x) in
                (u, -v)
                """;
        for (String src : new String[] {whole, tail}) {
            Program p = transformed("large", src);
            Plan plan = Plan.compile(p);
            assertThat(plan.fusedSteps()).isGreaterThanOrEqualTo(6);
            assertBitsAtOneAndTwoThreads(plan, p, t -> 5 * t, "");
        }
    }
}
