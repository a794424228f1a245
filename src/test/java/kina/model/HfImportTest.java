package kina.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import kina.io.Npy;
import kina.eval.Tensor;
import kina.io.ModelFileError;
import kina.io.TokenizerJson;
import kina.io.Vocabulary;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hugging Face LlamaForCausalLM directories into kina: the models scripts/reference_hf_import.py
 * wrote (F32 GQA with head_dim, rope_theta and eps of their own; BF16 sharded and tied; F16) give
 * the logits of the script's NumPy forward; kina → HF → kina is the identity; what kina cannot
 * represent is refused in one line naming it.
 */
class HfImportTest {
    static final Path DIR = Path.of("src/test/resources/fixtures/hf-import");

    static ImportedModel fixture(String name) { return HuggingFace.read(DIR.resolve(name), null, InteropTest.IDS.length); }

    @Test void anF32GqaModelWithItsOwnRopeThetaAndEpsGivesTheReferenceLogits() {
        ImportedModel m = fixture("f32-gqa-bpe");
        Config c = m.config();
        assertThat(c).isEqualTo(new Config("f32-gqa-bpe", 308, 32, 4, 2, 16, 2, 48, 500000, 1e-6, false));
        assertThat(m.tokenizer()).isInstanceOf(BpeTokenizer.class);
        assertThat(m.notes()).anyMatch(n -> n.contains("dummy prefix"));
        // the merges of the script's vocabulary: " the" is one token, " said" too
        assertThat(m.tokenizer().encode(" the said")).hasSize(2);
        InteropTest.assertClose(InteropTest.logits(c, m.weights()), Npy.read(DIR.resolve("f32-gqa-bpe/logits.npy")), "f32-gqa-bpe");
    }

    @Test void aBf16ShardedTiedModelGivesTheReferenceLogits() {
        ImportedModel m = fixture("bf16-tied-sharded");
        assertThat(m.tokenizer()).isInstanceOf(ByteTokenizer.class);
        assertThat(m.notes()).anyMatch(n -> n.contains("tie_word_embeddings")).anyMatch(n -> n.contains("bytes"));
        Tensor emb = m.weights().get("emb"), lm = m.weights().get("lm_head");
        assertThat(lm.floats()[3 * 256 + 200]).isEqualTo(emb.floats()[200 * 32 + 3]);
        InteropTest.assertClose(InteropTest.logits(m.config(), m.weights()), Npy.read(DIR.resolve("bf16-tied-sharded/logits.npy")), "bf16");
    }

    @Test void anF16ModelWithAByteTokenizerJsonGivesTheReferenceLogits() {
        ImportedModel m = fixture("f16-mha");
        assertThat(m.tokenizer()).isInstanceOf(ByteTokenizer.class);
        assertThat(m.notes()).isEmpty();
        InteropTest.assertClose(InteropTest.logits(m.config(), m.weights()), Npy.read(DIR.resolve("f16-mha/logits.npy")), "f16");
    }

    /** kina → HF → kina: config, every weight, the tokenizer and the greedy tokens, bit for bit. */
    @Test void kinaToHuggingFaceToKinaIsTheIdentity(@TempDir Path dir) throws Exception {
        BpeTokenizer bpe = LlamaCppTest.bpe();
        Config bytes = new Config("hf-bytes", 256, 32, 2, 2, 32, 2, 48, Config.ROPE_BASE, Config.EPS, false);
        Config gqa = new Config("hf-bpe", bpe.vocab(), 32, 4, 2, 32, 2, 48, 500000, 1e-6, false);
        for (Object[] t : new Object[][] {{bytes, new ByteTokenizer()}, {gqa, bpe}}) {
            Config c = (Config) t[0];
            Tokenizer tok = (Tokenizer) t[1];
            Map<String, Tensor> w = LlamaCppTest.model(c, 3, _ -> false);
            Path out = dir.resolve(c.name());
            Files.createDirectories(out);
            HuggingFace.write(out, c, w, tok);
            ImportedModel back = HuggingFace.read(out, null, null);
            assertThat(back.config()).isEqualTo(c);
            assertThat(Checkpoint.sameTokenizer(back.tokenizer(), tok)).as(c.name() + " tokenizer").isTrue();
            assertThat(back.weights().keySet()).containsExactlyElementsOf(w.keySet());
            for (String k : w.keySet()) assertThat(back.weights().get(k).bitEquals(w.get(k))).as(c.name() + " " + k).isTrue();
            assertThat(greedy(back.config(), back.weights(), back.tokenizer())).isEqualTo(greedy(c, w, tok));
        }
    }

