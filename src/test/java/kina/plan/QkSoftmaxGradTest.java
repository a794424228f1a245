package kina.plan;

import static kina.plan.PlanTest.assertBits;
import static kina.plan.PlanTest.assertBitsAtOneAndTwoThreads;
import static kina.plan.PlanTest.interpret;
import static kina.plan.PlanTest.randomInputs;
import static kina.plan.PlanTest.transformed;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import kina.kernels.Parallel;
import kina.eval.Tensor;
import java.util.ArrayList;
import java.util.Optional;
import kina.check.Checker;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Pos;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Var;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Plan.qkSoftmaxGrads: the attention backward's dp = attention_qk(g, v) runs inside the softmax
 * backward's row pass (one kernel, dp never stored), and dq = attention_pk(ds, k) with it when it
 * reads ds itself (not under a softcap), and the plan still equals the interpreter bit for bit,
 * masks, sinks and softcap included, at 1 and 2 threads; with one kv head per head dK =
 * attention_pq(ds, q) and dV = attention_pq(p, g) run inside it too, in groups of rows, and ds is
 * then not stored; P and ds, which only mask-keeping readers take, are written at the attended
 * pairs alone (Plan.attendedOnly); all checked over an arena filled with NaN before each run.
 */
class QkSoftmaxGradTest {

