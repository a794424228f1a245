package kina.model;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import kina.eval.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A second reader of kina's Hugging Face export: Jlama loads it, tokenizes as kina does and continues greedily as kina does. */
class JlamaTest {
    static final int TOKENS = 40;

    static List<Integer> jlamaGreedy(AbstractModel m, int[] prompt) {
        List<Integer> out = new ArrayList<>();
        try (KvBufferCache cache = new KvBufferCache(m); AbstractTensor logits = m.makeDenseTensor(m.getConfig().vocabularySize)) {
            KvBufferCache.KvBuffer kv = cache.getEphemeralKvBuffer();
            AbstractTensor last = m.batchForward(prompt, 0, kv);
            int next = m.sample(last.slice(last.shape().first() - 1), 0f, 0f, logits);
            last.close();
            for (int pos = prompt.length; out.size() < TOKENS; pos++) {
                out.add(next);
                AbstractTensor o = m.forward(next, pos, kv, Optional.empty());
                next = m.sample(o, 0f, 0f, logits);
                o.close();
            }
        }
        return out;
    }

    static void assertJlamaAgrees(Path dir, Config c, Map<String, Tensor> w, Tokenizer tok) throws Exception {
        Files.createDirectories(dir);
        HuggingFace.write(dir, c, w, tok);
        if (tok instanceof ByteTokenizer) {
            // Jlama's LlamaConfig needs an eos_token_id (a NullPointerException without one); bytes have no EOS,
            // so kina writes none: the copy Jlama reads gets an id no token has (the loop below never asks for EOS)
            Path cfg = dir.resolve("config.json");
            Files.writeString(cfg, Files.readString(cfg).replaceFirst("\\{", "{\n  \"eos_token_id\" : -1,"));
        }
        AbstractModel m = ModelSupport.loadModel(dir.toFile(), DType.F32, DType.F32);
        for (String prompt : LlamaCppTest.PROMPTS) {
            int[] ids = tok.encode(prompt);
            assertThat(Arrays.stream(m.getTokenizer().encode(prompt)).mapToInt(Math::toIntExact).toArray()).as("Jlama's ids of '%s'", prompt).containsExactly(ids);
            List<Integer> kina = new ArrayList<>();
            new Sampler(c, w).generate(ids, TOKENS, 1.0, 1, 1, kina::add);
            List<Integer> jlama = jlamaGreedy(m, ids);
            System.out.printf("%s: %s%n  kina:  %s%n  Jlama: %s%n", c.name(), prompt, tok.decode(kina.stream().mapToInt(i -> i).toArray()),
                    tok.decode(jlama.stream().mapToInt(i -> i).toArray()));
            assertThat(jlama).as("Jlama's greedy ids after '%s'", prompt).isEqualTo(kina);
        }
    }

    @Test void jlamaContinuesABpeGqaExportAsKinaDoes(@TempDir Path dir) throws Exception {
        BpeTokenizer tok = LlamaCppTest.bpe();
        Config c = new Config("jlama-bpe", tok.vocab(), 64, 4, 2, 128, 2, 96, 500000, 1e-6, false);
        assertJlamaAgrees(dir.resolve("bpe"), c, LlamaCppTest.model(c, 6, id -> id < BpeTokenizer.FIRST_PIECE), tok);
    }

    @Test void jlamaContinuesAByteLevelExportAsKinaDoes(@TempDir Path dir) throws Exception {
        Config c = new Config("jlama-bytes", 256, 64, 4, 4, 128, 2, 96, Config.ROPE_BASE, Config.EPS, false);
        assertJlamaAgrees(dir.resolve("bytes"), c, LlamaCppTest.model(c, 5, LlamaCppTest::unprintableByte), new ByteTokenizer());
    }
}