    static List<Integer> greedy(Config c, Map<String, Tensor> w, Tokenizer tok) {
        List<Integer> ids = new ArrayList<>();
        new Sampler(c, w).generate(tok.encode("The man"), 20, 1.0, 1, 1, ids::add);
        return ids;
    }

    /** Without kina's tokenizer.bin, the scores come from the merge list's ranks, and every text splits as before. */
    @Test void aBpeTokenizerJsonAloneEncodesAsKinasBpe() throws Exception {
        BpeTokenizer bpe = LlamaCppTest.bpe();
        byte[] json = TokenizerJson.write(TokenizerVocabulary.of(bpe));
        Vocabulary v = TokenizerJson.read("tokenizer.json", json);
        Tokenizer back = TokenizerVocabulary.tokenizer("tokenizer.json", v);
        byte[] text = Files.readAllBytes(Path.of("src/test/resources/fixtures/bpe/bpe_train.txt"));
        assertThat(back.encode(text)).containsExactly(bpe.encode(text));
        assertThat(back.encode("Tom said, \"the man who ran\" ü")).containsExactly(bpe.encode("Tom said, \"the man who ran\" ü"));
        for (int i = 0; i < bpe.vocab(); i++) assertThat(back.piece(i)).isEqualTo(bpe.piece(i));
    }

    static Path copy(Path dir, String fixture) throws Exception {
        Path to = dir.resolve(fixture);
        Files.createDirectories(to);
        try (var files = Files.list(DIR.resolve(fixture))) {
            for (Path f : files.toList()) Files.copy(f, to.resolve(f.getFileName()));
        }
        return to;
    }

    static void edit(Path file, String from, String to) throws Exception {
        String s = Files.readString(file);
        assertThat(s).contains(from);
        Files.writeString(file, s.replace(from, to));
    }

    @Test void whatKinaCannotRepresentIsRefusedByName(@TempDir Path dir) throws Exception {
        Path m = copy(dir, "f32-gqa-bpe"), cfg = m.resolve("config.json");
        edit(cfg, "\"head_dim\": 8", "\"head_dim\": 16");
        assertThatThrownBy(() -> HuggingFace.read(m, null, 16)).isInstanceOf(ModelFileError.class)
                .hasMessage(cfg + ": head_dim 16 with hidden_size 32 and num_attention_heads 4: kina's heads split hidden_size evenly (head_dim = hidden_size / heads)");
        edit(cfg, "\"head_dim\": 16", "\"head_dim\": 8, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}");
        assertThatThrownBy(() -> HuggingFace.read(m, null, 16)).hasMessageContaining("rope_scaling {\"rope_type\":\"llama3\",\"factor\":8.0}: kina's RoPE is unscaled");
        edit(cfg, "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}", "\"rope_scaling\": null");
        edit(cfg, "\"attention_bias\": false", "\"attention_bias\": true");
        assertThatThrownBy(() -> HuggingFace.read(m, null, 16)).hasMessage(cfg + ": attention_bias true: kina's projections have no bias");
        edit(cfg, "\"attention_bias\": true", "\"attention_bias\": false");
        edit(cfg, "\"max_position_embeddings\": 64", "\"max_position_embeddings\": 131072");
        assertThatThrownBy(() -> HuggingFace.read(m, null, null)).hasMessageContaining("max_position_embeddings 131072 is over kina's longest window, 4096: give");
        assertThat(HuggingFace.read(m, null, 16).config().seq()).isEqualTo(16);
        edit(cfg, "\"LlamaForCausalLM\"", "\"MistralForCausalLM\"");
        assertThatThrownBy(() -> HuggingFace.read(m, null, 16)).hasMessageContaining("architectures [\"MistralForCausalLM\"], model_type \"llama\": kina imports LlamaForCausalLM");
    }

