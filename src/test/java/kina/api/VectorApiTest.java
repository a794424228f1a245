package kina.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import kina.ChildJvm;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.KinaException;
import kina.kernels.VectorApi;
import org.junit.jupiter.api.Test;

/**
 * A JVM started without {@code --add-modules jdk.incubator.vector}: running a program through the
 * API or the command says so in one line with the fix, not a {@code NoClassDefFoundError} and its
 * stack trace.
 */
class VectorApiTest {
    static final String SOURCE = """
            let f = fn(x: tensor<F32, [2, 2], @host>) -> tensor<F32, [2, 2], @host> {
              let y = x @ x in
              let z = y.exp() in
              z
            } in
            let x = tensor<F32, [2, 2], @host> in
            f(x)
            """;

    /** The child: each way of running a program, one line each (the exception's class and its one line). */
    public static void main(String[] args) {
        Kina grad = Kina.parse("f.kina", SOURCE).check().grad("f");
        Map<String, Tensor> in = Map.of("x", Tensor.of(DType.F32, new long[] {2, 2}, 1, 2, 3, 4));
        List<Supplier<List<Tensor>>> ways = List.of(() -> grad.run(in), () -> grad.runOracle(in), () -> grad.compile().run(in));
        for (Supplier<List<Tensor>> way : ways) {
            try {
                System.out.println("ran: " + way.get());
            } catch (KinaException e) {
                System.out.println(e.getClass().getSimpleName() + ": " + e.oneLine());
            }
        }
    }

    private static List<String> withoutTheModule(String main, String... args) {
        List<String> cmd = new ArrayList<>(List.of(ChildJvm.java(), "-cp", String.join(java.io.File.pathSeparator, ChildJvm.classPath()), main));
        cmd.addAll(List.of(args));
        return cmd;
    }

    @Test void theApiSaysInOneLineThatTheModuleIsMissing() throws Exception {
        ChildJvm.Result r = ChildJvm.run(withoutTheModule(VectorApiTest.class.getName()), Path.of("."), 120);
        String line = "KinaException: error: " + VectorApi.MISSING;
        assertThat(r.out().lines().toList()).as(r.describe()).containsExactly(line, line, line);
        assertThat(r.err()).as(r.describe()).isEmpty();
        assertThat(r.exit()).as(r.describe()).isZero();
        assertThat(VectorApi.MISSING).contains("add --add-modules jdk.incubator.vector");
    }

    @Test void theCommandSaysItInOneLineAndExits1() throws Exception {
        ChildJvm.Result r = ChildJvm.run(withoutTheModule("kina.cli.Main", "run", "examples/nll_ad.kina", "--random-inputs", "1"), Path.of("."), 120);
        assertThat(r.err().lines().toList()).as(r.describe()).containsExactly("error: " + VectorApi.MISSING);
        assertThat(r.exit()).as(r.describe()).isEqualTo(1);
    }

    @Test void thisJvmHasIt() {
        assertThat(VectorApi.present()).isTrue();
    }
}
