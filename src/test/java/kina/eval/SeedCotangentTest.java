package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kina.ad.TransformAd;
import kina.ir.DType;
import kina.ir.Printer;
import kina.ir.Program;
import org.junit.jupiter.api.Test;

/** A supplied seed cotangent instead of ones: recorded (seed input) == oracle (seed tensor), bit for bit. */
class SeedCotangentTest {
    @Test void aSuppliedSeedScalesTheNllGradientRowByRow() {
        Fixture fx = Fixture.load("nll_ad_f64.json");
        Program p = Programs.checked(fx.program(), Programs.source(fx.program(), DType.F64));
        Tensor seed = Tensor.of(DType.F64, new long[] {1, 4}, 1, 2, 0.5, -1);
        Program t = TransformAd.transform(p, true);
        assertThat(Printer.print(t)).contains("let nll_seed = tensor<F64, [1, 4], @host> in").contains("seed: tensor<F64, [1, 4], @host>");
        Map<String, Tensor> in = new HashMap<>(fx.inputs());
        in.put("nll_seed", seed);
        List<Tensor> rec = Programs.flatten(new Interpreter(in).run(t));
        List<Tensor> ora = Programs.flatten(new Interpreter(fx.inputs(), new Oracle(seed)).run(p));
        AdExamplesTest.assertBits(rec, ora, "seeded nll");
        List<Tensor> ones = Programs.recorded(p, fx.inputs());
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 8; c++)
                assertThat(rec.get(1).floats()[r * 8 + c]).isEqualTo(seed.floats()[r] * ones.get(1).floats()[r * 8 + c]);
    }
}
