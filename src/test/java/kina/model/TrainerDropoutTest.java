package kina.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Program;
import kina.ir.Rhs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Training `tiny` with dropout: the masks are keyed by the seed, the step and the site, so a
 * resumed run repeats an uninterrupted one bit for bit, 1 thread gives the bits of 2, and the plan
 * gives the interpreter's; the checkpoint records the rate, which a resume keeps; validation has
 * no dropout.
 */
class TrainerDropoutTest {

    static Trainer.Options options(int steps, int threads, Path out, Path resume, Engine engine) {
        return new Trainer.Options(Config.byName("tiny"), 2, steps, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0), 3e-3, 3,
                7, threads, out, 4, 1, 4, resume, Progress.Mode.OFF, engine);
    }

    static Trainer.Summary train(Trainer.Options o, Double dropout) {
        Trainer t = new Trainer(o, TrainerTest.slice());
        if (dropout != null) t.dropout(dropout);
        return t.run(TrainerTest.QUIET, TrainerTest.QUIET);
    }

    static void assertSameLosses(Trainer.Summary a, Trainer.Summary b, String what) {
        assertThat(a.trainCurve()).as(what).hasSameSizeAs(b.trainCurve());
        for (int i = 0; i < a.trainCurve().size(); i++)
            assertThat(Double.doubleToRawLongBits(a.trainCurve().get(i)[1])).as("%s: loss of step %d", what, i + 1)
                    .isEqualTo(Double.doubleToRawLongBits(b.trainCurve().get(i)[1]));
        assertThat(Double.doubleToRawLongBits(a.valLoss())).as(what + ": validation").isEqualTo(Double.doubleToRawLongBits(b.valLoss()));
    }

    @Test void aResumedRunRepeatsAnUninterruptedOneBitForBit(@TempDir Path dir) {
        Trainer.Summary whole = train(options(10, 2, dir.resolve("whole"), null, Engine.PLAN), 0.1);
        Trainer.Summary none = train(options(10, 2, dir.resolve("none"), null, Engine.PLAN), null);
        assertThat(whole.trainCurve().get(3)[1]).as("dropout changes the losses").isNotEqualTo(none.trainCurve().get(3)[1]);
        // the first 4 steps, checkpointed at step 4, then resumed to 10 without --dropout: the checkpoint's rate
        train(options(10, 2, dir.resolve("part"), null, Engine.PLAN), 0.1);
        Path at4 = dir.resolve("part/step-000004");
        assertThat(Checkpoint.load(at4).state().hyper()).containsEntry("dropout", 0.1);
        assertThat(Checkpoint.load(dir.resolve("none/step-000004")).state().hyper()).doesNotContainKey("dropout");
        Trainer.Summary resumed = train(options(10, 2, dir.resolve("resumed"), at4, Engine.PLAN), null);
        assertSameLosses(resumed, whole, "resumed at step 4");
        String note = TrainerTest.capture(err -> new Trainer(options(6, 2, dir.resolve("other"), at4, Engine.PLAN), TrainerTest.slice())
                .dropout(0.2).run(TrainerTest.QUIET, err));
        assertThat(note).contains("note: the checkpoint's steps had dropout 0.1; these have 0.2 (losses will differ from an uninterrupted run)");
    }

    @Test void oneThreadGivesTheBitsOfTwoAndThePlanTheInterpreters() {
        Trainer.Summary one = train(options(4, 1, null, null, Engine.PLAN), 0.25);
        assertSameLosses(one, train(options(4, 2, null, null, Engine.PLAN), 0.25), "threads 1 vs 2");
        assertSameLosses(one, train(options(4, 2, null, null, Engine.INTERPRETER), 0.25), "plan vs interpreter");
    }

    @Test void theStepHasADropoutPerSiteAndValidationNone() {
        Config c = Config.byName("tiny");
        Program step = StoryLm.trainStep(c, 2, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0), 0.1);
        assertThat(dropouts(step)).hasSize(StoryLm.dropoutSites(c)).allMatch(d -> d.p() == 0.1);
        assertThat(StoryLm.dropoutSites(c)).isEqualTo(2 * c.layers());
        assertThat(dropouts(StoryLm.lossOnly(c, 2))).isEmpty();
        assertThat(dropouts(StoryLm.trainStep(c, 2, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0)))).isEmpty();
        // each site its own key and stream, every step its own
        var k3 = Trainer.dropoutKeys(7, 3, 4).ints();
        assertThat(k3).containsExactly(k3[0], 12, k3[0], 13, k3[0], 14, k3[0], 15);
        assertThat(Trainer.dropoutKeys(7, 4, 4).ints()[1]).isEqualTo(16);
    }

    @Test void dropoutWithMicroBatchesIsRefused() {
        Trainer.Options o = new Trainer.Options(Config.byName("tiny"), 4, 2, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0), 3e-3, 1,
                7, 1, null, 4, 1, 4, null, Progress.Mode.OFF, Engine.PLAN, 2, null);
        assertThatThrownBy(() -> new Trainer(o, TrainerTest.slice()).dropout(0.1).run(TrainerTest.QUIET))
                .hasMessage("--dropout with --micro-batches: the micro-batch tree has no dropout yet; train without one of them");
    }

    /** The dropouts in the lets of a program and of its fns. */
    static List<Instr.Dropout> dropouts(Program p) {
        return p.body().lets().stream().flatMap(TrainerDropoutTest::dropouts).toList();
    }

    private static java.util.stream.Stream<Instr.Dropout> dropouts(Let l) {
        return switch (l.rhs()) {
            case Instr.Dropout d -> java.util.stream.Stream.of(d);
            case Rhs.Fn fn -> fn.body().lets().stream().flatMap(TrainerDropoutTest::dropouts);
            default -> java.util.stream.Stream.empty();
        };
    }
}
