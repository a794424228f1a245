package kina.mlir;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import kina.ad.TransformAd;
import kina.check.Checker;
import kina.eval.Interpreter;
import kina.eval.Oracle;
import kina.eval.Tensor;
import kina.eval.Value;
import kina.ir.DType;
import kina.ir.Program;
import kina.syntax.Parser;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every example, forward and gradients, run natively (emitted, built into a shared object, called
 * through FFM) equals the interpreter within F32 relative 1e-5, and in F64 (the same source with
 * F64 for F32) within 1e-12.
 */
class NativeExamplesTest {

    static Stream<Path> examples() throws IOException {
        List<Path> all = new ArrayList<>();
        for (String dir : new String[] {"examples", "examples/vocab"})
            try (Stream<Path> s = Files.list(Path.of(dir))) {
                s.filter(p -> p.toString().endsWith(".kina")).sorted().forEach(all::add);
            }
        return all.stream();
    }

    @ParameterizedTest @MethodSource("examples")
    void nativeEqualsTheInterpreterInF32(Path file) throws IOException { compare(file, DType.F32, 1e-5); }

    @ParameterizedTest @MethodSource("examples")
    void nativeEqualsTheInterpreterInF64(Path file) throws IOException { compare(file, DType.F64, 1e-12); }

    static void compare(Path file, DType dt, double rtol) throws IOException {
        MlirTools.require();
        String src = Files.readString(file);
        if (dt == DType.F64) src = src.replace("F32", "F64");
        Program checked = Checker.check(Parser.parse(file.toString(), src));
        Native n = Native.compile(checked);
        Map<String, Tensor> in = randomInputs(checked, n.entry(), new SplittableRandom(file.toString().hashCode()));
        List<Tensor> want = flatten(new Interpreter(in, new Oracle()).run(TransformAd.transform(checked)));
        List<Tensor> got = n.run(in);
        if (dt == DType.F32) MlirTools.assertCloseOrAsAccurate(got, want, wide(file, src, in), rtol, file + " " + dt);
        else MlirTools.assertClose(got, want, rtol, file + " " + dt);
        assertThat(got).hasSize(want.size());
    }

    /** The gradient program's results in F64 on the same (widened, so exact) inputs: the truth F32 is measured against. */
    static List<Tensor> wide(Path file, String src, Map<String, Tensor> in) {
        Program checked = Checker.check(Parser.parse(file.toString(), src.replace("F32", "F64")));
        Map<String, Tensor> in64 = new HashMap<>();
        in.forEach((name, t) -> in64.put(name, t.isFloating()
                ? Tensor.ofFloats(new kina.ir.TensorType(DType.F64, t.type().shape(), t.type().placement()), t.floats()) : t));
        return flatten(new Interpreter(in64, new Oracle()).run(TransformAd.transform(checked)));
    }

    /** Floats in [-1, 1); indices in [0, the smallest axis they index). */
    static Map<String, Tensor> randomInputs(Program checked, Emitter.Entry entry, SplittableRandom rng) {
        Map<String, Long> bounds = new HashMap<>();
        for (IndexChecks.Check c : IndexChecks.of(TransformAd.transform(checked))) bounds.merge(c.input(), c.bound(), Math::min);
        Map<String, Tensor> in = new HashMap<>();
        for (Emitter.Arg a : entry.inputs()) {
            int size = Math.toIntExact(a.type().shape().vol());
            if (a.type().dtype().floating()) {
                double[] d = new double[size];
                for (int i = 0; i < size; i++) d[i] = rng.nextDouble() * 2 - 1;
                in.put(a.name(), Tensor.ofFloats(a.type(), d));
            } else {
                long[] l = new long[size];
                long hi = a.type().dtype() == DType.I1 ? 2 : bounds.getOrDefault(a.name(), 2L);
                for (int i = 0; i < size; i++) l[i] = rng.nextLong(hi);
                in.put(a.name(), Tensor.ofInts(a.type(), l));
            }
        }
        return in;
    }

    static List<Tensor> flatten(Value v) {
        List<Tensor> out = new ArrayList<>();
        switch (v) {
            case Tensor t -> out.add(t);
            case Value.Tuple t -> t.elems().forEach(e -> out.addAll(flatten(e)));
            case Value.Closure c -> throw new AssertionError("ends in fn " + c.name());
        }
        return out;
    }
}
