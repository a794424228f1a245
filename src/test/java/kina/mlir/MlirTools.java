package kina.mlir;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.List;
import java.util.Optional;
import kina.eval.Tensor;
import org.junit.jupiter.api.Assumptions;

/**
 * The LLVM 19 tools for the tests that need them: without them such a test is skipped with a
 * visible reason (a JUnit assumption, and a line on stderr), except under {@code CI=true}, where a
 * missing tool fails the test (CI installs them: .ci/run).
 */
public final class MlirTools {
    private MlirTools() {}

    /** The tools, or the test is skipped (failed under CI=true). */
    public static Toolchain.Tools require() {
        Optional<Toolchain.Tools> t = Toolchain.find();
        if (t.isPresent()) return t.get();
        String why = "mlir-opt-19, mlir-translate-19 or clang-19 is not installed, so the MLIR tests are skipped (install: "
                + Toolchain.INSTALL + ")";
        if ("true".equals(System.getenv("CI"))) fail("CI=true: " + why);
        System.err.println("SKIPPED: " + why);
        Assumptions.abort(why);
        throw new IllegalStateException("unreachable");
    }

    /** mlir-opt-19 accepts {@code text} (rc 0), else the test fails with its first lines of stderr. */
    public static void assertAccepted(String text, String what) {
        Toolchain.Outcome o = Toolchain.verify(require(), text);
        if (o.rc() != 0) fail(what + ": mlir-opt-19 exit " + o.rc() + ":\n" + o.stderr().lines().limit(8).reduce("", (a, b) -> a + b + "\n"));
    }

    /**
     * Each element of {@code got} within {@code rtol} of {@code want}, relative to the larger of the
     * element's magnitude and 1e-2 of the tensor's largest (so a sum that cancels to nearly zero is
     * judged against the size of what it summed: storylm0_hvp's second derivatives hold such sums, where
     * the native engine and the interpreter are equally far from the F64 value, 6e-9 apart at
     * 3e-4 in a tensor whose largest is 0.47); discrete tensors equal.
     */
    public static void assertClose(List<Tensor> got, List<Tensor> want, double rtol, String what) {
        assertCloseOrAsAccurate(got, want, null, rtol, what);
    }

    /**
     * {@link #assertClose}, except that an element past rtol passes when native is as accurate as the
     * interpreter: no farther from {@code truth} (the same program and inputs in F64; null: no such
     * pass) than twice the interpreter's own distance from it. Two F32 orders of one sum (attention's
     * online softmax in the interpreter, the materialised rows natively) differ by their rounding,
     * which cancellation in a gradient can lift past 1e-5 on small elements; a wrong lowering is far
     * from the truth.
     */
    public static void assertCloseOrAsAccurate(List<Tensor> got, List<Tensor> want, List<Tensor> truth, double rtol, String what) {
        if (got.size() != want.size() || truth != null && truth.size() != want.size())
            fail(what + ": " + got.size() + " results, expected " + want.size());
        for (int k = 0; k < want.size(); k++) {
            Tensor g = got.get(k), w = want.get(k);
            if (!g.type().equals(w.type())) fail(what + " result " + k + ": type " + g.type() + ", expected " + w.type());
            if (!w.isFloating()) {
                if (!java.util.Arrays.equals(g.ints(), w.ints())) fail(what + " result " + k + ": " + g + ", expected " + w);
                continue;
            }
            double scale = scale(w);
            for (int i = 0; i < w.size(); i++) {
                double a = g.floats()[i], b = w.floats()[i];
                if (Double.compare(a, b) == 0 || a == b) continue;
                double err = relative(a, b, scale);
                if (err <= rtol) continue;
                if (truth == null) fail(String.format("%s result %d [%d]: native %s, interpreter %s (relative %.3g > %.1g)", what, k, i, a, b, err, rtol));
                double c = truth.get(k).floats()[i];
                if (!(Math.abs(a - c) <= 2 * Math.abs(b - c)))
                    fail(String.format("%s result %d [%d]: native %s, interpreter %s, F64 %s (relative %.3g > %.1g, and native the farther from F64)",
                            what, k, i, a, b, c, err, rtol));
            }
        }
    }

    /** The largest relative error as {@link #assertClose} measures it (for reports). */
    public static double maxError(List<Tensor> got, List<Tensor> want) {
        double worst = 0;
        for (int k = 0; k < want.size(); k++) {
            Tensor g = got.get(k), w = want.get(k);
            if (!w.isFloating()) continue;
            double scale = scale(w);
            for (int i = 0; i < w.size(); i++) {
                double a = g.floats()[i], b = w.floats()[i];
                if (a != b) worst = Math.max(worst, relative(a, b, scale));
            }
        }
        return worst;
    }

    /** The largest finite magnitude of w. */
    private static double scale(Tensor w) {
        double scale = 0;
        for (double v : w.floats()) if (Double.isFinite(v)) scale = Math.max(scale, Math.abs(v));
        return scale;
    }

    /** |a − b| relative to |b|, floored at 1e-2 of the tensor's largest magnitude. */
    private static double relative(double a, double b, double scale) {
        return Math.abs(a - b) / Math.max(Math.abs(b), Math.max(1e-2 * scale, Double.MIN_NORMAL));
    }
}
