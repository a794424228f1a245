package kina.plan;

import static kina.plan.PlanTest.assertBits;
import static kina.plan.PlanTest.interpret;
import static kina.plan.PlanTest.randomInputs;
import static kina.plan.PlanTest.transformed;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.stream.Stream;
import kina.kernels.Parallel;
import kina.eval.Tensor;
import kina.ir.Program;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Plan.sharedSigmoids: the forward swiglu(gate, up) also writes σ(gate) for its VJP, whose own
 * sigmoid step is then not scheduled; the plan still equals the interpreter bit for bit (special
 * values and lane tails included), at 1 and 2 threads; the program's own sigmoid of the gate,
 * computed before the swiglu, keeps its step.
 */
class SharedSigmoidTest {

    @AfterAll static void restoreThreads() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    /** swiglu(g, u) · w under reverseMode, over [rows, c]; {@code extra} is spliced into the body. */
    static String program(int rows, int c, String extra, String result) {
        String t = "tensor<F32, [" + rows + ", " + c + "], @host>";
        return "let f = fn(g: " + t + ", u: " + t + ", w: " + t + ") -> " + t + " {\n" + extra
                + "  let y = g.swiglu(u) in\n  let z = y * w in\n  " + result + "\n} in\n"
                + "let g = " + t + " in\nlet u = " + t + " in\nlet w = " + t + " in\nhandle f(g, u, w) with reverseMode\n";
    }

    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of("7 × 13 (lane tails)", program(7, 13, "", "z"), true),
                Arguments.of("rows split across threads", program(2048, 129, "", "z"), true),
                Arguments.of("a sigmoid of the gate before the swiglu", program(3, 8, "  let s = g.sigmoid() in\n", "let r = z + s in\n  r"), false));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void theSwigluWritesTheSigmoidAndThePlanEqualsTheInterpreter(String what, String src, boolean shared) {
        Program p = transformed(what, src);
        Plan plan = Plan.compile(p), separate = Plan.compile(p, Plan.UNSHARED);
        assertThat(plan.steps()).as(what + ": the VJP's sigmoid merged").isEqualTo(separate.steps() - 1);
        if (shared) assertThat(plan.nativeKinds()).as(what).doesNotContainKey("sigmoid:F32");
        else assertThat(plan.nativeKinds()).as(what + ": the forward's own sigmoid stays").containsKey("sigmoid:F32");
        for (int threads : new int[] {1, 2}) {
            Parallel.setThreads(threads);
            for (int run = 0; run < 3; run++) {
                boolean specials = run == 2;
                Map<String, Tensor> in = specials ? SoftmaxGradTest.special(plan, 5L * threads) : randomInputs(plan, 13L * threads + run, 4);
                plan.poisonArena();
                SoftmaxGradTest.check(plan.run(in), interpret(p, in), specials, what + ", threads " + threads + " run " + run);
            }
        }
    }
}
