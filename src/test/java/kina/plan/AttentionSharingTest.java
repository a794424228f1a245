package kina.plan;

import static kina.plan.PlanTest.assertBits;
import static kina.plan.PlanTest.assertBitsAtOneAndTwoThreads;
import static kina.plan.PlanTest.interpret;
import static kina.plan.PlanTest.randomInputs;
import static kina.plan.PlanTest.transformed;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
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
 * The attention rewrites: the forward attention step also writes the backward's attention_lse
 * (attention_with_lse), and the backward's attention_dq, _dk and _dv run as one step
 * (attention_backward); the plan still equals the interpreter bit for bit, at 1 and 2 threads, and
 * an attention_lse over other operands or options keeps its own step.
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
                Arguments.of("softcap, long rows", program(1, 19, 19, 2, 2, 8, false, "softcap=3.0")),
                Arguments.of("rows over three key blocks, sinks", program(1, 150, 150, 2, 1, 8, true, "")),
                Arguments.of("a window across key blocks, GQA", program(2, 70, 140, 4, 2, 12, false, "window=50, start=70")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void theForwardAttentionWritesLseAndThePlanEqualsTheInterpreter(String what, String src) {
        Program p = transformed(what, src);
        Plan shared = Plan.compile(p), separate = Plan.compile(p, Plan.UNSHARED);
        assertThat(shared.steps()).as(what).isEqualTo(separate.steps() - 3);   // lse, and dk and dv made with dq
        assertThat(shared.rewrites()).containsEntry("attention_with_lse", 1).containsEntry("attention_backward", 1);
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
    void attentionLseOverOtherOptionsOrOperandsIsNotMerged() {
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
        Plan shared = Plan.compile(p), separate = Plan.compile(p, Plan.UNSHARED);
        assertThat(shared.steps()).isEqualTo(separate.steps() - 3);      // only the differentiated attention's lse and its dk, dv
        assertBitsAtOneAndTwoThreads(shared, p, threads -> threads, "other options, ");
    }

    @Test
    void f64AttentionIsNotMerged() {
        String src = program(1, 5, 5, 2, 2, 4, true, "window=3").replace("F32", "F64");
        Program p = transformed("f64", src);
        assertThat(Plan.compile(p).steps()).isEqualTo(Plan.compile(p, Plan.UNSHARED).steps());
        Map<String, Tensor> in = randomInputs(Plan.compile(p), 1, 4);
        assertBits(Plan.compile(p).run(in), interpret(p, in), "f64");
    }
}
