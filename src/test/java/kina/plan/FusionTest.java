package kina.plan;

import static kina.plan.PlanTest.assertBits;
import static kina.plan.PlanTest.interpret;
import static kina.plan.PlanTest.randomInputs;
import static kina.plan.PlanTest.trainStep;
import static kina.plan.PlanTest.transformed;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import kina.kernels.Parallel;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Program;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Elementwise fusion: the fused plan equals the interpreter bit for bit, and really fuses. */
class FusionTest {

    @AfterAll static void restoreThreads() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    /**
     * A chain with several outputs (u, v, the reshaped w), a value read inside and outside (t, by a
     * sum that closes the group; q then reads t and w from their buffers), broadcasts of a scalar,
     * of a [64, 1] column and of a [1, 1024] row, and every fused instruction.
     */
    static final String CHAIN = """
            let x = tensor<F32, [64, 1024], @host> in
            let y = tensor<F32, [64, 1024], @host> in
            let s = tensor<F32, [1, 1], @host> in
            let r = tensor<F32, [64, 1], @host> in
            let b = tensor<F32, [1, 1024], @host> in
            let t = x * s.broadcast([64, 1024]) in
            let u = t + y * b.broadcast([64, 1024]) in
            let v = (u * u).sqrt() - r.broadcast([64, 1024]) in
            let w = -(v / (t.maximum(y) + s.broadcast([64, 1024]))) in
            let ts = t.sum(axis=1, keepdims=true) in
            let q = w * t - ts.broadcast([64, 1024]) in
            let z = w.reshape([65536]) in
            (u, z, ts, v, q, (x - y).sqrt())
            """;

    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"F32", "F64"})
    void aFusedChainEqualsTheInterpreterBitForBit(DType d) {
        Program p = transformed("chain", d == DType.F64 ? CHAIN.replace("F32", "F64") : CHAIN);
        Plan fused = Plan.compile(p), plain = Plan.compile(p, Plan.UNFUSED);
        assertThat(fused.fusedSteps()).isGreaterThanOrEqualTo(10);
        assertThat(fused.steps()).isLessThan(plain.steps());
        assertThat(fused.arenaBytes()).isLessThan(plain.arenaBytes());
        for (int threads : new int[] {1, 2}) {
            Parallel.setThreads(threads);
            for (int run = 0; run < 3; run++) {
                Map<String, Tensor> in = randomInputs(fused, 10 * threads + run, 4);
                List<Tensor> want = interpret(p, in);
                assertBits(fused.run(in), want, d + " fused, threads " + threads + " run " + run);
                assertBits(plain.run(in), want, d + " unfused, threads " + threads + " run " + run);
            }
        }
    }

    /** Scalar leaves on either side of every binary step (the vector-scalar loops), with a lane tail. */
    @Test void scalarOperandsOnEitherSideEqualTheInterpreterBitForBit() {
        Program p = transformed("sides", """
                let x = tensor<F32, [3, 1027], @host> in
                let s = tensor<F32, [1, 1], @host> in
                let t = s.broadcast([3, 1027]) in
                let a = (x + t) * t - t in
                let b = t - (t / a).maximum(t) in
                let c = (t * b + t) / t in
                (a, b, c.maximum(t) - t.maximum(x) / x, (t - x).maximum(t).sqrt())
                """);
        Plan fused = Plan.compile(p);
        assertThat(fused.fusedSteps()).isGreaterThanOrEqualTo(10);
        for (int threads : new int[] {1, 2}) {
            Parallel.setThreads(threads);
            for (int run = 0; run < 3; run++) {
                Map<String, Tensor> in = randomInputs(fused, 100 * threads + run, 4);
                assertBits(fused.run(in), interpret(p, in), "threads " + threads + " run " + run);
            }
        }
    }

    /** Broadcasts whose runs end inside a 1024-element chunk: [1, 700, 1], [1, 700, 3] and [40, 1, 1] over [40, 700, 3], F32 and F64. */
    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"F32", "F64"})
    void broadcastRunsThatWrapInsideAChunkEqualTheInterpreter(DType d) {
        String t = d.name();
        Program p = transformed("wrap", """
                let x = tensor<%1$s, [40, 700, 3], @host> in
                let a = tensor<%1$s, [1, 700, 1], @host> in
                let b = tensor<%1$s, [1, 700, 3], @host> in
                let c = tensor<%1$s, [40, 1, 1], @host> in
                let y = x * a.broadcast([40, 700, 3]) + b.broadcast([40, 700, 3]) in
                let z = y - c.broadcast([40, 700, 3]) * x in
                (y, z)
                """.formatted(t));
        Plan fused = Plan.compile(p);
        assertThat(fused.fusedSteps()).isGreaterThanOrEqualTo(4);
        for (int threads : new int[] {1, 2}) {
            Parallel.setThreads(threads);
            Map<String, Tensor> in = randomInputs(fused, 7 * threads, 4);
            assertBits(fused.run(in), interpret(p, in), t + " wrap, threads " + threads);
        }
    }

    @Test void aLoneStepWithoutBroadcastsIsNotFused() {
        Program p = transformed("one", """
                let x = tensor<F32, [3], @host> in
                let y = tensor<F32, [3], @host> in
                (x + y).exp()
                """);
        Plan plan = Plan.compile(p);
        assertThat(plan.fusedSteps()).isZero();
        assertThat(plan.steps()).isEqualTo(2);
    }

    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"F32", "F64"})
    void uniformFillsAreReadAsScalarsNotStreamed(DType d) {
        String t = "tensor<" + d + ", [5, 37], @host>";
        Program p = transformed("fills " + d, """
                let x = %1$s in
                let y = %1$s in
                let a = x * fill(%1$s, 0.5) + y in
                let b = a - fill(%1$s, -0.0) in
                let c = y * fill(%1$s, 3.0) in
                (b, c)
                """.formatted(t));
        Plan plan = Plan.compile(p);
        assertThat(plan.fusedInputStreams()).as("x and y for a, b; y for the lone c: no fill streamed").isEqualTo(3);
        for (int threads : new int[] {1, 2}) {
            Parallel.setThreads(threads);
            for (int run = 0; run < 2; run++) {
                Map<String, Tensor> in = run == 0 ? randomInputs(plan, 3 * threads, 4) : SoftmaxGradTest.special(plan, threads);
                SoftmaxGradTest.check(plan.run(in), interpret(p, in), run == 1, "fills " + d + ", threads " + threads + " run " + run);
            }
        }
    }

    @Test void aScalarBroadcastReadElsewhereIsStillMaterialised() {
        Program p = transformed("b", """
                let x = tensor<F32, [2, 3], @host> in
                let s = tensor<F32, [1, 1], @host> in
                let sb = s.broadcast([2, 3]) in
                let y = x * sb + x in
                (y, sb.exp())
                """);
        Plan plan = Plan.compile(p);
        assertThat(plan.fusedSteps()).isEqualTo(2);
        assertThat(plan.steps()).isEqualTo(3);                  // broadcast, exp, the fused mul+add
        Map<String, Tensor> in = randomInputs(plan, 5, 4);
        assertBits(plan.run(in), interpret(p, in), "materialised broadcast");
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny", "small"})
    void theTrainStepsOptimizerFuses(String config) {
        Program p = trainStep(config);
        Plan fused = Plan.compile(p), plain = Plan.compile(p, Plan.UNFUSED);
        System.out.printf("%s train step: unfused %d steps, arena %,d bytes (peak live %,d); fused %d steps"
                        + " (%d steps in fused passes), arena %,d bytes (peak live %,d)%n", config, plain.steps(),
                plain.arenaBytes(), plain.peakLiveBytes(), fused.steps(), fused.fusedSteps(), fused.arenaBytes(), fused.peakLiveBytes());
        assertThat(fused.steps()).isLessThan(plain.steps() / 2);
        // never above the unfused plan's (small: equal since swiglu's backward shares x·σ(x) between
        // its two cotangents, so that product is a buffer, not a register of a pass)
        assertThat(fused.peakLiveBytes()).isLessThanOrEqualTo(plain.peakLiveBytes());
        assertThat(fused.arenaBytes()).isLessThan(plain.arenaBytes() * 11 / 10);    // best fit: layouts vary a little
        assertThat(fused.nativeKinds()).containsEntry("elementwise:F32", true);
    }
}
