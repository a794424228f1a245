package kina.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kina.eval.Tensor;
import kina.io.Gguf;
import kina.io.ModelFileError;
import org.junit.jupiter.api.Test;

/** kina → GGUF → kina bit for bit (F32; F16 rounds each matrix once), and what the format or kina cannot hold refused by name. */
class GgufRoundTripTest {
    @Test void kinaToGgufToKinaIsTheIdentity() throws Exception {
        BpeTokenizer bpe = LlamaCppTest.bpe();
        Config bytes = new Config("g-bytes", 256, 32, 2, 2, 32, 2, 48, Config.ROPE_BASE, Config.EPS, false);
        Config gqa = new Config("g-bpe", bpe.vocab(), 32, 4, 2, 32, 2, 48, 500000, 1e-6, false);
        for (Object[] t : new Object[][] {{bytes, new ByteTokenizer()}, {gqa, bpe}}) {
            Config c = (Config) t[0];
            Tokenizer tok = (Tokenizer) t[1];
            Map<String, Tensor> w = LlamaCppTest.model(c, 4, _ -> false);
            ImportedModel back = LlamaCpp.read("x.gguf", LlamaCpp.write(c, w, tok, false), null, "x", null);
            assertThat(back.config()).isEqualTo(c);
            assertThat(back.notes()).isEmpty();
            assertThat(Checkpoint.sameTokenizer(back.tokenizer(), tok)).as(c.name() + " tokenizer").isTrue();
            assertThat(back.weights().keySet()).containsExactlyElementsOf(w.keySet());
            for (String k : w.keySet()) assertThat(back.weights().get(k).bitEquals(w.get(k))).as(c.name() + " " + k).isTrue();
            assertThat(HfImportTest.greedy(back.config(), back.weights(), back.tokenizer())).isEqualTo(HfImportTest.greedy(c, w, tok));
        }
    }

    @Test void anF16FileHoldsEachMatrixRoundedOnceAndTheNormsExactly() {
        Config c = new Config("g16", 256, 32, 2, 1, 16, 1, 48, Config.ROPE_BASE, Config.EPS, false);
        Map<String, Tensor> w = LlamaCppTest.model(c, 5, _ -> false);
        Map<String, Tensor> back = LlamaCpp.read("x.gguf", LlamaCpp.write(c, w, new ByteTokenizer(), true), null, "x", null).weights();
        for (String k : w.keySet()) {
            double[] a = w.get(k).floats(), b = back.get(k).floats();
            for (int i = 0; i < a.length; i++) {
                double want = w.get(k).shape().rank() == 1 ? a[i] : Float.float16ToFloat(Float.floatToFloat16((float) a[i]));
                assertThat(b[i]).as(k + "[" + i + "]").isEqualTo(want);
            }
        }
    }

    /** A file without output.weight (a classifier tied to the embedding, as many llama GGUFs are) imports with lm_head = embᵀ. */
    @Test void aTiedClassifierBecomesTheEmbeddingTransposed() {
        Config c = new Config("tied", 256, 32, 2, 2, 16, 1, 48, Config.ROPE_BASE, Config.EPS, false);
        Gguf.Contents g = Gguf.read("x", LlamaCpp.write(c, LlamaCppTest.model(c, 6, _ -> false), new ByteTokenizer(), false));
        List<Gguf.Tensor> ts = new ArrayList<>(g.tensors());
        ts.removeIf(t -> t.name().equals("output.weight"));
        ImportedModel m = LlamaCpp.read("x", Gguf.write(g.metadata(), ts), null, "x", null);
        assertThat(m.notes()).singleElement().asString().contains("tied");
        Tensor emb = m.weights().get("emb"), lm = m.weights().get("lm_head");
        assertThat(lm.floats()[5 * 256 + 7]).isEqualTo(emb.floats()[7 * 32 + 5]);
    }

    static byte[] withMeta(Config c, String key, Gguf.Value v) {
        Gguf.Contents g = Gguf.read("x", LlamaCpp.write(c, LlamaCppTest.model(c, 6, _ -> false), new ByteTokenizer(), false));
        Map<String, Gguf.Value> m = new LinkedHashMap<>(g.metadata());
        if (v == null) m.remove(key);
        else m.put(key, v);
        return Gguf.write(m, g.tensors());
    }

    @Test void whatKinaOrTheFormatCannotHoldIsRefusedByName() {
        Config c = new Config("r", 256, 32, 2, 2, 16, 1, 48, Config.ROPE_BASE, Config.EPS, false);
        assertThatThrownBy(() -> LlamaCpp.write(Config.byName("storylm0"), Map.of(), new ByteTokenizer(), false)).isInstanceOf(ConfigError.class).hasMessageContaining("toy");
        Config noMlp = new Config("nomlp", 256, 32, 4, 1, 8, 3, 0, Config.ROPE_BASE, Config.EPS, false);
        assertThatThrownBy(() -> LlamaCpp.write(noMlp, Init.weights(noMlp, 1), new ByteTokenizer(), false)).hasMessageContaining("mlp_hidden 0");
        assertThatThrownBy(() -> LlamaCpp.read("m.gguf", withMeta(c, "general.architecture", Gguf.Value.string("qwen2")), null, "m", null))
                .isInstanceOf(ModelFileError.class).hasMessage("m.gguf: general.architecture \"qwen2\": kina imports llama models");
        assertThatThrownBy(() -> LlamaCpp.read("m.gguf", withMeta(c, "tokenizer.ggml.model", Gguf.Value.string("gpt2")), null, "m", null))
                .hasMessage("m.gguf: tokenizer.ggml.model \"gpt2\": kina's tokenizers are bytes or a SentencePiece-style BPE (\"llama\")");
        assertThatThrownBy(() -> LlamaCpp.read("m.gguf", withMeta(c, "llama.rope.dimension_count", Gguf.Value.u32(8)), null, "m", null))
                .hasMessageContaining("llama.rope.dimension_count 8 with 2 heads over embedding_length 32");
        assertThatThrownBy(() -> LlamaCpp.read("m.gguf", withMeta(c, "llama.rope.scaling.type", Gguf.Value.string("linear")), null, "m", null))
                .hasMessage("m.gguf: llama.rope.scaling.type linear: kina's RoPE is unscaled (rope.freq_base only)");
        assertThatThrownBy(() -> LlamaCpp.read("m.gguf", withMeta(c, "llama.context_length", Gguf.Value.u32(8192)), null, "m", null))
                .hasMessageContaining("llama.context_length 8192 is over kina's longest window, 4096");
        assertThat(LlamaCpp.read("m.gguf", withMeta(c, "llama.context_length", Gguf.Value.u32(8192)), null, "m", 64).config().seq()).isEqualTo(64);
        assertThatThrownBy(() -> LlamaCpp.read("m.gguf", withMeta(c, "llama.embedding_length", null), null, "m", null)).hasMessage("m.gguf: no llama.embedding_length");
        Config wide = new Config("r", 256, 32, 2, 2, 16, 1, 40, Config.ROPE_BASE, Config.EPS, false);
        byte[] f = withMeta(wide, "llama.feed_forward_length", Gguf.Value.u32(48));
        assertThatThrownBy(() -> LlamaCpp.read("m.gguf", f, null, "m", null)).hasMessage("m.gguf: tensor 'blk.0.ffn_gate.weight' has ne [32, 40], the config needs [32, 48]");
    }
}
