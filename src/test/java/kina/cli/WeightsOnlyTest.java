package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import kina.cli.CliTest.Result;
import kina.model.Checkpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A checkpoint of the weights alone (no optimizer.safetensors, as a model is often shared): sample and export read it. */
class WeightsOnlyTest {
    @Test void sampleAndExportNeedNoOptimizerState(@TempDir Path dir) throws Exception {
        Path whole = dir.resolve("whole"), bare = dir.resolve("bare");
        Result t = CliTest.kina("train", "--steps", "2", "--batch", "1", "--eval-batches", "1", "--threads", "1", "--no-progress", "--out", whole.toString());
        assertThat(t.code()).as(t.err()).isZero();
        Path step = whole.resolve("step-000002");
        Files.createDirectories(bare.resolve("step-000002"));
        for (String f : new String[] {Checkpoint.MODEL_FILE, Checkpoint.STATE_FILE})
            Files.copy(step.resolve(f), bare.resolve("step-000002").resolve(f));
        Files.copy(whole.resolve(Checkpoint.LATEST_FILE), bare.resolve(Checkpoint.LATEST_FILE));

        String[] greedy = {"--prompt", "The ", "--tokens", "20", "--top-k", "1", "--threads", "1"};
        Result a = CliTest.kinaCapturingStdout(CliTest.concat(new String[] {"sample", "--checkpoint", whole.toString()}, greedy));
        Result b = CliTest.kinaCapturingStdout(CliTest.concat(new String[] {"sample", "--checkpoint", bare.toString()}, greedy));
        assertThat(b.code()).as(b.err()).isZero();
        assertThat(b.out()).isEqualTo(a.out()).startsWith("The ");

        for (String format : new String[] {"llama2c", "hf"}) {
            Path fromWhole = dir.resolve(format + "-whole"), fromBare = dir.resolve(format + "-bare");
            Files.createDirectories(fromWhole);
            Files.createDirectories(fromBare);
            String name = format.equals("hf") ? "hf" : "model.bin";
            Result x = CliTest.kina("export", "--checkpoint", whole.toString(), "--format", format, "-o", fromWhole.resolve(name).toString());
            Result y = CliTest.kina("export", "--checkpoint", bare.toString(), "--format", format, "-o", fromBare.resolve(name).toString());
            assertThat(x.code()).as(x.err()).isZero();
            assertThat(y.code()).as(y.err()).isZero();
            Path file = format.equals("hf") ? Path.of("hf", "model.safetensors") : Path.of(name);
            assertThat(Files.readAllBytes(fromBare.resolve(file))).isEqualTo(Files.readAllBytes(fromWhole.resolve(file)));
        }

        // training on from step 2 needs its moments: one line that says so
        Result r = CliTest.kina("train", "--resume", bare.toString(), "--steps", "3", "--batch", "1", "--eval-batches", "1", "--threads", "1", "--no-progress");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).isEqualTo("error: " + bare.resolve("step-000002").resolve(Checkpoint.OPTIMIZER_FILE) + ": not found: this checkpoint "
                + "holds the weights alone, which sample and export read, but resuming its step 2 needs the optimizer's moments too");
    }
}
