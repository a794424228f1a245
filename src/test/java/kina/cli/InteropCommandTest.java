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

    /** An HF directory (scripts/reference_hf_import.py's) imported, sampled, fine-tuned and exported to GGUF and back. */
    @Test void aHuggingFaceModelImportsSamplesTrainsAndGoesToGgufAndBack(@TempDir Path dir) throws Exception {
        Path hf = Path.of("src/test/resources/fixtures/hf-import/f32-gqa-bpe"), ck = dir.resolve("ck");
        Result i = CliTest.kina("import", hf.toString(), "--out", ck.toString(), "--seq", "32");
        assertThat(i.code()).as(i.err()).isZero();
        assertThat(i.out()).startsWith("imported " + hf + " (Hugging Face LlamaForCausalLM): dim 32, hidden 48, 2 layers, 4 heads (2 kv), vocab 308 (bpe tokenizer), seq 32")
                .contains("note: the tokenizer's dummy prefix");
        Checkpoint.Loaded im = Checkpoint.load(ck);
        assertThat(im.moments()).isEmpty();
        assertThat(im.state().extra().get("imported")).startsWith("Hugging Face LlamaForCausalLM (the tokenizer's dummy prefix");
        Result s = CliTest.kina("sample", "--checkpoint", ck.toString(), "--prompt", "the man", "--tokens", "5", "--top-k", "1", "--threads", "1");
        assertThat(s.code()).as(s.err()).isZero();
        Result t = CliTest.kina("train", "--resume", ck.toString(), "--steps", "1", "--data", DATA, "--batch", "1", "--eval-batches", "1",
                "--threads", "1", "--no-progress");
        assertThat(t.code()).as(t.err()).isZero();
        assertThat(Checkpoint.load(ck).state().step()).isEqualTo(1);

        Path gguf = dir.resolve("m.gguf"), back = dir.resolve("back");
        Result e = CliTest.kina("export", "--checkpoint", ck.resolve("step-000000").toString(), "--format", "gguf", "-o", gguf.toString());
        assertThat(e.code()).as(e.err()).isZero();
        assertThat(e.out()).startsWith("wrote " + gguf + " (GGUF v3, llama, f32-gqa-bpe, F32, bpe tokenizer,");
        Result b = CliTest.kina("import", gguf.toString(), "--out", back.toString());     // the format inferred from the file's magic
        assertThat(b.code()).as(b.err()).isZero();
        Checkpoint.Loaded again = Checkpoint.load(back);
        assertThat(again.state().config()).isEqualTo(im.state().config());
        assertThat(Checkpoint.sameTokenizer(again.tokenizer(), im.tokenizer())).isTrue();
        for (String k : im.weights().keySet()) assertThat(again.weights().get(k).bitEquals(im.weights().get(k))).as(k).isTrue();
        Result f16 = CliTest.kina("export", "--checkpoint", back.toString(), "--format", "gguf", "--dtype", "f16", "-o", dir.resolve("h.gguf").toString());
        assertThat(f16.code()).as(f16.err()).isZero();
        assertThat(Files.size(dir.resolve("h.gguf"))).isLessThan(Files.size(gguf) * 2 / 3);
        Result hfOut = CliTest.kina("export", "--checkpoint", back.toString(), "--format", "hf", "-o", dir.resolve("hf").toString());
        assertThat(hfOut.code()).as(hfOut.err()).isZero();
        assertThat(dir.resolve("hf/tokenizer.json")).exists();
        assertThat(dir.resolve("hf/tokenizer.bin")).exists();
    }

    @Test void importAndExportMistakesAreOneLine(@TempDir Path dir) throws Exception {
        Path hf = Path.of("src/test/resources/fixtures/hf-import/f16-mha");
        Result tok = CliTest.kina("import", hf.toString(), "--out", dir.resolve("x").toString(), "--tokenizer", "t.bin");
        assertThat(tok.err().strip()).isEqualTo("error: --tokenizer is for --format llama2c; hf holds its own tokenizer");
        Result fmt = CliTest.kina("import", hf.toString(), "--format", "onnx", "--out", dir.resolve("x").toString());
        assertThat(fmt.err().strip()).isEqualTo("error: --format onnx: unknown (llama2c, hf or gguf)");
        Path bad = Files.createDirectories(dir.resolve("bad"));
        Files.writeString(bad.resolve("config.json"), "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 48, "
                + "\"num_attention_heads\": 2, \"head_dim\": 32, \"num_hidden_layers\": 1, \"vocab_size\": 256}");
        Result hd = CliTest.kina("import", bad.toString(), "--out", dir.resolve("x").toString());
        assertThat(hd.code()).isEqualTo(1);
        assertThat(hd.err().strip()).isEqualTo("error: " + bad.resolve("config.json") + ": head_dim 32 with hidden_size 32 and num_attention_heads 2: "
                + "kina's heads split hidden_size evenly (head_dim = hidden_size / heads)");
        assertThat(dir.resolve("x")).doesNotExist();
        Path ck = dir.resolve("ck");
        assertThat(CliTest.kina("import", hf.toString(), "--out", ck.toString()).code()).isZero();
        Result dt = CliTest.kina("export", "--checkpoint", ck.toString(), "--format", "hf", "--dtype", "f16", "-o", dir.resolve("o").toString());
        assertThat(dt.err().strip()).isEqualTo("error: --dtype is for --format gguf; hf writes f32");
        Result bf = CliTest.kina("export", "--checkpoint", ck.toString(), "--format", "gguf", "--dtype", "bf16", "-o", dir.resolve("o.gguf").toString());
        assertThat(bf.err().strip()).isEqualTo("error: --dtype bf16: f32 or f16");
        assertThat(dir.resolve("o.gguf")).doesNotExist();
    }
}
