package kina.plan;

import static kina.plan.PlanTest.assertBits;
import static kina.plan.PlanTest.interpret;
import static kina.plan.PlanTest.randomInputs;
import static kina.plan.PlanTest.transformed;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import kina.eval.Tensor;
import kina.ir.Program;
import org.junit.jupiter.api.Test;

/** Constants: fills of one type and value share one buffer; the results are still the interpreter's. */
class PlanConstantsTest {
    static final String FILLS = """
            let x = tensor<F32, [64, 256], @host> in
            let a = x * fill(tensor<F32, [64, 256], @host>, 0.5) in
            let b = x + fill(tensor<F32, [64, 256], @host>, 0.5) in
            let c = x - fill(tensor<F32, [64, 256], @host>, 2.0) in
            let d = x.sum(axis=1, keepdims=true) * fill(tensor<F32, [64, 1], @host>, 0.5) in
            (a, b, c, d)
            """;

    @Test void equalFillsShareOneBuffer() {
        Program p = transformed("fills", FILLS);
        Plan plan = Plan.compile(p, Plan.UNFUSED);
        // 0.5 over [64, 256] once, 2.0 over [64, 256], 0.5 over [64, 1]: three buffers, not four.
        assertThat(plan.constantBytes()).isEqualTo(4L * (64 * 256 + 64 * 256 + 64));
        Map<String, Tensor> in = randomInputs(plan, 7, 4);
        List<Tensor> want = interpret(p, in);
        for (int run = 0; run < 2; run++) assertBits(plan.run(in), want, "fills");
        assertThat(plan.constantBuffers()).isEqualTo(3);             // the buffers the kernels were bound to
    }
}
