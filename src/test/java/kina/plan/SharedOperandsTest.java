package kina.plan;

import static kina.plan.PlanTest.assertBitsAtOneAndTwoThreads;
import static kina.plan.PlanTest.trainStep;
import static kina.plan.PlanTest.transformed;
import static org.assertj.core.api.Assertions.assertThat;

import kina.kernels.Parallel;
import kina.ir.Program;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** Plan.sharedOperands: products with one left operand run as one, with the interpreter's bits. */
class SharedOperandsTest {

    @AfterAll static void restoreThreads() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    /**
     * q, k, v and y of one x (four products, different widths, ragged ones); xᵀ·g and xᵀ·u
     * (transposed A, shared), but not xᵀ·w, whose w is computed after them (it would have to move),
     * nor z = x·(x2ᵀ)ᵀ, whose B is read transposed (another layout).
     */
    static final String SRC = """
            let x = tensor<F32, [64, 96], @host> in
            let wq = tensor<F32, [96, 40], @host> in
            let wk = tensor<F32, [96, 40], @host> in
            let wv = tensor<F32, [96, 72], @host> in
            let g = tensor<F32, [64, 33], @host> in
            let u = tensor<F32, [64, 16], @host> in
            let x2 = tensor<F32, [96, 8], @host> in
            let q = x @ wq in
            let k = x @ wk in
            let v = x @ wv in
            let xt = x.transpose([1, 0]) in
            let dg = xt @ g in
            let du = xt @ u in
            let w = (dg.sum(axis=0, keepdims=true)).broadcast([64, 33]) in
            let dw = xt @ w in
            let y = x @ x2 in
            let x2t = x2.transpose([1, 0]) in
            let z = x @ x2t.transpose([1, 0]) in
            (q, k, v, dg, du, dw, y, z)
            """;

    @Test void sharedProductsEqualTheInterpreter() {
        Program p = transformed("shared", SRC);
        Plan plan = Plan.compile(p);
        assertThat(plan.sharedOperandProducts()).as("q, k, v, y; dg, du").isEqualTo(6);
        assertBitsAtOneAndTwoThreads(plan, p, threads -> 5 + threads, "");
    }

    /**
     * A B that is a constant bound after the first product (an inlined call's fill, found by the
     * program fuzzer) moves before the shared product with it: constants are slots, so it may.
     */
    @Test void aConstantBBoundLaterMovesBeforeTheSharedProduct() {
        Program p = transformed("shared_fill", """
                let a = tensor<F32, [2, 3], @host> in
                let b1 = fill(tensor<F32, [3, 3], @host>, 0.25) in
                let c1 = a @ b1 in
                let b2 = fill(tensor<F32, [3, 3], @host>, 0.5) in
                let c2 = a @ b2 in
                (c1, c2)
                """);
        Plan plan = Plan.compile(p);
        assertThat(plan.sharedOperandProducts()).isEqualTo(2);
        assertBitsAtOneAndTwoThreads(plan, p, threads -> 3 + threads, "");
    }

    /** The train step's q/k/v and gate/up products, forward and their weight gradients, share their operand. */
    @Test void theTrainStepSharesItsProjections() {
        Plan plan = Plan.compile(trainStep("tiny"));
        assertThat(plan.sharedOperandProducts()).isGreaterThanOrEqualTo(10);
    }
}