    @AfterAll static void restoreThreads() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of("causal, 9 rows (blocks of 4, 4, 1)", AttentionSharingTest.program(2, 9, 9, 2, 2, 8, false, "")),
                Arguments.of("causal with sinks (the row sums have a second reader)", AttentionSharingTest.program(2, 9, 9, 2, 2, 8, true, "")),
                Arguments.of("GQA, sinks, window, softcap", AttentionSharingTest.program(1, 5, 5, 4, 2, 2, true, "softcap=2.0, window=3")),
                Arguments.of("GQA, chunk, start, scale", AttentionSharingTest.program(2, 3, 5, 2, 1, 3, false, "scale=0.5, chunk=2, start=2")),
                Arguments.of("rows with nothing attended", AttentionSharingTest.program(1, 4, 6, 2, 2, 4, false, "window=2, start=4")),
                Arguments.of("rows with only the sink", AttentionSharingTest.program(1, 4, 6, 2, 2, 4, true, "window=2, start=4")),
                Arguments.of("odd widths, long rows (vector tails)", AttentionSharingTest.program(1, 37, 37, 4, 1, 17, false, "window=29")),
                Arguments.of("long causal rows", AttentionSharingTest.program(1, 70, 70, 2, 2, 8, false, "")),
                Arguments.of("heads of 72 (pk's blocks of features and a tail)", AttentionSharingTest.program(1, 11, 11, 2, 2, 72, false, "window=6")),
                Arguments.of("300 keys: dK and dV in two groups of rows (216 + 84)", AttentionSharingTest.program(1, 300, 300, 1, 1, 5, false, "")),
                Arguments.of("300 keys, window, features in a panel and a tail", AttentionSharingTest.program(1, 300, 300, 1, 1, 19, false, "window=97")),
                Arguments.of("301 rows, two heads, width 35 (panels and a tail on AVX2 and AVX-512)", AttentionSharingTest.program(1, 301, 301, 2, 2, 35, false, "")),
                Arguments.of("rows other than keys, start, window", AttentionSharingTest.program(1, 230, 300, 2, 2, 19, false, "window=50, start=70")),
                Arguments.of("5000 keys: groups of 16 rows", AttentionSharingTest.program(1, 40, 5000, 2, 2, 8, false, "start=4960")),
                Arguments.of("chunks over two groups", AttentionSharingTest.program(1, 300, 300, 2, 2, 16, false, "chunk=64")),
                Arguments.of("sinks and a window over two groups", AttentionSharingTest.program(1, 300, 300, 1, 1, 16, true, "window=40")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void theFusedRowPassEqualsTheInterpreterBitForBit(String what, String src) {
        Program p = transformed(what, src);
        Plan plan = Plan.compile(p);
        assertThat(plan.nativeKinds()).as(what).containsKey("attention_softmax_grad:F32");
        if (!src.contains("softcap"))                                  // dq = attention_pk(ds, k) runs inside it too
            assertThat(plan.nativeKinds()).as(what).doesNotContainKey("attention_pk:F32");
        // with a kv head per head dK = attention_pq(ds, q) and dV = attention_pq(p, g) run inside it too
        // (under a softcap dK reads the softcap's gradient of ds, so it stays apart)
        java.util.regex.Matcher hk = java.util.regex.Pattern.compile("heads=(\\d+), kv_heads=(\\d+)").matcher(src);
        assertThat(hk.find()).isTrue();
        boolean merged = hk.group(1).equals(hk.group(2)) && !src.contains("softcap");
        assertThat(plan.nativeKinds().containsKey("attention_pq:F32")).as(what + ": attention_pq left").isEqualTo(!merged);
        assertThat(plan.unreadOutSteps()).as(what + ": ds stored").isEqualTo(merged ? 1 : 0);   // then nothing else reads ds
        // P (only PQ and this pass read it) is written where attended only; so is ds, without a softcap,
        // where attention_pq still reads it (merged, it is not written at all)
        assertThat(plan.attendedOnlySteps()).as(what).isEqualTo(src.contains("softcap") || merged ? 1 : 2);
        for (int threads : new int[] {1, 2}) {
            Parallel.setThreads(threads);
            for (int run = 0; run < 2; run++) {
                Map<String, Tensor> in = randomInputs(plan, 31L * threads + run, 4);
                plan.poisonArena();                                    // an entry left unwritten and then read shows as NaN
                assertBits(plan.run(in), interpret(p, in), what + ", threads " + threads + " run " + run);
            }
        }
    }

    /**
     * g = +0.0 and v < 0 make every dp a −0.0 chain, so every product p·dp is −0.0: the row sum is
     * −0.0 over a row that attends every key and +0.0 over one that leaves keys out (their +0.0
     * products), and ds = p·(dp − d) shows the sign. The kernel folds attended pairs only, so this
     * checks its "+ 0.0 when the row leaves a pair out".
     */
    @Test
    void signedZeroRowSumsMatchTheInterpreter() {
        for (String opts : new String[] {"", "window=3", "chunk=2, start=1"}) {
            String src = AttentionSharingTest.program(1, 6, 6, 2, 2, 4, false, opts);
            Program p = transformed(opts, src);
            Plan plan = Plan.compile(p);
            assertThat(plan.nativeKinds()).containsKey("attention_softmax_grad:F32");
            Map<String, Tensor> rnd = randomInputs(plan, 5, 4), in = new LinkedHashMap<>();
            rnd.forEach((name, t) -> {
                double[] v = new double[(int) t.size()];
                for (int i = 0; i < v.length; i++)
                    v[i] = name.equals("w") ? 0.0 : name.equals("v") ? -Math.abs(t.get(i)) - 0.5 : t.get(i);
                in.put(name, Tensor.ofFloats(t.type(), v));
            });
            for (int threads : new int[] {1, 2}) {
                Parallel.setThreads(threads);
                List<Tensor> got = plan.run(in), want = interpret(p, in);
                assertBits(got, want, "'" + opts + "', threads " + threads);
            }
        }
    }

    /** The softmax backward of attention_probs(q, k) over dp = attention_qk(g, v), as the VJP writes it; the result from {@code tail}. */
    static Program direct(Instr.AttnOpts probsOpts, Instr.AttnOpts qkOpts, boolean dpReadTwice) {
        TensorType x = TensorType.host(DType.F32, 1, 6, 8);
        List<Let> lets = new ArrayList<>();
        int[] line = {0};
        java.util.function.BiConsumer<String, Rhs> let = (n, r) -> lets.add(Let.of(Var.of(n), r, new Pos("t.kina", ++line[0], 1)));
        for (String n : new String[] {"q", "k", "g", "v"}) let.accept(n, new Instr.Input(x));
        let.accept("pr", new Instr.AttentionProbs(Var.of("q"), Var.of("k"), Optional.empty(), probsOpts, false));
        let.accept("dp", new Instr.AttentionProduct(Var.of("g"), Var.of("v"), qkOpts, Instr.AttentionProduct.Form.QK));
        let.accept("m", new Instr.Mul(Var.of("pr"), Var.of("dp")));
        let.accept("d", new Instr.Sum(Var.of("m"), 3, true));
        let.accept("b", new Instr.Broadcast(Var.of("d"), Shape.of(1, 2, 6, 6)));
        let.accept("s", new Instr.Sub(Var.of("dp"), Var.of("b")));
        let.accept("ds", new Instr.Mul(Var.of("pr"), Var.of("s")));
        String result = "ds";
        if (dpReadTwice) { let.accept("r", new Instr.Add(Var.of("ds"), Var.of("dp"))); result = "r"; }
        return Checker.check(new Program("t.kina", new Block(lets, Var.of(result), new Pos("t.kina", ++line[0], 1))));
    }

    /**
     * An attention whose P (shared from the forward) is read by attention_pq under {@code pqOpts}:
     * P is written at the attended pairs only when those are the attention's own options.
     */
    static Program probsReadByPq(Instr.AttnOpts pqOpts) {
        TensorType x = TensorType.host(DType.F32, 1, 6, 8);
        List<Let> lets = new ArrayList<>();
        int[] line = {0};
        java.util.function.BiConsumer<String, Rhs> let = (n, r) -> lets.add(Let.of(Var.of(n), r, new Pos("t.kina", ++line[0], 1)));
        for (String n : new String[] {"q", "k", "v", "g"}) let.accept(n, new Instr.Input(x));
        let.accept("y", new Instr.Attention(Var.of("q"), Var.of("k"), Var.of("v"), Optional.empty(), opts(3)));
        let.accept("pr", new Instr.AttentionProbs(Var.of("q"), Var.of("k"), Optional.empty(), opts(3), false));
        let.accept("dv", new Instr.AttentionProduct(Var.of("pr"), Var.of("g"), pqOpts, Instr.AttentionProduct.Form.PQ));
        let.accept("r", new Rhs.Tuple(List.of(Var.of("y"), Var.of("dv"))));
        return Checker.check(new Program("t.kina", new Block(lets, Var.of("r"), new Pos("t.kina", ++line[0], 1))));
    }

    @Test
    void pIsWrittenAtTheAttendedPairsOnlyWhenEveryReaderKeepsToItsMask() {
        for (int window : new int[] {3, 0}) {                  // the attention's own window, then a wider mask
            Program p = probsReadByPq(opts(window));
            Plan plan = Plan.compile(p);
            assertThat(plan.attendedOnlySteps()).as("pq under window " + window).isEqualTo(window == 3 ? 1 : 0);
            for (int threads : new int[] {1, 2}) {
                Parallel.setThreads(threads);
                Map<String, Tensor> in = randomInputs(plan, 11L + threads, 4);
                plan.poisonArena();
                assertBits(plan.run(in), interpret(p, in), "pq under window " + window + ", threads " + threads);
            }
        }
    }

    static Instr.AttnOpts opts(int window) { return new Instr.AttnOpts(2, 2, Double.NaN, 0, window, 0, 0); }

    @Test
    void onlyAQkReadByTheRowPassAloneOverTheSameMaskIsMerged() {
        record Case(String what, Program p, boolean merged) {}
        for (Case c : List.of(new Case("as the VJP writes it", direct(opts(0), opts(0), false), true),
                new Case("dp read twice", direct(opts(0), opts(0), true), false),
                new Case("probabilities under another mask", direct(opts(3), opts(0), false), false))) {
            Plan plan = Plan.compile(c.p());
            assertThat(plan.attendedOnlySteps()).as("P of attention_probs alone, ds an output").isZero();
            Map<String, Boolean> kinds = plan.nativeKinds();
            if (c.merged()) assertThat(kinds).as(c.what()).containsKey("attention_softmax_grad:F32").doesNotContainKeys("attention_qk:F32", "softmax_grad:F32");
            else assertThat(kinds).as(c.what()).containsKeys("attention_qk:F32", "softmax_grad:F32").doesNotContainKey("attention_softmax_grad:F32");
            assertBitsAtOneAndTwoThreads(plan, c.p(), t -> 7L + t, c.what() + ", ");
        }
    }

    /** The steps of one softmax backward over pr and dp = attention_qk(g, v), names suffixed. */
    private static void softmaxBackward(java.util.function.BiConsumer<String, Rhs> let, String sfx, String pr, String g, String v) {
        let.accept("dp" + sfx, new Instr.AttentionProduct(Var.of(g), Var.of(v), opts(0), Instr.AttentionProduct.Form.QK));
        let.accept("m" + sfx, new Instr.Mul(Var.of(pr), Var.of("dp" + sfx)));
        let.accept("d" + sfx, new Instr.Sum(Var.of("m" + sfx), 3, true));
        let.accept("b" + sfx, new Instr.Broadcast(Var.of("d" + sfx), Shape.of(1, 2, 6, 6)));
        let.accept("s" + sfx, new Instr.Sub(Var.of("dp" + sfx), Var.of("b" + sfx)));
        let.accept("ds" + sfx, new Instr.Mul(Var.of(pr), Var.of("s" + sfx)));
    }

    /**
     * Where dV = attention_pq(pr, g) stands against the row pass: 0 after it, 1 before it with a
     * reader in between (it must stay apart), 2 before it with its reader after; 3: a second
     * backward's dq (merged into the earlier row pass A) reads dV, which backward B would move to
     * its own, later place (it must stay apart); 4: two row passes over the same pr and g, one dV.
     */
    static Program dvPlaced(int mode) {
        TensorType x = TensorType.host(DType.F32, 1, 6, 8);
        List<Let> lets = new ArrayList<>();
        int[] line = {0};
        java.util.function.BiConsumer<String, Rhs> let = (n, r) -> lets.add(Let.of(Var.of(n), r, new Pos("t.kina", ++line[0], 1)));
        for (String n : new String[] {"q", "k", "g", "v", "q2", "k2", "g2", "v2"}) let.accept(n, new Instr.Input(x));
        let.accept("pr", new Instr.AttentionProbs(Var.of("q"), Var.of("k"), Optional.empty(), opts(0), false));
        Instr dv = new Instr.AttentionProduct(Var.of("pr"), Var.of("g"), opts(0), Instr.AttentionProduct.Form.PQ);
        String result;
        if (mode <= 2) {
            if (mode != 0) let.accept("dv", dv);
            if (mode == 1) let.accept("r2", new Instr.Add(Var.of("dv"), Var.of("dv")));
            softmaxBackward(let, "", "pr", "g", "v");
            let.accept("dk", new Instr.AttentionProduct(Var.of("ds"), Var.of("q"), opts(0), Instr.AttentionProduct.Form.PQ));
            let.accept("dq", new Instr.AttentionProduct(Var.of("ds"), Var.of("k"), opts(0), Instr.AttentionProduct.Form.PK));
            if (mode == 0) let.accept("dv", dv);
            if (mode != 1) let.accept("r2", new Instr.Add(Var.of("dv"), Var.of("dv")));
            let.accept("r", new Rhs.Tuple(List.of(Var.of("dq"), Var.of("dk"), Var.of("r2"))));
        } else if (mode == 3) {
            let.accept("dv", dv);
            let.accept("pr2", new Instr.AttentionProbs(Var.of("q2"), Var.of("k2"), Optional.empty(), opts(0), false));
            softmaxBackward(let, "A", "pr2", "g2", "v2");
            softmaxBackward(let, "B", "pr", "g", "v");
            let.accept("dq2", new Instr.AttentionProduct(Var.of("dsA"), Var.of("dv"), opts(0), Instr.AttentionProduct.Form.PK));
            let.accept("r", new Rhs.Tuple(List.of(Var.of("dq2"), Var.of("dsB"), Var.of("dv"))));
        } else {
            let.accept("dv", dv);
            softmaxBackward(let, "A", "pr", "g", "v");
            softmaxBackward(let, "B", "pr", "g", "v2");
            let.accept("r", new Rhs.Tuple(List.of(Var.of("dsA"), Var.of("dsB"), Var.of("dv"))));
        }
        return Checker.check(new Program("t.kina", new Block(lets, Var.of("r"), new Pos("t.kina", ++line[0], 1))));
    }

    @Test
    void dvRunsInsideOnlyWhereNoReaderWouldComeFirst() {
        boolean[] merged = {true, false, true, false, true};
        for (int mode = 0; mode < 5; mode++) {
            Program p = dvPlaced(mode);
            Plan plan = Plan.compile(p);
            assertThat(plan.nativeKinds().containsKey("attention_pq:F32")).as("mode " + mode + ": dV apart").isEqualTo(!merged[mode]);
            for (int threads : new int[] {1, 2}) {
                Parallel.setThreads(threads);
                Map<String, Tensor> in = randomInputs(plan, 7L + threads, 4);
                plan.poisonArena();
                assertBits(plan.run(in), interpret(p, in), "mode " + mode + ", threads " + threads);
            }
        }
    }
}
