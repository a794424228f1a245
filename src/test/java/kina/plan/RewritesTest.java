package kina.plan;

import static kina.plan.PlanTest.assertBits;
import static kina.plan.PlanTest.interpret;
import static kina.plan.PlanTest.randomInputs;
import static kina.plan.PlanTest.transformed;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import kina.ad.TransformAd;
import kina.check.Checker;
import kina.eval.Tensor;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Printer;
import kina.ir.Program;
import kina.model.Config;
import kina.model.Optimizer;
import kina.model.StoryLm;
import kina.syntax.Parser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The rewrite table: the program the plan runs (calls inlined, fusions as IR-internal
 * instructions) is an ordinary program that the checker accepts, that prints and parses back, and
 * that the interpreter runs to the same bits as the program it came from, for every example and
 * every model config; and the
 * StoryLM train step's count of each rewrite is pinned, so a change to a VJP rule that stops a
 * fusion fails here instead of silently costing speed.
 */
class RewritesTest {

    static Stream<Path> examples() throws IOException {
        return Stream.concat(Files.list(Path.of("examples")), Files.list(Path.of("examples/vocab")))
                .filter(p -> p.toString().endsWith(".kina")).sorted();
    }

    /** The rewritten program checks to the same types and interprets to the original's bits. */
    private static void sameBits(Program p, int vocab, int seeds, String what) {
        Plan plan = Plan.compile(p);
        Program rewritten = plan.program();
        Program rechecked = Checker.check(rewritten);
        assertThat(rechecked.body().lets().stream().map(Let::type).toList()).as(what + " types")
                .isEqualTo(rewritten.body().lets().stream().map(Let::type).toList());
        Program reparsed = Checker.check(Parser.parse(what, Printer.print(rewritten)));     // `kina plan` prints a program that reads back
        for (long seed = 1; seed <= seeds; seed++) {
            Map<String, Tensor> in = randomInputs(plan, seed, vocab);
            List<Tensor> want = interpret(p, in);
            assertBits(interpret(rewritten, in), want, what + " seed " + seed);
            assertBits(interpret(reparsed, in), want, what + " reparsed, seed " + seed);
        }
    }

    @ParameterizedTest
    @MethodSource("examples")
    void everyExampleRewrittenInterpretsToTheOriginalsBits(Path file) throws IOException {
        sameBits(transformed(file.toString(), Files.readString(file)), 4, 2, file.toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"storylm0", "tiny", "small", "medium"})
    void everyModelsTrainStepRewrittenInterpretsToTheOriginalsBits(String config) {
        Config c = Config.byName(config);
        Program checked = c.toy() ? StoryLm.toyTrainStep(c) : StoryLm.trainStep(c, 1, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0));
        sameBits(TransformAd.transform(checked), c.vocab(), 1, config);
    }

    /** How many fusions each rule makes in a StoryLM train step with AdamW, by layer count. */
    private static Map<String, Integer> counts(String config) {
        Config c = Config.byName(config);
        return Plan.compile(TransformAd.transform(StoryLm.trainStep(c, 2, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0)))).rewrites();
    }

    @Test void theTrainStepsRewritesArePinned() {
        Map<String, Integer> twoLayers = new LinkedHashMap<>();
        twoLayers.put("dead", 1);
        twoLayers.put("matmul_t", 30);
        twoLayers.put("softmax_grad", 0);                 // attention's backward is blockwise: no softmax VJP over [H, T, L]
        twoLayers.put("elementwise", 52);
        twoLayers.put("attention_with_lse", 2);           // each layer's forward also makes its backward's lse
        twoLayers.put("attention_backward", 2);           // and its dq, dk, dv run as one pass
        twoLayers.put("swiglu_sigmoid", 2);
        twoLayers.put("matmul_shared", 8);
        assertThat(counts("tiny")).isEqualTo(twoLayers);
        assertThat(counts("small")).isEqualTo(twoLayers);
        Map<String, Integer> medium = counts("medium");
        assertThat(medium).containsEntry("attention_backward", 4).containsEntry("attention_with_lse", 4)
                .containsEntry("swiglu_sigmoid", 4).containsEntry("matmul_shared", 16);
    }

    @Test void thePrintedPlanShowsEachFusionByName() {
        Config c = Config.byName("tiny");
        Plan plan = Plan.compile(TransformAd.transform(StoryLm.trainStep(c, 2, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0))));
        String text = Printer.print(plan.program());
        for (String op : List.of("%matmul_t(", "%matmul_shared(", "%attention_backward(", "%elementwise(",
                "%attention_with_lse(", "%swiglu_sigmoid("))
            assertThat(text).contains(op);
        long passes = plan.program().body().lets().stream().filter(l -> l.rhs() instanceof Instr.Elementwise).count();
        assertThat(passes).isEqualTo((long) plan.rewrites().get("elementwise"));
    }
}
