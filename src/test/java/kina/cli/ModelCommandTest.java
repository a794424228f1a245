package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import kina.cli.CliTest.Result;
import org.junit.jupiter.api.Test;

/** {@code kina model print}: the programs it prints parse and type-check. */
class ModelCommandTest {

    @Test void theHalvesOfAMicroBatchStepPrintAsProgramsThatCheck() {
        for (String what : new String[] {"train-step", "gradient", "update"}) {
            Result r = CliTest.kinaCapturingStdout("model", "print", "--config", "tiny", "--batch", "2", "--what", what);
            assertThat(r.code()).as(what + ": " + r.err()).isZero();
            kina.check.Checker.check(kina.syntax.Parser.parse("<" + what + ">", r.out()));
        }
        assertThat(CliTest.kinaCapturingStdout("model", "print", "--what", "gradient").out())
                .contains("micro-batch gradient of the summed NLL").contains("with reverseMode");
        assertThat(CliTest.kinaCapturingStdout("model", "print", "--what", "update", "--batch", "8").out())
                .contains("let grad_scale = tensor<F32, [1, 1], @host> payload { 0.001953125 } in");   // 1 / (8 · 64)
        Result bad = CliTest.kina("model", "print", "--what", "grad");
        assertThat(bad.code()).isEqualTo(1);
        assertThat(bad.err().strip()).isEqualTo("error: --what grad: unknown (train-step, loss, logits, gradient or update)");
    }
}
