package kina.plan;

import static kina.plan.PlanTest.assertBits;
import static kina.plan.PlanTest.assertBitsAtOneAndTwoThreads;
import static kina.plan.PlanTest.interpret;
import static kina.plan.PlanTest.randomInputs;
import static kina.plan.PlanTest.transformed;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import kina.eval.Kernels;
import kina.kernels.Parallel;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Instr;
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
        Plan shared = Plan.compile(p), separate = Plan.compile(p, Plan.UNSHARED);
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
        Plan shared = Plan.compile(p), separate = Plan.compile(p, Plan.UNSHARED);
        assertThat(shared.steps()).isEqualTo(separate.steps() - 1);      // only the differentiated attention's P
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

    /**
     * The kernel itself over random geometries (blocks of 4 rows and their tails, rows whose ranges do
     * not meet, empty rows, GQA, odd widths): y, P and the sink shares of one attention call against
     * Kernels.attention / attentionProbs, raw bits (NaN payloads aside, see PlanKernelsExpTest).
     */
    @Test
    void theAttentionKernelWritesWhatAttentionProbsWould() {
        SplittableRandom r = new SplittableRandom(17);
        for (int rep = 0; rep < 300; rep++) {
            int kv = 1 + r.nextInt(2), h = kv * (1 + r.nextInt(2)), hd = r.nextInt(4) == 0 ? 1 + r.nextInt(5) : 8 * (1 + r.nextInt(5));
            int rows = 1 + r.nextInt(23), l = 1 + r.nextInt(40), b = 1 + r.nextInt(2), start = r.nextInt(3) == 0 ? r.nextInt(l + 3) : 0;
            int kind = r.nextInt(3), window = kind == 1 ? 1 + r.nextInt(9) : 0, chunk = kind == 2 ? 1 + r.nextInt(9) : 0;
            double cap = r.nextInt(4) == 0 ? 1 + r.nextInt(20) : 0;
            boolean sinks = r.nextBoolean(), specials = r.nextInt(10) == 0;
            Instr.AttnOpts o = new Instr.AttnOpts(h, kv, r.nextBoolean() ? Double.NaN : 0.3, cap, window, chunk, start);
            float[] q = PlanKernelsExpTest.random(b * rows * h * hd, r, specials), k = PlanKernelsExpTest.random(b * l * kv * hd, r, specials);
            float[] v = PlanKernelsExpTest.random(k.length, r, specials), sk = PlanKernelsExpTest.random(h, r, false);
            PlanKernels.Attn g = new PlanKernels.Attn(b, rows, l, hd, h, kv, start, window, chunk,
                    (float) Kernels.attentionScale(DType.F32, o, hd), (float) o.softcap());
            float[] y = new float[q.length + 3], pr = new float[b * h * rows * l + 3], sh = new float[b * h * rows + 3];
            java.util.Arrays.fill(y, Float.NaN);                           // stale values must not survive
            java.util.Arrays.fill(pr, Float.NaN);
            java.util.Arrays.fill(sh, Float.NaN);
            PlanKernels.attention(g, q, k, v, sinks ? sk : null, y, pr, sh, false);
            Tensor tq = PlanKernelsExpTest.tensor(q, b, rows, h * hd), tk = PlanKernelsExpTest.tensor(k, b, l, kv * hd);
            Tensor tv = PlanKernelsExpTest.tensor(v, b, l, kv * hd), ts = sinks ? PlanKernelsExpTest.tensor(sk, h) : null;
            String what = "rep " + rep + " " + o + " b=" + b + " rows=" + rows + " l=" + l + " hd=" + hd + " sinks=" + sinks;
            PlanKernelsExpTest.assertBits(y, q.length, Kernels.attention(tq, tk, tv, ts, o), what + " y", true);
            PlanKernelsExpTest.assertBits(pr, pr.length - 3, Kernels.attentionProbs(tq, tk, ts, o, false), what + " P", true);
            PlanKernelsExpTest.assertBits(sh, sh.length - 3, Kernels.attentionProbs(tq, tk, ts, o, true), what + " shares", true);
        }
    }
}
