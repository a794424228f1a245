package kina.mlir;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import kina.check.Checker;
import kina.eval.Interpreter;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Program;
import kina.ir.TensorType;
import kina.syntax.Parser;
import org.junit.jupiter.api.Test;

/**
 * The random family natively: random_uniform and dropout (integer Philox, one exact conversion,
 * one rounded product) equal the interpreter bit for bit, F32 and F64, on 1 and 2 threads and over
 * enough elements that the generic runs in parallel; random_normal (MLIR's log, sqrt and cos) within
 * rounding. slice, concat and pad, which only move elements, equal it bit for bit too.
 */
class NativeRandomTest {

    static final String PROGRAM = """
            let x = tensor<F32, [160, 256], @host> in
            let key = tensor<I64, [2], @host> in
            let k1 = tensor<I64, [1], @host> in
            let u = key.random_uniform(tensor<F32, [160, 256], @host>) in
            let u1 = k1.random_uniform(tensor<F32, [3, 5], @host>) in
            let d = x.dropout(key, p=0.15) in
            let e = key.random_normal(tensor<F32, [160, 256], @host>) in
            let s = x.slice(axis=1, start=3, size=250) in
            let p = s.pad(axis=0, before=2, after=1) in
            let c = u1.concat(u1, axis=-1) in
            (u, u1, d, p, c, e)
            """;

    @Test void uniformDropoutAndSlicesEqualTheInterpreterBitForBitOnOneAndTwoThreads() {
        MlirTools.require();
        for (DType dt : new DType[] {DType.F32, DType.F64}) {
            Program p = Checker.check(Parser.parse("random.kina", PROGRAM.replace("F32", dt.spelling())));
            double[] xs = new double[160 * 256];
            for (int i = 0; i < xs.length; i++) xs[i] = (float) Math.sin(i);
            Map<String, Tensor> in = Map.of("x", Tensor.ofFloats(TensorType.host(dt, 160, 256), xs),
                    "key", Tensor.ofInts(TensorType.host(DType.I64, 2), new long[] {-7, 1L << 40}),
                    "k1", Tensor.ofInts(TensorType.host(DType.I64, 1), new long[] {0}));
            List<Tensor> want = NativeExamplesTest.flatten(new Interpreter(in).run(p));
            Native n = Native.compile(p);
            for (int threads : new int[] {1, 2}) {
                n.threads(threads);
                List<Tensor> got = n.run(in);
                String what = dt + " threads " + threads;
                for (int k = 0; k < 5; k++) {
                    double[] a = got.get(k).floats(), b = want.get(k).floats();
                    assertThat(a.length).isEqualTo(b.length);
                    for (int i = 0; i < a.length; i++)
                        assertThat(Double.doubleToRawLongBits(a[i])).as("%s output %d element %d: %s vs %s", what, k, i, a[i], b[i])
                                .isEqualTo(Double.doubleToRawLongBits(b[i]));
                }
                MlirTools.assertClose(got.subList(5, 6), want.subList(5, 6), dt == DType.F32 ? 1e-6 : 1e-14, what + " normal");
            }
        }
    }
}
