package kina.model;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The trainer's two engines: 5 steps by the compiled plan and by the interpreter give the same loss bits. */
class TrainerEngineTest {

    static Trainer.Options options(Engine engine) {
        return new Trainer.Options(Config.byName("tiny"), 2, 5, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0), 3e-3, 2,
                11, 2, null, 5, 1, 5, null, Progress.Mode.OFF, engine);
    }

    @Test void planAndInterpreterGiveTheSameLossBits() {
        Trainer.Summary plan = new Trainer(options(Engine.PLAN), TrainerTest.slice()).run(TrainerTest.QUIET);
        Trainer.Summary interp = new Trainer(options(Engine.INTERPRETER), TrainerTest.slice()).run(TrainerTest.QUIET);
        assertThat(plan.trainCurve()).hasSize(5);
        for (int i = 0; i < 5; i++)
            assertThat(Double.doubleToRawLongBits(plan.trainCurve().get(i)[1])).as("loss of step %d", i + 1)
                    .isEqualTo(Double.doubleToRawLongBits(interp.trainCurve().get(i)[1]));
        assertThat(Double.doubleToRawLongBits(plan.valLoss())).isEqualTo(Double.doubleToRawLongBits(interp.valLoss()));
    }

    /** Both runners keep one contract: a carried input given to run is refused, whichever engine (the plan did, the interpreter silently overrode it). */
    @Test void bothRunnersRefuseACarriedInputGivenToRun() {
        String src = """
                let w = tensor<F32, [2], @host> in
                let x = tensor<F32, [2], @host> in
                (w + x, w * x)
                """;
        for (Engine e : java.util.List.of(Engine.PLAN, Engine.INTERPRETER)) {     // native: TrainerNativeTest
            Runner r = e.compile(Trainer.compile(kina.check.Checker.check(kina.syntax.Parser.parse("<carry>", src))));
            r.carry(java.util.Map.of("w", 1));
            kina.eval.Tensor two = kina.eval.Tensor.of(kina.ir.DType.F32, new long[] {2}, 1, 2);
            r.set("w", two);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> r.run(java.util.Map.of("x", two, "w", two)))
                    .as(e.name()).hasMessageContaining("w").hasMessageContaining("carried");
            assertThat(r.run(java.util.Map.of("x", two))).as(e.name()).hasSize(1);
        }
    }

    @Test void theDefaultEngineIsThePlan() {
        Trainer.Options o = new Trainer.Options(Config.byName("tiny"), 2, 5, new Optimizer.Sgd(0, 0), 0.1, 1, 1, 1, null, 5, 1, 5,
                null, Progress.Mode.OFF);
        assertThat(o.engine()).isEqualTo(Engine.PLAN);
    }
}
