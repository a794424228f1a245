package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import kina.ad.TransformAd;
import kina.check.Checker;
import kina.ir.DType;
import kina.ir.Program;
import kina.plan.Plan;
import kina.syntax.Parser;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Safe softmax: a row whose every logit is −inf (fully masked) gives probabilities +0 and
 * log-probabilities −inf, not NaN; the gradient of softmax and log_softmax for that row is exactly 0, and no NaN
 * reaches another row or the upstream parameter. Reference kernels, recorded program, oracle and
 * compiled plan agree bit for bit.
 */
class SafeSoftmaxTest {
    static final double NEG = Double.NEGATIVE_INFINITY;

    /** x [3, 8] (8 wide, so the plan's vector lanes run): row 1 fully masked, row 2 half masked. */
    static Map<String, Tensor> inputs(DType dt) {
        long[] shape = {3, 8};
        double[] x = new double[24], m = new double[24], w = new double[24];
        for (int i = 0; i < 24; i++) {
            x[i] = Math.sin(i * 0.7) * 2;
            w[i] = Math.cos(i * 1.3);
            m[i] = i / 8 == 1 || (i / 8 == 2 && i % 2 == 0) ? NEG : 0;
        }
        return Map.of("x", Tensor.of(dt, shape, x), "w", Tensor.of(dt, shape, w), "m", Tensor.of(dt, shape, m),
                "t", Tensor.of(DType.I64, new long[] {3}, 1, 2, 3));
    }

    static String source(String dt, boolean log) {
        String t = "tensor<" + dt + ", [3, 8], @host>";
        String body = log
                ? "  let lp = z.log_softmax(axis=1) in\n  let picked = lp.take_along_axis(t, axis=1) in\n  let loss = -picked in\n  loss\n"
                : "  let p = z.softmax(axis=1) in\n  let pw = p * w in\n  let s = pw.sum(axis=1) in\n  s\n";
        return "let f = fn(x: " + t + ", w: " + t + ") -> tensor<" + dt + ", [3], @host> {\n"
                + "  let m = " + t + " in\n  let t = tensor<I64, [3], @host> in\n  let z = x + m in\n" + body + "} in\n"
                + "let x = " + t + " in\nlet w = " + t + " in\nhandle f(x, w) with reverseMode\n";
    }

    static List<Tensor> check(String dt, boolean log) {
        Map<String, Tensor> in = inputs(DType.parse(dt));
        Program checked = Checker.check(Parser.parse("safe.kina", source(dt, log)));
        Program t = TransformAd.transform(checked);
        List<Tensor> rec = Programs.recorded(checked, in);
        AdExamplesTest.assertBits(rec, Programs.oracle(checked, in), "recorded vs oracle");
        if (dt.equals("F32")) AdExamplesTest.assertBits(Plan.compile(t).run(in), rec, "plan vs interpreter");
        return rec;
    }

    @ParameterizedTest @ValueSource(strings = {"F32", "F64"})
    void aFullyMaskedSoftmaxRowIsZeroForwardAndBackward(String dt) {
        Tensor x = inputs(DType.parse(dt)).get("x"), z = ElementwiseKernels.add(x, inputs(DType.parse(dt)).get("m"));
        Tensor p = RowKernels.softmax(z, 1);
        for (int j = 0; j < 8; j++) assertThat(Double.doubleToRawLongBits(p.get(8 + j))).isEqualTo(0L);   // +0.0
        List<Tensor> r = check(dt, false);
        Tensor dx = r.get(1), dw = r.get(2);
        assertThat(r.get(0).get(1)).isEqualTo(0.0);
        for (int i = 0; i < 24; i++) {
            assertThat(Double.isFinite(dx.get(i)) && Double.isFinite(dw.get(i))).as("element %d", i).isTrue();
            if (i / 8 == 1) assertThat(dx.get(i)).as("dx of the masked row, element %d", i).isEqualTo(0.0);
        }
        assertThat(dx.get(0)).isNotEqualTo(0.0);                    // the live rows still get their gradient
    }

    @ParameterizedTest @ValueSource(strings = {"F32", "F64"})
    void aFullyMaskedLogSoftmaxRowIsMinusInfinityAndNoNanFlowsBack(String dt) {
        Tensor z = ElementwiseKernels.add(inputs(DType.parse(dt)).get("x"), inputs(DType.parse(dt)).get("m"));
        Tensor lp = RowKernels.logSoftmax(z, 1);
        for (int j = 0; j < 8; j++) assertThat(lp.get(8 + j)).isEqualTo(NEG);
        List<Tensor> r = check(dt, true);
        assertThat(r.get(0).get(1)).isEqualTo(Double.POSITIVE_INFINITY);   // −(−inf): the masked row's loss
        Tensor dx = r.get(1), dw = r.get(2);
        for (int i = 0; i < 24; i++) {
            assertThat(Double.isFinite(dx.get(i)) && Double.isFinite(dw.get(i))).as("element %d", i).isTrue();
            if (i / 8 == 1) assertThat(dx.get(i) == 0).as("dx of the fully masked row, element %d: %s", i, dx.get(i)).isTrue();
            else if (!(i / 8 == 2 && i % 2 == 0)) assertThat(dx.get(i)).as("dx of live element %d", i).isNotEqualTo(0.0);
        }
    }
}
