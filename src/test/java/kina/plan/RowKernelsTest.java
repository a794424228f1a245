package kina.plan;

import static kina.plan.PlanTest.assertBitsAtOneAndTwoThreads;
import static kina.plan.PlanTest.transformed;

import kina.kernels.Parallel;
import kina.ir.Program;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The row kernels split over threads (PlanKernels.rows and the column blocks of a middle-axis sum):
 * shapes large enough to run in parallel, with row counts and widths that leave ragged last chunks,
 * equal the interpreter bit for bit at 1 and 2 threads. rope rotates 16 of each head's 24 dims (the
 * rest pass through, copied per chunk); the transpose and broadcast are strided copies.
 */
class RowKernelsTest {

    @AfterAll static void restoreThreads() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    static final String ROWS = """
            let x = tensor<F32, [5003, 70], @host> in
            let c = tensor<F32, [4, 67, 3001], @host> in
            let m = tensor<F32, [31, 50, 203], @host> in
            let h = tensor<F32, [2, 1501, 96], @host> in
            let w = tensor<F32, [96], @host> in
            let cs = tensor<F32, [1501, 8], @host> in
            let sn = tensor<F32, [1501, 8], @host> in
            let rowSum = x.sum(axis=1, keepdims=true) in
            let colSum = c.sum(axis=1) in
            let sm = x.softmax(axis=1) in
            let lsm = x.log_softmax(axis=1) in
            let midSm = m.softmax(axis=1) in
            let n = h.rmsnorm(w, eps=1e-5) in
            let r = h.rope(cs, sn, heads=4, rotary=16) in
            let t = x.transpose([1, 0]) in
            let b = rowSum.broadcast([5003, 70]) in
            let z = c.sum(axis=0) in
            (rowSum, colSum, sm, lsm, midSm, n, r, t, b, z)
            """;

    @Test
    void rowKernelsOnTwoThreadsEqualTheInterpreter() {
        Program p = transformed("rows", ROWS);
        Plan plan = Plan.compile(p);
        assertBitsAtOneAndTwoThreads(plan, p, t -> 5L + t, "");
    }
}
