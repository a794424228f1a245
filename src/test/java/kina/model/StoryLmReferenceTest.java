package kina.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kina.ad.TransformAd;
import kina.check.Checker;
import kina.eval.Interpreter;
import kina.eval.Oracle;
import kina.eval.Tensor;
import kina.eval.Value;
import kina.io.SafeTensors;
import kina.ir.Program;
import kina.syntax.Parser;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The whole `tiny` training step kina writes (forward, transform_ad's gradients, clipping, AdamW)
 * against scripts/reference_storylm.py, in F64: every gradient and every updated weight and moment
 * to 1e-9 relative to the tensor's largest magnitude.
 */
class StoryLmReferenceTest {
    static final Optimizer.AdamW ADAMW = new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.1, 1.0);
    static Map<String, Tensor> inputs = new LinkedHashMap<>();
    static Map<String, Tensor> expected = new LinkedHashMap<>();
    static String source;

    @BeforeAll static void load() {
        SafeTensors.Contents c = SafeTensors.read(Path.of("src/test/resources/fixtures/storylm_tiny_step_f64.safetensors"));
        assertThat(c.metadata()).containsEntry("config", "tiny").containsEntry("batch", "2").containsEntry("weight_decay", "0.1")
                .containsEntry("clip", "1.0").containsEntry("adam_eps", "1e-08");
        c.tensors().forEach((k, v) -> (k.startsWith("out.") ? expected : inputs).put(k.replaceFirst("^out\\.", ""), v));
        source = kina.ir.Printer.print(StoryLm.trainStep(Config.byName("tiny"), 2, ADAMW)).replace("F32", "F64");
    }

    static List<Tensor> run(String src, boolean oracle) {
        Program p = Checker.check(Parser.parse("<tiny step>", src));
        Value v = oracle ? new Interpreter(inputs, new Oracle()).run(p) : new Interpreter(inputs).run(TransformAd.transform(p));
        List<Tensor> out = new ArrayList<>();
        for (Value e : ((Value.Tuple) v).elems()) out.add((Tensor) e);
        return out;
    }

    @Test void everyGradientMatchesPyTorch() {
        List<StoryLm.Weight> ws = StoryLm.weights(Config.byName("tiny"));
        int at = source.lastIndexOf("with reverseMode in");
        StringBuilder tuple = new StringBuilder("(loss");
        for (StoryLm.Weight w : ws) tuple.append(", g_").append(w.name());
        List<Tensor> got = run(source.substring(0, at) + "with reverseMode in\n" + tuple + ")\n", false);
        close(got.get(0), expected.get("loss"), "loss");
        for (int i = 0; i < ws.size(); i++) close(got.get(i + 1), expected.get("g_" + ws.get(i).name()), "g_" + ws.get(i).name());
    }

    @Test void theAdamWUpdateOfEveryWeightMatchesPyTorch() {
        List<StoryLm.Weight> ws = StoryLm.weights(Config.byName("tiny"));
        List<Tensor> got = run(source, false);
        int k = 0;
        for (StoryLm.Weight w : ws) close(got.get(k++), expected.get("new_" + w.name()), "new_" + w.name());
        for (String st : ADAMW.state()) for (StoryLm.Weight w : ws) close(got.get(k++), expected.get("new_" + st + "_" + w.name()), "new_" + st + "_" + w.name());
        close(got.get(k++), expected.get("loss"), "loss");
        close(got.get(k), expected.get("grad_norm"), "grad_norm");
        assertThat(got.get(k).floats()[0]).as("clipping binds in this fixture").isGreaterThan(ADAMW.clip());
    }

    @Test void recordedStepEqualsTheOracleBitForBitInF32() {
        String f32 = source.replace("F64", "F32");
        Map<String, Tensor> in32 = new LinkedHashMap<>();
        inputs.forEach((k, v) -> in32.put(k, v.isFloating()
                ? Tensor.ofFloats(v.type().withDType(kina.ir.DType.F32), v.floats().clone()) : v));
        Map<String, Tensor> saved = inputs;
        inputs = in32;
        try {
            List<Tensor> rec = run(f32, false), ora = run(f32, true);
            assertThat(rec).hasSameSizeAs(ora);
            for (int i = 0; i < rec.size(); i++) assertThat(rec.get(i).bitEquals(ora.get(i))).as("output %d", i).isTrue();
        } finally {
            inputs = saved;
        }
    }

    static void close(Tensor got, Tensor want, String what) {
        assertThat(want).as("fixture has " + what).isNotNull();
        assertThat(got.shape()).as(what).isEqualTo(want.shape());
        double scale = 1e-300;
        for (int i = 0; i < want.size(); i++) scale = Math.max(scale, Math.abs(want.get(i)));
        for (int i = 0; i < want.size(); i++)
            assertThat(Math.abs(got.get(i) - want.get(i)) / scale).as("%s[%d]: kina %s vs torch %s", what, i, got.get(i), want.get(i))
                    .isLessThanOrEqualTo(1e-9);
    }
}
