package kina.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kina.eval.Interpreter;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Program;
import kina.ir.TensorType;
import org.junit.jupiter.api.Test;

/** The sampler runs the logits program as a compiled plan: with top-k 1 it follows the interpreter's argmax. */
class SamplerTest {

    @Test void topOneFollowsTheInterpretersArgmaxPastTheWindow() {
        Config c = Config.byName("tiny");
        Map<String, Tensor> w = Trainer.init(c, 7);
        int[] prompt = {'T', 'h', 'e', ' '};
        int n = c.seq() + 6;                                   // past one window: the text slides
        List<Integer> got = new ArrayList<>();
        new Sampler(c, w).generate(prompt, n, 1.0, 1, 3, got::add);

        Program logits = StoryLm.logits(c);
        Tensor[] rope = Trainer.ropeTables(c);
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
}
