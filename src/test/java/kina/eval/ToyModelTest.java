package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import kina.ir.DType;
import kina.model.Config;
import kina.model.StoryLm;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The builder's StoryLM-0 step is the example program: same bits, and PyTorch's values. */
class ToyModelTest {
    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"F32", "F64"})
    void builderWritesTheSeedsToyStep(DType dt) {
        Fixture fx = Fixture.load("storylm0_train_step_" + dt.spelling().toLowerCase() + ".json");
        String built = kina.ir.Printer.print(StoryLm.toyTrainStep(Config.byName("storylm0")));
        if (dt == DType.F64) built = built.replace("F32", "F64");
        List<Tensor> fromBuilder = Programs.recorded(Programs.checked("<builder>", built), fx.inputs());
        List<Tensor> fromExample = Programs.recorded(Programs.checked(fx.program(), Programs.source(fx.program(), dt)), fx.inputs());
        AdExamplesTest.assertBits(fromBuilder, fromExample, "storylm0 builder vs example");
        AdExamplesTest.assertClose(fromBuilder, fx.outputs(), dt == DType.F64 ? 1e-10 : 1e-5, "storylm0 builder");
        assertThat(fromBuilder).hasSize(9);
    }
}
