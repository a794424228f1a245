package kina.model;

import static org.assertj.core.api.Assertions.assertThat;

import de.kherud.llama.InferenceParameters;
import de.kherud.llama.LlamaModel;
import de.kherud.llama.ModelParameters;
import de.kherud.llama.args.LogFormat;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kina.eval.Tensor;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * kina's GGUF export run by llama.cpp itself (java-llama.cpp, whose jar carries llama.cpp's
 * library): llama.cpp tokenizes each prompt to kina's ids and continues it greedily, 100 tokens,
 * exactly as kina's sampler does with top-k 1, for a byte-level MHA model and a BPE GQA model.
 */
class LlamaCppTest {
    static final int TOKENS = 100;
    static final String[] PROMPTS = {"The man who", "Once upon a time, a little"};

    @BeforeAll static void quietLlama() {
        LlamaModel.setLogger(LogFormat.TEXT, (level, message) -> { });
    }

    /**
     * A seeded random model whose greedy text is printable: matrices N(0, 1/in) (the classifier
     * ×3, so that logits are far apart), norm gains in [0.5, 1.5), and the classifier's columns of
     * the ids {@code quiet} names zero, so that they never win (control bytes, bytes ≥ 0x80, specials).
     */
    static Map<String, Tensor> model(Config c, long seed, java.util.function.IntPredicate quiet) {
        SplittableRandom r = new SplittableRandom(seed);
        Map<String, Tensor> w = new LinkedHashMap<>();
        for (StoryLm.Weight wt : StoryLm.weights(c)) {
            double[] x = new double[(int) new kina.ir.Shape(wt.shape()).vol()];
            double std = wt.name().equals("emb") ? 1 : wt.rank() == 2 ? 1 / Math.sqrt(wt.shape()[0]) * (wt.name().equals("lm_head") ? 3 : 1) : 0;
            for (int i = 0; i < x.length; i++) x[i] = (float) (wt.rank() == 1 ? 0.5 + r.nextDouble() : std * r.nextGaussian());
            if (wt.name().equals("lm_head"))
                for (int i = 0; i < x.length; i++) if (quiet.test(i % c.vocab())) x[i] = 0;
            w.put(wt.name(), Tensor.ofFloats(kina.ir.TensorType.host(kina.ir.DType.F32, wt.shape()), x));
        }
        return w;
    }

    static boolean unprintableByte(int b) { return (b < 0x20 && b != '\n') || b >= 0x7f; }

    static BpeTokenizer bpe() throws Exception {
        Path f = Path.of("src/test/resources/fixtures/bpe/bpe_kina_v400.bin");
        return BpeTokenizer.fromLlama2c(f.toString(), Files.readAllBytes(f), 400);
    }

    /** What kina's sampler writes after {@code prompt} with top-k 1, and its ids. */
    static String kinaGreedy(Config c, Map<String, Tensor> w, Tokenizer tok, String prompt, List<Integer> ids) {
        new Sampler(c, w).generate(tok.encode(prompt), TOKENS, 1.0, 1, 1, ids::add);
        return tok.decode(ids.stream().mapToInt(Integer::intValue).toArray());
    }

    static void assertLlamaCppAgrees(Path dir, Config c, Map<String, Tensor> w, Tokenizer tok, boolean f16) throws Exception {
        Path gguf = dir.resolve(c.name() + ".gguf");
        Files.write(gguf, LlamaCpp.write(c, w, tok, f16));
        Map<String, Tensor> run = f16 ? LlamaCpp.read("x", Files.readAllBytes(gguf), null, "x", null).weights() : w;
        var mp = new ModelParameters().disableLog().setModel(gguf.toString()).setCtxSize(c.seq()).setThreads(1).setThreadsBatch(1);
        try (LlamaModel m = new LlamaModel(mp)) {
            for (String prompt : PROMPTS) {
                assertThat(m.encode(prompt)).as("llama.cpp's ids of '%s'", prompt).containsExactly(tok.encode(prompt));
                List<Integer> ids = new ArrayList<>();
                String kina = kinaGreedy(c, run, tok, prompt, ids);
                String llama = m.complete(new InferenceParameters(prompt).setTemperature(0f).setTopK(1).setNPredict(TOKENS)
                        .setIgnoreEos(true).setRepeatPenalty(1f).setSeed(1));
                System.out.printf("%s: %s%n  kina:      %s%n  llama.cpp: %s%n", c.name(), prompt,
                        kina.replace("\n", "\\n"), llama.replace("\n", "\\n"));
                assertThat(ids.stream().distinct().count()).as("a continuation that is not one token repeated").isGreaterThan(10);
                assertThat(llama).as("llama.cpp's greedy continuation of '%s'", prompt).isEqualTo(kina);
            }
        }
    }

    @Test void llamaCppContinuesAByteLevelModelAsKinaDoes(@TempDir Path dir) throws Exception {
        Config c = new Config("bytes-mha", 256, 64, 4, 4, 128, 2, 96, Config.ROPE_BASE, Config.EPS, false);
        assertLlamaCppAgrees(dir, c, model(c, 5, LlamaCppTest::unprintableByte), new ByteTokenizer(), false);
    }

    @Test void llamaCppContinuesABpeGqaModelAsKinaDoes(@TempDir Path dir) throws Exception {
        BpeTokenizer tok = bpe();
        Config c = new Config("bpe-gqa", tok.vocab(), 64, 4, 2, 128, 2, 96, 500000, 1e-6, false);
        assertLlamaCppAgrees(dir, c, model(c, 6, id -> id < BpeTokenizer.FIRST_PIECE), tok, false);
    }

    /** An F16 file: llama.cpp's greedy text is kina's on the weights rounded to F16 (as kina imports the file). */
    @Test void llamaCppContinuesAnF16FileAsKinaDoesOnItsRoundedWeights(@TempDir Path dir) throws Exception {
        Config c = new Config("bytes-f16", 256, 64, 4, 4, 128, 2, 96, Config.ROPE_BASE, Config.EPS, false);
        assertLlamaCppAgrees(dir, c, model(c, 5, LlamaCppTest::unprintableByte), new ByteTokenizer(), true);
    }
}
