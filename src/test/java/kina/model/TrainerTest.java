package kina.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.PrintStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Training `tiny` for real: the loss falls, and a killed run resumes bit for bit. */
class TrainerTest {
    static final PrintStream QUIET = new PrintStream(OutputStream.nullOutputStream());

    /** A fixed 120 KB slice of the embedded corpus. */
    static Corpus slice() {
        byte[] all = Corpus.embedded().bytes();
        return Corpus.of("slice", Arrays.copyOf(all, 120_000), 0.1);
    }

    static Trainer.Options options(int steps, Path out, Path resume) {
        return new Trainer.Options(Config.byName("tiny"), 2, steps, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0), 3e-3, 3,
                7, 2, out, 10, 1, 5, resume, Progress.Mode.OFF);
    }

    @Test void theLossFallsOverAFewDozenSteps(@TempDir Path dir) {
        Trainer.Summary s = new Trainer(options(40, dir, null), slice()).run(QUIET);
        List<double[]> c = s.trainCurve();
        double first = c.getFirst()[1], lastFive = 0;
        for (int i = c.size() - 5; i < c.size(); i++) lastFive += c.get(i)[1] / 5;
        System.out.printf("tiny on a 120 KB slice: loss %.4f -> %.4f (mean of the last 5), validation %.4f%n", first, lastFive, s.valLoss());
        assertThat(first).isGreaterThan(5.0);                     // ≈ ln 256 at initialisation
        assertThat(lastFive).isLessThan(first - 1.5);
        assertThat(s.valLoss()).isLessThan(first - 1.5);
        assertThat(Files.exists(dir.resolve("loss.png"))).isTrue();
    }

    @Test void aKilledRunResumesToTheSameLossBits(@TempDir Path dir) throws Exception {
        Path data = dir.resolve("slice.txt");
        Files.write(data, slice().bytes());
        Corpus corpus = Corpus.load(data);
        int steps = 30;
        Trainer.Summary whole = new Trainer(options(steps, dir.resolve("whole"), null), corpus).run(QUIET);

        // A real kill: a child JVM trains into dir/killed and is killed -9 after its first checkpoint.
        Path killed = dir.resolve("killed");
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "--add-modules", "jdk.incubator.vector", "-cp", System.getProperty("java.class.path"), "kina.cli.Main", "train",
                "--data", data.toString(), "--steps", Integer.toString(steps), "--batch", "2", "--lr", "3e-3", "--warmup", "3",
                "--seed", "7", "--threads", "2", "--out", killed.toString(), "--eval-every", "10", "--eval-batches", "1",
                "--checkpoint-every", "5", "--weight-decay", "0.01", "--clip", "1.0", "--no-progress"));
        Process child = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve("child.log").toFile()).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!Files.exists(killed.resolve(Checkpoint.LATEST_FILE)) && child.isAlive() && System.nanoTime() < deadline) Thread.sleep(5);
        boolean wasAlive = child.isAlive();
        child.destroyForcibly().waitFor();
        assertThat(Files.exists(killed.resolve(Checkpoint.LATEST_FILE))).as(Files.readString(dir.resolve("child.log"))).isTrue();
        Checkpoint.Loaded at = Checkpoint.load(killed);               // whatever 'latest' names is complete
        System.out.printf("killed the child %s; resuming from step %d%n", wasAlive ? "mid-run" : "(it had finished)", at.state().step());

        Trainer.Summary resumed = new Trainer(options(steps, killed, killed), corpus).run(QUIET);
        assertThat(resumed.trainCurve()).hasSameSizeAs(whole.trainCurve());
        for (int i = 0; i < steps; i++)
            assertThat(Double.doubleToRawLongBits(resumed.trainCurve().get(i)[1]))
                    .as("loss of step %d", i + 1).isEqualTo(Double.doubleToRawLongBits(whole.trainCurve().get(i)[1]));
        assertThat(Double.doubleToRawLongBits(resumed.valLoss())).isEqualTo(Double.doubleToRawLongBits(whole.valLoss()));
    }

    static String capture(java.util.function.Consumer<PrintStream> f) {
        java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
        f.accept(new PrintStream(b, true, java.nio.charset.StandardCharsets.UTF_8));
        return b.toString(java.nio.charset.StandardCharsets.UTF_8);
    }

    @Test void resumingToAStepNotBeyondTheCheckpointIsAnErrorBeforeTraining(@TempDir Path dir) {
        Corpus corpus = slice();
        new Trainer(options(5, dir, null), corpus).run(QUIET);
        for (int steps : new int[] {3, 5}) {
            String log = capture(out -> assertThatThrownBy(() -> new Trainer(options(steps, dir, dir), corpus).run(out))
                    .isInstanceOf(kina.ir.KinaException.class)
                    .hasMessage("--steps " + steps + " is not beyond the checkpoint's step 5 (" + dir.resolve("step-000005") + "): nothing to train"));
            assertThat(log).isEmpty();
        }
    }

    @Test void aResumedSummarySaysFromWhichStepAndCountsThisRunsTokens(@TempDir Path dir) {
        Corpus corpus = slice();
        Trainer.Summary first = new Trainer(options(5, dir, null), corpus).run(QUIET);
        assertThat(first.line()).startsWith("trained tiny for 5 steps (640 tokens) in ");
        // the memory the run held: the plans' arenas and the process's peak resident set
        assertThat(first.arenaBytes()).isPositive();
        assertThat(first.line()).containsPattern("; arena [0-9.]+ MiB \\(validation [0-9.]+ MiB\\)(; peak RSS [0-9.]+ [MG]iB)?$");
        assertThat(first.validationArenaBytes()).isPositive();
        Trainer.Summary s = new Trainer(options(8, dir, dir), corpus).run(QUIET, QUIET);
        assertThat(s.fromStep()).isEqualTo(5);
        assertThat(s.steps()).isEqualTo(8);
        assertThat(s.tokens()).isEqualTo(3 * 2 * 64);
        assertThat(s.line()).startsWith("trained tiny from step 5 to step 8 (3 steps, 384 tokens) in ");
    }

    @Test void resumingWithOtherStepsNotesTheStretchedSchedule(@TempDir Path dir) throws Exception {
        Corpus corpus = slice();
        new Trainer(options(5, dir.resolve("a"), null), corpus).run(QUIET);
        String note = capture(err -> new Trainer(options(7, dir.resolve("a"), dir.resolve("a/step-000005")), corpus).run(QUIET, err));
        assertThat(note).isEqualTo("note: the schedule was for 5 steps; continuing to 7 stretches it "
                + "(losses will differ from an uninterrupted 7-step run)" + System.lineSeparator());
        // The same total: no note (b's step-5 checkpoint belongs to an 8-step run).
        new Trainer(options(8, dir.resolve("b"), null), corpus).run(QUIET);
        assertThat(capture(err -> new Trainer(options(8, dir.resolve("b2"), dir.resolve("b/step-000005")), corpus).run(QUIET, err))).isEmpty();
        // A smaller total shortens it.
        assertThat(capture(err -> new Trainer(options(6, dir.resolve("b3"), dir.resolve("b/step-000005")), corpus).run(QUIET, err)))
                .isEqualTo("note: the schedule was for 8 steps; continuing to 6 shortens it "
                        + "(losses will differ from an uninterrupted 6-step run)" + System.lineSeparator());
        // A checkpoint of the stretched run records its new total.
        assertThat(Checkpoint.load(dir.resolve("a")).state().hyper()).containsEntry("steps", 7.0);
        // An older checkpoint that does not record the total: no note.
        Path st = dir.resolve("a/step-000007/" + Checkpoint.STATE_FILE);
        Files.writeString(st, Files.readString(st).replaceFirst("\"steps\" : 7.0,", ""));
        assertThat(Checkpoint.load(dir.resolve("a")).state().hyper()).doesNotContainKey("steps");
        assertThat(capture(err -> new Trainer(options(9, dir.resolve("c"), dir.resolve("a")), corpus).run(QUIET, err))).isEmpty();
    }

    @Test void anUnusableOutFailsBeforeTraining(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("file"), "x");
        String log = capture(out -> assertThatThrownBy(() -> new Trainer(options(2, file, null), slice()).run(out))
                .isInstanceOf(kina.ir.KinaException.class).hasMessage("--out " + file + ": not a directory"));
        assertThat(log).isEmpty();
        assertThatThrownBy(() -> new Trainer(options(2, file.resolve("sub"), null), slice()).run(QUIET))
                .isInstanceOf(kina.ir.KinaException.class).hasMessageStartingWith("--out " + file.resolve("sub") + ": cannot create the directory");
        Path fresh = dir.resolve("new/run");
        new Trainer(options(1, fresh, null), slice()).run(QUIET);
        assertThat(Files.exists(fresh.resolve("step-000001/" + Checkpoint.STATE_FILE))).isTrue();
    }
}
