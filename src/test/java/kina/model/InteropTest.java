package kina.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import kina.eval.Tensor;
import kina.io.Npy;
import kina.io.SafeTensors;
import kina.ir.DType;
import kina.ir.TensorType;
import kina.plan.Plan;
import org.junit.jupiter.api.Test;

/**
 * kina's llama2.c and Hugging Face files against scripts/reference_interop.py: model.bin was
 * written by the script from the format's description, and its NumPy forwards (run.c's conventions
 * on model.bin, transformers' on kina's HF export of it) give the logits kina's program must match.
 */
class InteropTest {
    static final Path DIR = Path.of("src/test/resources/fixtures/interop");
    static final long[] IDS = {84, 104, 101, 32, 109, 97, 110, 32, 119, 104, 111, 32, 115, 97, 105, 100};

    static byte[] bytes(Path p) {
        try {
            return Files.readAllBytes(p);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static Llama2c.Model fixture() { return Llama2c.read("model.bin", bytes(DIR.resolve("model.bin")), "interop"); }

    @Test void readsTheReferenceFileAndWritesItBackBitForBit() {
        Llama2c.Model m = fixture();
        assertThat(m.config()).isEqualTo(Config.load(DIR.resolve("interop.json")));
        assertThat(m.sharedClassifier()).isFalse();
        assertThat(Llama2c.write(m.config(), m.weights())).isEqualTo(bytes(DIR.resolve("model.bin")));
    }

    /** kina's logits program on the imported weights: the logits run.c's conventions give, within 1e-5 of the largest. */
    @Test void kinasLogitsMatchTheLlama2cReference() {
        Llama2c.Model m = fixture();
        assertClose(logits(m.config(), m.weights()), Npy.read(DIR.resolve("logits_llama2c.npy")), "llama2.c");
    }

    @Test void theHuggingFaceExportIsTheReferencesInputAndMatchesItsLogits() {
        Llama2c.Model m = fixture();
        Map<String, Tensor> t = HuggingFace.tensors(m.config(), m.weights());
        assertThat(t.keySet()).startsWith("model.embed_tokens.weight", "model.layers.0.input_layernorm.weight",
                "model.layers.0.self_attn.q_proj.weight").endsWith("model.norm.weight", "lm_head.weight").hasSize(2 + 9 * 2 + 1);
        assertThat(t.get("model.layers.1.self_attn.k_proj.weight").shape().dims()).containsExactly(16, 32);   // KV·hd × D
        assertThat(t.get("model.layers.1.mlp.down_proj.weight").shape().dims()).containsExactly(32, 48);
        assertThat(t.get("lm_head.weight").shape().dims()).containsExactly(256, 32);
        assertThat(SafeTensors.encode(t, Map.of("format", "pt"))).isEqualTo(bytes(DIR.resolve("hf/model.safetensors")));
        assertThat(HuggingFace.config(m.config(), false)).isEqualTo(bytes(DIR.resolve("hf/config.json")));
        assertClose(logits(m.config(), m.weights()), Npy.read(DIR.resolve("logits_hf.npy")), "transformers");
    }

    /** A kina model written and read back: every weight bit for bit, GQA and a model without an MLP included. */
    @Test void writeThenReadIsTheIdentity() {
        for (Config c : new Config[] {Config.byName("tiny"),
                new Config("nomlp", 256, 32, 4, 1, 8, 3, 0, Config.ROPE_BASE, Config.EPS, false)}) {
            Map<String, Tensor> w = Init.weights(c, 9);
            java.util.SplittableRandom r = new java.util.SplittableRandom(4);   // norm gains start at 1: make each distinct
            w.replaceAll((k, v) -> k.endsWith("norm") ? Tensor.ofFloats(v.type(), r.doubles(v.size()).map(x -> (float) (0.5 + x)).toArray()) : v);
            Llama2c.Model back = Llama2c.read("x.bin", Llama2c.write(c, w), c.name());
            assertThat(back.config()).isEqualTo(c);
            assertThat(back.weights().keySet()).containsExactlyElementsOf(w.keySet());
            for (String k : w.keySet()) assertThat(back.weights().get(k).bitEquals(w.get(k))).as(c.name() + " " + k).isTrue();
        }
    }

    /** A file whose classifier is the embedding (positive vocab_size) imports with lm_head = embᵀ. */
    @Test void aSharedClassifierBecomesTheEmbeddingTransposed() {
        byte[] f = bytes(DIR.resolve("model.bin"));
        int cls = 256 * 32 * 4;
        byte[] shared = java.util.Arrays.copyOf(f, f.length - cls);
        ByteBuffer.wrap(shared).order(ByteOrder.LITTLE_ENDIAN).putInt(20, 256);
        Llama2c.Model m = Llama2c.read("s.bin", shared, "s");
        assertThat(m.sharedClassifier()).isTrue();
        Tensor emb = m.weights().get("emb"), lm = m.weights().get("lm_head");
        assertThat(lm.floats()[5 * 256 + 7]).isEqualTo(emb.floats()[7 * 32 + 5]);
    }

    @Test void whatTheFormatsCannotHoldIsRefusedByName() {
        Config tiny = Config.byName("tiny");
        Map<String, Tensor> w = Init.weights(tiny, 1);
        Config base = new Config("tiny", 256, 64, 2, 2, 64, 2, 172, 500000, Config.EPS, false);
        assertThatThrownBy(() -> Llama2c.write(base, w)).isInstanceOf(ConfigError.class).hasMessageContaining("rope_base 500000.0");
        Config eps = new Config("tiny", 256, 64, 2, 2, 64, 2, 172, Config.ROPE_BASE, 1e-6, false);
        assertThatThrownBy(() -> Llama2c.write(eps, w)).hasMessageContaining("eps 1.0E-6");
        assertThatThrownBy(() -> Llama2c.write(Config.byName("storylm0"), w)).hasMessageContaining("toy");
        Config noMlp = new Config("nomlp", 256, 32, 4, 1, 8, 3, 0, Config.ROPE_BASE, Config.EPS, false);
        assertThatThrownBy(() -> HuggingFace.tensors(noMlp, Init.weights(noMlp, 1))).hasMessageContaining("mlp_hidden 0");
    }

    @Test void aBrokenFileIsOneLine() {
        byte[] f = bytes(DIR.resolve("model.bin"));
        assertThatThrownBy(() -> Llama2c.read("m.bin", java.util.Arrays.copyOf(f, 20), "m")).isInstanceOf(DataError.class)
                .hasMessage("m.bin: not a llama2.c model.bin: 20 bytes, shorter than its 28-byte header");
        assertThatThrownBy(() -> Llama2c.read("m.bin", java.util.Arrays.copyOf(f, f.length - 4), "m")).isInstanceOf(DataError.class)
                .hasMessage("m.bin: 128152 bytes, but its header (dim 32, hidden_dim 48, n_layers 2, n_heads 4, n_kv_heads 2, vocab_size -256, seq_len 16) needs 128156");
        byte[] v1 = f.clone();
        ByteBuffer.wrap(v1).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 0x616b3432).putInt(4, 1);
        assertThatThrownBy(() -> Llama2c.read("m.bin", v1, "m")).isInstanceOf(DataError.class)
                .hasMessage("m.bin: llama2.c's version 1 format (magic \"ak42\"); kina reads the legacy v0 format (llama2.c's export.py --version 0)");
        byte[] odd = f.clone();
        ByteBuffer.wrap(odd).order(ByteOrder.LITTLE_ENDIAN).putInt(12, 3);       // 3 heads of 32 / 3
        assertThatThrownBy(() -> Llama2c.read("m.bin", odd, "m")).isInstanceOf(DataError.class).hasMessageContaining("n_heads 3");
    }

    static Tensor logits(Config c, Map<String, Tensor> w) {
        Map<String, Tensor> in = new HashMap<>(w);
        Tensor[] rope = Rope.tables(c);
        in.put("ids", Tensor.ofInts(TensorType.host(DType.I64, 1, c.seq()), IDS));
        in.put("cos", rope[0]);
        in.put("sin", rope[1]);
        return Plan.compile(StoryLm.logits(c)).run(in).getFirst();
    }

    static void assertClose(Tensor got, Tensor want, String what) {
        assertThat(got.shape()).isEqualTo(want.shape());
        double scale = 0, err = 0;
        for (int i = 0; i < want.size(); i++) scale = Math.max(scale, Math.abs(want.get(i)));
        for (int i = 0; i < want.size(); i++) err = Math.max(err, Math.abs(got.get(i) - want.get(i)));
        assertThat(scale).as("the reference's logits are not small").isGreaterThan(1);
        assertThat(err / scale).as(what + ": largest error relative to the largest logit").isLessThanOrEqualTo(1e-5);
    }
}
