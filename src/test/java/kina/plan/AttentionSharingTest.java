package kina.plan;

import static kina.plan.PlanTest.assertBits;
import static kina.plan.PlanTest.interpret;
import static kina.plan.PlanTest.randomInputs;
import static kina.plan.PlanTest.transformed;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import kina.eval.Parallel;
import kina.eval.Tensor;
import kina.ir.Program;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Plan.sharedProbs: the forward attention step also writes the backward's attention_probs values
 * (P, and the sink shares), which are then not scheduled; the plan still equals the interpreter bit
 * for bit, and attention_probs over other operands or options keeps its own step.
 */
class AttentionSharingTest {

    @AfterAll static void restoreThreads() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    /** q.attention(k, v[, sinks], opts) · w under reverseMode: q [b, t, h·hd], k, v [b, l, kv·hd]. */
    static String program(int b, int t, int l, int h, int kv, int hd, boolean sinks, String opts) {
        String q = "tensor<F32, [" + b + ", " + t + ", " + h * hd + "], @host>", k = "tensor<F32, [" + b + ", " + l + ", " + kv * hd + "], @host>";
        String s = "tensor<F32, [" + h + "], @host>", sk = sinks ? ", sinks" : "";
        return "let f = fn(q: " + q + ", k: " + k + ", v: " + k + (sinks ? ", sinks: " + s : "") + ", w: " + q + ") -> " + q + " {\n"
                + "  let y = q.attention(k, v" + sk + ", heads=" + h + ", kv_heads=" + kv + (opts.isEmpty() ? "" : ", " + opts) + ") in\n"
                + "  let z = y * w in\n  z\n} in\n"
                + "let q = " + q + " in\nlet k = " + k + " in\nlet v = " + k + " in\n" + (sinks ? "let sinks = " + s + " in\n" : "")
                + "let w = " + q + " in\nhandle f(q, k, v" + sk + ", w) with reverseMode\n";
    }

    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of("causal, 9 rows (blocks of 4, 4, 1)", program(2, 9, 9, 2, 2, 8, false, "")),
                Arguments.of("causal with sinks", program(2, 9, 9, 2, 2, 8, true, "")),
                Arguments.of("GQA, sinks, window, softcap", program(1, 5, 5, 4, 2, 2, true, "softcap=2.0, window=3")),
                Arguments.of("GQA, chunk, start, scale", program(2, 3, 5, 2, 1, 3, false, "scale=0.5, chunk=2, start=2")),
                Arguments.of("rows with nothing attended", program(1, 4, 6, 2, 2, 4, false, "window=2, start=4")),
                Arguments.of("rows with only the sink", program(1, 4, 6, 2, 2, 4, true, "window=2, start=4")),
                Arguments.of("odd widths, long rows, sinks", program(1, 21, 21, 4, 1, 17, true, "window=11")),
                Arguments.of("softcap, long rows", program(1, 19, 19, 2, 2, 8, false, "softcap=3.0")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void theForwardAttentionWritesPAndThePlanEqualsTheInterpreter(String what, String src) {
        Program p = transformed(what, src);
        Plan shared = Plan.compile(p), separate = Plan.compile(p, true, false);
        int merged = src.contains("sinks") ? 2 : 1;                    // P, and with sinks the sink shares
        assertThat(shared.steps()).as(what).isEqualTo(separate.steps() - merged);
        for (int threads : new int[] {1, 2}) {
            Parallel.setThreads(threads);
            for (int run = 0; run < 2; run++) {
                Map<String, Tensor> in = randomInputs(shared, 10L * threads + run, 4);
                List<Tensor> want = interpret(p, in);
                assertBits(shared.run(in), want, what + " shared, threads " + threads + " run " + run);
                assertBits(separate.run(in), want, what + " separate, threads " + threads + " run " + run);
            }
        }
    }

    @Test
    void attentionProbsOverOtherOptionsOrOperandsIsNotMerged() {
        String t = "tensor<F32, [1, 6, 8], @host>";
        Program p = transformed("other options", """
                let f = fn(q: %1$s, k: %1$s, v: %1$s) -> %1$s {
                  let y = q.attention(k, v, heads=2, kv_heads=2, window=2) in
                  y
                } in
                let q = %1$s in
                let k = %1$s in
                let v = %1$s in
                let y3 = q.attention(k, v, heads=2, kv_heads=2, window=3) in
                let y4 = q.attention(k, v, heads=2, kv_heads=2, window=2, softcap=1.0) in
                let y5 = q.attention(v, k, heads=2, kv_heads=2, window=2) in
                let y6 = q.attention(k, v, heads=2, kv_heads=2, chunk=3) in
                let (y, gq, gk, gv) = handle f(q, k, v) with reverseMode in
                (y3, y4, y5, y6, y, gq, gk, gv)
                """.formatted(t));
        Plan shared = Plan.compile(p), separate = Plan.compile(p, true, false);
        assertThat(shared.steps()).isEqualTo(separate.steps() - 1);      // only the differentiated attention's P
        for (int threads : new int[] {1, 2}) {
            Parallel.setThreads(threads);
            Map<String, Tensor> in = randomInputs(shared, threads, 4);
            assertBits(shared.run(in), interpret(p, in), "other options, threads " + threads);
        }
    }

    @Test
    void f64AttentionIsNotMerged() {
        String src = program(1, 5, 5, 2, 2, 4, true, "window=3").replace("F32", "F64");
        Program p = transformed("f64", src);
        assertThat(Plan.compile(p).steps()).isEqualTo(Plan.compile(p, true, false).steps());
        Map<String, Tensor> in = randomInputs(Plan.compile(p), 1, 4);
        assertBits(Plan.compile(p).run(in), interpret(p, in), "f64");
    }
}
