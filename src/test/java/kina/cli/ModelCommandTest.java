package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import kina.cli.CliTest.Result;
import kina.eval.Tensor;
import kina.model.Batches;
import kina.model.Checkpoint;
import kina.model.Config;
import kina.model.Corpus;
import kina.model.Init;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kina model print}: the programs it prints parse and type-check; {@code model init} and
 * {@code model batches}: the weights and batches {@code kina train} starts from and trains on.
 */
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

    @Test void initWritesTrainsInitialWeightsAsAStep0CheckpointWithoutMoments(@TempDir Path dir) {
        Result r = CliTest.kina("model", "init", "--config", "tiny", "--seed", "11", "--out", dir.resolve("init").toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).startsWith("wrote " + dir.resolve("init/step-000000") + ": the initial weights of tiny (seed 11)");
        Checkpoint.Loaded ck = Checkpoint.load(dir.resolve("init"));
        assertThat(ck.state().step()).isZero();
        assertThat(ck.moments()).isEmpty();
        Map<String, Tensor> want = Init.weights(Config.byName("tiny"), 11);
        assertThat(ck.weights().keySet()).containsExactlyElementsOf(want.keySet());
        for (var e : want.entrySet()) {
            double[] w = e.getValue().floats(), got = ck.weights().get(e.getKey()).floats();
            for (int i = 0; i < w.length; i++) assertThat(Float.floatToRawIntBits((float) got[i])).isEqualTo(Float.floatToRawIntBits((float) w[i]));
        }
        Result again = CliTest.kina("model", "init", "--config", "tiny", "--out", dir.resolve("init").toString());
        assertThat(again.code()).isEqualTo(1);
        assertThat(again.err()).contains("holds the checkpoints of another run (step-000000)");
        Result toy = CliTest.kina("model", "init", "--config", "storylm0", "--out", dir.resolve("toy").toString());
        assertThat(toy.err().strip()).isEqualTo("error: model init: config storylm0 is not a byte-level decoder (vocab 256); "
                + "init and batches write what train uses for text");
        assertThat(CliTest.kina("model", "init").err().strip()).isEqualTo("error: model init: give --out DIR, the checkpoint directory to write");
    }

    @Test void batchesWritesEachStepsIdsAndTargetsAsTrainDrawsThem(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("b.bin");
        Result r = CliTest.kina("model", "batches", "--config", "tiny", "--batch", "3", "--seed", "5", "--steps", "4", "--out", f.toString());
        assertThat(r.code()).as(r.err()).isZero();
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(f)).order(ByteOrder.LITTLE_ENDIAN);
        byte[] magic = new byte[8];
        b.get(magic);
        assertThat(new String(magic, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("KINABAT1");
        assertThat(new long[] {b.getLong(), b.getLong(), b.getLong()}).containsExactly(4, 3, 64);
        Batches want = Corpus.embedded().trainBatches(3, 64, 5);
        for (int s = 0; s < 4; s++) {
            Batches.Batch batch = want.at(s);
            for (int[] row : batch.inputs()) for (int id : row) assertThat(b.getLong()).as("step %d ids", s).isEqualTo(id);
            for (int[] row : batch.targets()) for (int id : row) assertThat(b.getLong()).as("step %d targets", s).isEqualTo(id);
        }
        assertThat(b.remaining()).isZero();
        assertThat(CliTest.kina("model", "batches", "--out", f.toString()).err().strip())
                .isEqualTo("error: model batches: give --steps N, how many steps' batches to write");
        assertThat(CliTest.kina("model", "grow").err().strip()).isEqualTo("error: model grow: unknown action (print, init or batches)");
    }
}