    @Test void aTokenizerKinaCannotRepresentIsRefusedByName() {
        String gpt2 = """
                {"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false}}""";
        assertThatThrownBy(() -> TokenizerJson.read("t.json", gpt2.getBytes(StandardCharsets.UTF_8))).isInstanceOf(ModelFileError.class)
                .hasMessage("t.json: pre_tokenizer ByteLevel (GPT-2's byte-to-unicode BPE, as Llama 3's): kina's BPE is SentencePiece style, with byte fallback");
        String unigram = """
                {"model": {"type": "Unigram", "vocab": [["a", 0.0]]}}""";
        assertThatThrownBy(() -> TokenizerJson.read("t.json", unigram.getBytes(StandardCharsets.UTF_8)))
                .hasMessage("t.json: model type Unigram: kina's tokenizer is a BPE (SentencePiece style, with byte fallback)");
        String noFallback = """
                {"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}""";
        assertThatThrownBy(() -> TokenizerJson.read("t.json", noFallback.getBytes(StandardCharsets.UTF_8))).hasMessageContaining("model.byte_fallback false");
        String missing = """
                {"model": {"type": "BPE", "byte_fallback": true, "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": []}}""";
        assertThatThrownBy(() -> TokenizerJson.read("t.json", missing.getBytes(StandardCharsets.UTF_8)))
                .hasMessage("t.json: no merge ('a', 'b'), though both make the token 'ab': kina's BPE, like SentencePiece, merges every such pair");
        String apart = """
                {"model": {"type": "BPE", "byte_fallback": true, "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5},
                 "merges": ["a bc", "a b", "ab c", "b c"]}}""";
        assertThatThrownBy(() -> TokenizerJson.read("t.json", apart.getBytes(StandardCharsets.UTF_8)))
                .hasMessageContaining("the merges into 'abc' are not adjacent (ranks 0 and 2)");
        Vocabulary small = TokenizerJson.read("t.json", """
                {"model": {"type": "BPE", "byte_fallback": true, "vocab": {"a": 0, "b": 1}, "merges": []}}""".getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> TokenizerVocabulary.tokenizer("t.json", small)).isInstanceOf(ModelFileError.class)
                .hasMessageStartingWith("t.json: a vocabulary of 2 tokens that is neither bytes (256) nor a BPE in kina's layout");
    }

    @Test void aBrokenDirectoryIsOneLine(@TempDir Path dir) throws Exception {
        assertThatThrownBy(() -> HuggingFace.read(dir.resolve("none"), null, null)).hasMessage(dir.resolve("none") + ": directory not found");
        assertThatThrownBy(() -> HuggingFace.read(dir, null, null)).hasMessage(dir.resolve("config.json") + ": file not found");
        Path m = copy(dir, "bf16-tied-sharded");
        Files.delete(m.resolve("model-00002-of-00002.safetensors"));
        assertThatThrownBy(() -> HuggingFace.read(m, null, null))
                .hasMessage(m.resolve("model.safetensors.index.json") + ": weight_map names model-00002-of-00002.safetensors, which is missing");
        Path f = copy(dir, "f16-mha");
        edit(f.resolve("config.json"), "\"intermediate_size\": 48", "\"intermediate_size\": 40");
        assertThatThrownBy(() -> HuggingFace.read(f, null, null))
                .hasMessage(f.resolve("model.safetensors") + ": tensor 'model.layers.0.mlp.gate_proj.weight' has shape [48, 32], config.json needs [40, 32]");
    }
}
