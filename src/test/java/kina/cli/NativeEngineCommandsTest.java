package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import kina.mlir.MlirTools;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code train --engine native} and {@code bench --engine native} end to end on tiny at batch 2,
 * the shared objects TrainerNativeTest builds (the same step and loss programs: the build cache
 * serves them). Skipped with a message without the LLVM 19 tools; under CI=true their absence fails.
 */
class NativeEngineCommandsTest {

    @Test void benchPrintsANativeResultLine() {
        MlirTools.require();
        CliTest.Result r = CliTest.kina("bench", "--config", "tiny", "--steps", "2", "--batch", "2", "--threads", "1", "--warmup-seconds", "0",
                "--engine", "native");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out().strip()).startsWith("kina bench: config=tiny batch=2 seq=64 threads=1 engine=native steps=2 ms/step min=");
    }

    @Test void trainRunsNativelyAndCheckpoints(@TempDir Path dir) {
        MlirTools.require();
        CliTest.Result r = CliTest.kina("train", "--config", "tiny", "--engine", "native", "--steps", "3", "--batch", "2", "--eval-every", "3",
                "--eval-batches", "1", "--threads", "1", "--no-progress", "--out", dir.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(dir.resolve("step-000003/state.json")).exists();
    }
}
