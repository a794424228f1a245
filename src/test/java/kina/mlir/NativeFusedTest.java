package kina.mlir;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import kina.ad.TransformAd;
import kina.check.Checker;
import kina.eval.Interpreter;
import kina.eval.Oracle;
import kina.eval.Tensor;
import kina.ir.Block;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.plan.Plan;
import kina.syntax.Parser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The plan's fusions (the IR-internal Instr.Fused instructions) are lowered, each as the
 * composition it stands for: every example as the plan rewrites it (forward and gradients) runs
 * natively as the interpreter runs the unrewritten program, within F32 relative 1e-5 (or no
 * farther from the F64 result than the interpreter, see MlirTools.assertCloseOrAsAccurate).
 */
class NativeFusedTest {

    static Stream<Path> examples() throws IOException { return NativeExamplesTest.examples(); }

    @ParameterizedTest @MethodSource("examples")
    void thePlannedExampleRunsNatively(Path file) throws IOException {
        MlirTools.require();
        Program checked = Checker.check(Parser.parse(file.toString(), Files.readString(file)));
        Program planned = Plan.compile(TransformAd.transform(checked)).program();
        Native n = Native.compile(planned);
        Map<String, Tensor> in = NativeExamplesTest.randomInputs(checked, n.entry(), new SplittableRandom(file.toString().hashCode()));
        List<Tensor> want = NativeExamplesTest.flatten(new Interpreter(in, new Oracle()).run(TransformAd.transform(checked)));
        MlirTools.assertCloseOrAsAccurate(n.run(in), want, NativeExamplesTest.wide(file, Files.readString(file), in), 1e-5, file + " as planned");
    }

    /** The examples, as planned, hold every kind of fusion, so the test above lowers each. */
    @Test void theExamplesAsPlannedHoldEveryFusion() throws IOException {
        java.util.Set<Class<?>> seen = new java.util.HashSet<>();
        for (Path file : examples().toList()) {
            Program checked = Checker.check(Parser.parse(file.toString(), Files.readString(file)));
            collect(Plan.compile(TransformAd.transform(checked)).program().body(), seen);
        }
        assertThat(seen).containsAll(Stream.of(Instr.Fused.class.getPermittedSubclasses()).toList());
    }

    private static void collect(Block b, java.util.Set<Class<?>> seen) {
        for (Let l : b.lets()) {
            if (l.rhs() instanceof Instr.Fused f) seen.add(f.getClass());
            if (l.rhs() instanceof Rhs.Fn fn) collect(fn.body(), seen);
        }
    }
}
