package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kina.ad.TransformAd;
import kina.ir.DType;
import kina.ir.Program;
import org.junit.jupiter.api.Test;

/** StoryLM-0 end to end: the composed SGD step learns, and bad token ids trap first. */
class StoryLm0Test {
    static final String[] WEIGHTS = {"emb", "mask", "scale", "wq", "wk", "wv", "wo", "lm_head"};

    @Test void repeatedSgdStepsDriveTheLossUnderAFifthOfItsStart() {
        Fixture fx = Fixture.load("storylm0_train_step_f32.json");
        Program step = TransformAd.transform(Programs.checked(fx.program(), Programs.source(fx.program(), DType.F32)));
        Map<String, Tensor> in = new HashMap<>(fx.inputs());
        in.put("lr", Tensor.of(DType.F32, new long[] {1, 1}, 0.1));
        double first = Double.NaN, last = Double.NaN;
        StringBuilder curve = new StringBuilder("storylm0 SGD lr 0.1 on ids [[3, 1, 3, 7]] -> [[1, 3, 7, 0]]:\n");
        int steps = 0;
        for (; steps < 500; steps++) {
            List<Tensor> out = Programs.flatten(new Interpreter(in).run(step));
            double loss = out.get(8).floats()[0];
            if (steps == 0) first = loss;
            last = loss;
            if (steps % 25 == 0) curve.append(String.format("  step %3d  loss %.5f%n", steps, loss));
            for (int w = 0; w < WEIGHTS.length; w++) in.put(WEIGHTS[w], out.get(w));
            if (loss < 0.2 * first) break;
        }
        curve.append(String.format("  step %3d  loss %.5f (start %.5f)%n", steps, last, first));
        System.out.print(curve);
        assertThat(last).as(curve.toString()).isLessThan(0.2 * first);
        assertThat(steps).isLessThan(500);
    }

    @Test void anOutOfRangeTokenIdTrapsBeforeAnyWeightChanges() {
        Fixture fx = Fixture.load("storylm0_train_step_f32.json");
        Program step = TransformAd.transform(Programs.checked(fx.program(), Programs.source(fx.program(), DType.F32)));
        for (long bad : new long[] {8, -1}) {
            Map<String, Tensor> in = new HashMap<>(fx.inputs());
            Map<String, double[]> before = new HashMap<>();              // the weights' values, copied (not the tensors)
            for (String w : WEIGHTS) before.put(w, in.get(w).floats().clone());
            in.put("token_ids", Tensor.of(DType.I64, new long[] {1, 4}, 3, bad, 3, 7));
            assertThatThrownBy(() -> new Interpreter(in).run(step))
                    .isInstanceOf(EvalError.class)
                    .hasMessageContaining("let x: gather index out of bounds: indices[0, 1] = " + bad + ", not in [0, 8)");
            for (String w : WEIGHTS) assertThat(in.get(w).floats()).as(w).isEqualTo(before.get(w));
        }
    }
}
