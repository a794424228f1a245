package kina.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kina.eval.Interpreter;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Program;
import kina.ir.TensorType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class SamplerTest {
    /** The full-window mode: each step reruns the window program, the window sliding by one past seq. */
    @Test void topOneFollowsTheInterpretersArgmaxPastTheWindow() {
        Config c = Config.byName("tiny");
        Map<String, Tensor> w = Init.weights(c, 7);
        int[] prompt = {'T', 'h', 'e', ' '};
        int n = c.seq() + 6;                                   // past one window: the text slides
        List<Integer> got = new ArrayList<>();
        new Sampler(c, w, Sampler.Mode.FULL_WINDOW).generate(prompt, n, 1.0, 1, 3, got::add);

        Program logits = StoryLm.logits(c);
        Tensor[] rope = Rope.tables(c);
        List<Integer> text = new ArrayList<>();
        for (int b : prompt) text.add(b);
        for (int step = 0; step < n; step++) {
            int t = c.seq(), from = Math.max(0, text.size() - t), used = text.size() - from;
            long[] ids = new long[t];
            for (int i = 0; i < used; i++) ids[i] = text.get(from + i);
            Map<String, Tensor> in = new HashMap<>(w);
            in.put("ids", Tensor.ofInts(TensorType.host(DType.I64, 1, t), ids));
            in.put("cos", rope[0]);
            in.put("sin", rope[1]);
            double[] out = ((Tensor) new Interpreter(in).run(logits)).floats();
            int best = 0, v = c.vocab();
            for (int j = 1; j < v; j++) if (out[(used - 1) * v + j] > out[(used - 1) * v + best]) best = j;
            text.add(best);
        }
        assertThat(got).isEqualTo(text.subList(prompt.length, text.size()));
    }

    /** Temperature 0 is greedy: whatever the seed and top-k, the tokens top-k 1 draws (the interpreter's argmax, above). */
    @Test void temperatureZeroIsGreedyAsTopOne() {
        Config c = Config.byName("tiny");
        Map<String, Tensor> w = Init.weights(c, 7);
        int[] prompt = {'T', 'h', 'e', ' '};
        List<Integer> topOne = new ArrayList<>(), coldA = new ArrayList<>(), coldB = new ArrayList<>();
        Sampler s = new Sampler(c, w);
        s.generate(prompt, 30, 0.8, 1, 3, topOne::add);
        s.generate(prompt, 30, 0.0, 40, 1, coldA::add);
        s.generate(prompt, 30, 0.0, 0, 99, coldB::add);
        assertThat(coldA).isEqualTo(topOne);
        assertThat(coldB).isEqualTo(topOne);
    }

    /** Every position's decode-step logits equal the window program's row for it, bit for bit (GQA included). */
    @ParameterizedTest
    @ValueSource(strings = {"tiny", "gqa"})
    void decodeStepLogitsEqualTheWindowsBitForBit(String name) {
        Config c = name.equals("gqa") ? new Config("gqa", 256, 64, 4, 2, 24, 2, 40, Config.ROPE_BASE, Config.EPS, false) : Config.byName(name);
        Map<String, Tensor> w = Init.weights(c, 11);
        SplittableRandom r = new SplittableRandom(5);
        int t = c.seq(), v = c.vocab();
        int[] text = new int[t];
        for (int i = 0; i < t; i++) text[i] = r.nextInt(v);
        Sampler kv = new Sampler(c, w), full = new Sampler(c, w, Sampler.Mode.FULL_WINDOW);
        double[] window = full.prefill(text, 0, t).floats();
        kv.prefill(text, 0, 1);                               // the first token only
        for (int p = 1; p < t; p++) {
            double[] got = kv.decode(text[p], p);
            for (int j = 0; j < v; j++)
                assertThat(Double.doubleToRawLongBits(got[j])).as("position %d, logit %d: %s vs %s", p, j, got[j], window[p * v + j])
                        .isEqualTo(Double.doubleToRawLongBits(window[p * v + j]));
        }
    }

    /** Within the window both modes draw the same tokens; past it the cache slides and still generates. */
    @Test void theCacheSamplesWhatTheWindowSamples() {
        Config c = Config.byName("tiny");
        Map<String, Tensor> w = Init.weights(c, 3);
        int[] prompt = {'A', ' '};
        List<Integer> a = new ArrayList<>(), b = new ArrayList<>();
        Sampler kv = new Sampler(c, w);
        kv.generate(prompt, c.seq() - prompt.length, 0.9, 20, 42, a::add);
        new Sampler(c, w, Sampler.Mode.FULL_WINDOW).generate(prompt, c.seq() - prompt.length, 0.9, 20, 42, b::add);
        assertThat(a).isEqualTo(b);
        List<Integer> past = new ArrayList<>();
        int[] all = kv.generate(prompt, 2 * c.seq() + 5, 0.9, 20, 42, past::add);   // a new generation prefills afresh
        assertThat(past).hasSize(2 * c.seq() + 5).startsWith(a.toArray(Integer[]::new));
        assertThat(all).hasSize(prompt.length + 2 * c.seq() + 5);
    }
}
