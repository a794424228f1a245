package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import kina.cli.CliTest.Result;
import kina.model.BpeTokenizer;
import kina.model.Checkpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** train --tokenizer bpe, export, import, and back: the files and the one-line errors. */
class InteropCommandTest {
    static final String DATA = "src/test/resources/fixtures/bpe/bpe_train.txt";

    @Test void aBpeModelGoesToLlama2cAndBack(@TempDir Path dir) throws Exception {
        Path run = dir.resolve("run"), bin = dir.resolve("out/model.bin"), back = dir.resolve("back");
        Files.createDirectories(bin.getParent());
        Result t = CliTest.kina("train", "--tokenizer", "bpe", "--vocab", "300", "--steps", "2", "--data", DATA, "--batch", "1",
                "--eval-batches", "1", "--threads", "1", "--no-progress", "--out", run.toString());
        assertThat(t.code()).as(t.err()).isZero();
        Checkpoint.Loaded ck = Checkpoint.load(run);
        assertThat(ck.tokenizer()).isInstanceOf(BpeTokenizer.class);
        assertThat(ck.state().config().vocab()).isEqualTo(300);
        assertThat(ck.dir().resolve("tokenizer.bin")).exists();

        Result e = CliTest.kina("export", "--checkpoint", run.toString(), "--format", "llama2c", "-o", bin.toString());
        assertThat(e.code()).as(e.err()).isZero();
        assertThat(e.out()).contains("bpe tokenizer, 300 ids");
        assertThat(Files.readAllBytes(bin.resolveSibling("tokenizer.bin"))).isEqualTo(ck.tokenizer().toLlama2c());

        Result i = CliTest.kina("import", bin.toString(), "--out", back.toString(), "--name", "tiny");
        assertThat(i.code()).as(i.err()).isZero();
        Checkpoint.Loaded im = Checkpoint.load(back);
        assertThat(im.state().config()).isEqualTo(ck.state().config());
        assertThat(Checkpoint.sameTokenizer(im.tokenizer(), ck.tokenizer())).isTrue();
        for (String k : ck.weights().keySet()) assertThat(im.weights().get(k).bitEquals(ck.weights().get(k))).as(k).isTrue();
        assertThat(im.moments()).isEmpty();

        // the imported checkpoint trains on (fresh moments) and exports again to the same bytes
        Result r = CliTest.kina("train", "--resume", back.toString(), "--steps", "1", "--data", DATA, "--batch", "1", "--eval-batches", "1",
                "--threads", "1", "--no-progress");
        assertThat(r.code()).as(r.err()).isZero();
        Path again = dir.resolve("again.bin");
        assertThat(CliTest.kina("export", "--checkpoint", back.resolve("step-000000").toString(), "--format", "llama2c", "-o", again.toString()).code()).isZero();
        assertThat(Files.readAllBytes(again)).isEqualTo(Files.readAllBytes(bin));

        Result hf = CliTest.kina("export", "--checkpoint", run.toString(), "--format", "hf", "-o", dir.resolve("hf").toString());
        assertThat(hf.code()).as(hf.err()).isZero();
        assertThat(dir.resolve("hf/model.safetensors")).exists();
        assertThat(Files.readString(dir.resolve("hf/config.json"))).contains("\"vocab_size\" : 300").contains("\"bos_token_id\" : 1");
    }

    @Test void mistakesAreOneLine(@TempDir Path dir) throws Exception {
        Result missing = CliTest.kina("import", dir.resolve("nope.bin").toString(), "--out", dir.resolve("x").toString());
        assertThat(missing.code()).isEqualTo(1);
        assertThat(missing.err().strip()).isEqualTo("error: " + dir.resolve("nope.bin") + ": file not found");
        Path junk = Files.write(dir.resolve("junk.bin"), new byte[] {1, 2, 3});
        Result bad = CliTest.kina("import", junk.toString(), "--out", dir.resolve("x").toString());
        assertThat(bad.err().strip()).isEqualTo("error: " + junk + ": not a llama2.c model.bin: 3 bytes, shorter than its 28-byte header");
        assertThat(dir.resolve("x")).doesNotExist();
        Result vocab = CliTest.kina("train", "--vocab", "500", "--steps", "1", "--out", dir.resolve("y").toString());
        assertThat(vocab.code()).isEqualTo(1);
        assertThat(vocab.err().strip()).isEqualTo("error: --vocab is the BPE's size: give it with --tokenizer bpe");
        Result fmt = CliTest.kina("export", "--checkpoint", dir.toString(), "--format", "gguf", "-o", dir.resolve("m").toString());
        assertThat(fmt.code()).isEqualTo(1);
    }
}
