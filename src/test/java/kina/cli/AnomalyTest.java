package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import kina.cli.CliTest.Result;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** --detect-anomaly names the first let (forward or backward) whose output holds NaN or Inf; training never checkpoints non-finite weights. */
class AnomalyTest {
    @Test void runNamesTheFirstForwardOrBackwardLetWithANonFiniteValue(@TempDir Path dir) throws Exception {
        Path x = dir.resolve("x.json");
        Files.writeString(x, "[0.0, 4.0]");
        Path fwd = dir.resolve("fwd.kina");
        Files.writeString(fwd, "let x = tensor<F32, [2], @host> in\nlet y = x.log() in\nlet z = y * y in\nz\n");
        Result plain = CliTest.kina("run", fwd.toString(), "--input", "x=" + x);
        assertThat(plain.code()).as(plain.err()).isZero();                      // IEEE: -inf, then inf
        Result r = CliTest.kina("run", fwd.toString(), "--input", "x=" + x, "--detect-anomaly");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).isEqualTo(fwd + ":2:1: error: let y: --detect-anomaly: log (forward) gives -Infinity at element 0 of "
                + "tensor<F32, [2], @host> (the first non-finite value; what it read was finite)");

        Path bwd = dir.resolve("bwd.kina");
        Files.writeString(bwd, "let f = fn(x: tensor<F32, [2], @host>) -> tensor<F32, [2], @host> {\n  let y = x.sqrt() in\n  y\n} in\n"
                + "let x = tensor<F32, [2], @host> in\nhandle f(x) with reverseMode\n");
        Result b = CliTest.kina("run", bwd.toString(), "--input", "x=" + x, "--detect-anomaly");
        assertThat(b.code()).isEqualTo(1);
        assertThat(b.err().strip()).doesNotContain("\n").contains("--detect-anomaly: ").contains("(backward, emitted by transform_ad) gives Infinity at element 0");
    }

    @Test void trainingStopsBeforeACheckpointOfNonFiniteWeights(@TempDir Path dir) {
        Path out = dir.resolve("run");
        // an F32 learning rate of 1e39 is +inf: the first update makes the weights non-finite
        Result r = CliTest.kinaCapturingStdout("train", "--steps", "3", "--batch", "1", "--eval-batches", "1", "--no-progress",
                "--optimizer", "sgd", "--lr", "1e39", "--warmup", "0", "--checkpoint-every", "1", "--out", out.toString());
        assertThat(r.code()).as(r.err()).isEqualTo(1);
        assertThat(r.err().strip()).startsWith("error: training diverged at step 1: ").contains("; its checkpoint was not written");
        assertThat(out.resolve("step-000001")).doesNotExist();
        Result d = CliTest.kinaCapturingStdout("train", "--steps", "3", "--batch", "1", "--eval-batches", "1", "--no-progress",
                "--optimizer", "sgd", "--lr", "1e39", "--warmup", "0", "--out", dir.resolve("run2").toString(), "--detect-anomaly");
        assertThat(d.code()).as(d.err()).isEqualTo(1);
        assertThat(d.err().strip()).startsWith("error: training diverged at step 1: ").doesNotContain("checkpoint");
    }
}
