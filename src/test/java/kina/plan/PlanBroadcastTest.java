package kina.plan;

import java.util.Map;
import java.util.SplittableRandom;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Program;
import org.junit.jupiter.api.Test;

/**
 * A broadcast that adds leading axes ([M, K] → [B, M, K], as NumPy does) runs in the plan with the
 * interpreter's bits: as its own step, read by a fused elementwise chain, and in its VJP (a sum
 * over the new axes), F32 and F64; so does the rank-1 take_along_axis gradient.
 */
class PlanBroadcastTest {
    static final String SRC = """
            let f = fn(x: tensor<F32, [2, 3, 4], @host>, w: tensor<F32, [3, 4], @host>, b: tensor<F32, [4], @host>) -> tensor<F32, [2, 3, 4], @host> {
              let wb = w.broadcast([2, 3, 4]) in
              let bb = b.broadcast([2, 3, 4]) in
              let xw = x * wb in
              let y = xw + bb in
              y
            } in
            let x = tensor<F32, [2, 3, 4], @host> in
            let w = tensor<F32, [3, 4], @host> in
            let b = tensor<F32, [4], @host> in
            let (y, g_x, g_w, g_b) = handle f(x, w, b) with reverseMode in
            let wide = w.broadcast([5, 2, 3, 4]) in
            (y, g_x, g_w, g_b, wide)
            """;

    @Test void aRankGrowingBroadcastAndItsGradientMatchTheInterpreter() {
        for (DType dt : new DType[] {DType.F32, DType.F64}) {
            String src = dt == DType.F64 ? SRC.replace("F32", "F64") : SRC;
            Program p = PlanTest.transformed("bc.kina", src);
            Plan plan = Plan.compile(p);
            SplittableRandom rng = new SplittableRandom(3);
            Map<String, Tensor> in = Map.of("x", random(dt, rng, 2, 3, 4), "w", random(dt, rng, 3, 4), "b", random(dt, rng, 4));
            PlanTest.assertBits(plan.run(in), PlanTest.interpret(p, in), "broadcast " + dt);
        }
    }

    /** take_along_axis of rank 1 (a rank-0 index) and its adjoint scatter_along_axis at rank 1, planned. */
    @Test void aRankOneTakeAlongAxisGradientMatchesTheInterpreter() throws java.io.IOException {
        String src = java.nio.file.Files.readString(java.nio.file.Path.of("src/test/resources/nll_row.kina")).replace("F64", "F32");
        Program p = PlanTest.transformed("row.kina", src);
        Map<String, Tensor> in = Map.of("logits", random(DType.F32, new SplittableRandom(4), 8),
                "target", Tensor.ofInts(kina.ir.TensorType.host(DType.I64), new long[] {5}));
        PlanTest.assertBits(Plan.compile(p).run(in), PlanTest.interpret(p, in), "rank-1 nll");
    }

    private static Tensor random(DType dt, SplittableRandom rng, long... dims) {
        double[] d = new double[(int) kina.ir.Shape.of(dims).vol()];
        for (int i = 0; i < d.length; i++) d[i] = dt == DType.F32 ? (float) rng.nextDouble(-1, 1) : rng.nextDouble(-1, 1);
        return Tensor.of(dt, dims, d);
    }
}
