package kina.model;

import static org.assertj.core.api.Assertions.assertThat;

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

/** Training `tiny` for real (issue 6): the loss falls, and a killed run resumes bit for bit. */
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
}
