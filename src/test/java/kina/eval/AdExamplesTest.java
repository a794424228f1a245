package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.stream.Stream;
import kina.ad.TransformAd;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Program;
import kina.ir.Rhs;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

/**
 * The reverse-mode examples (Section 14 §9, Section 10 §3, the StoryLM-0 steps) against the PyTorch
 * fixtures of scripts/, and the recorded gradient against the oracle, bit for bit.
 */
class AdExamplesTest {

    static Stream<Arguments> cases() {
        return Stream.of("ad_reshape", "ad_matmul4", "ad_gather", "nll_ad", "storylm0_ad_step", "storylm0_train_step")
                .flatMap(n -> Stream.of(Arguments.of(n, DType.F64), Arguments.of(n, DType.F32)));
    }

    static boolean model(String name) { return name.startsWith("storylm0"); }

    static double tolerance(String name, DType dt) {
        if (dt == DType.F32) return 1e-5;
        return model(name) ? 1e-10 : 1e-12;
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void recordedEqualsOracleBitForBitAndMatchesPyTorch(String name, DType dt) {
        Fixture fx = Fixture.load(name + "_" + dt.spelling().toLowerCase() + ".json");
        String src = Programs.source(fx.program(), dt);
        Program p = Programs.checked(fx.program(), src);
        List<Tensor> rec = Programs.recorded(p, fx.inputs());
        List<Tensor> ora = Programs.oracle(p, fx.inputs());
        assertBits(rec, ora, name);
        assertClose(rec, fx.outputs(), tolerance(name, dt), name);
        if (!fx.handle().isEmpty()) {
            Program h = Programs.checked(fx.program(), Programs.exposeHandle(src));
            List<Tensor> hr = Programs.recorded(h, fx.inputs());
            assertBits(hr, Programs.oracle(h, fx.inputs()), name + " handle");
            assertClose(hr, fx.handle(), tolerance(name, dt), name + " handle");
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void bitsHoldAfterWarmUp(String name, DType dt) {
        Fixture fx = Fixture.load(name + "_" + dt.spelling().toLowerCase() + ".json");
        Program p = Programs.checked(fx.program(), Programs.source(fx.program(), dt));
        Program t = TransformAd.transform(p);
        List<Tensor> cold = Programs.oracle(p, fx.inputs());
        for (int i = 0; i < 300; i++) {                 // let C2 compile the kernels, then compare again
            Programs.flatten(new Interpreter(fx.inputs(), new Oracle()).run(p));
            Programs.flatten(new Interpreter(fx.inputs()).run(t));
        }
        assertBits(Programs.flatten(new Interpreter(fx.inputs()).run(t)), cold, name + " warm recorded");
        assertBits(Programs.oracle(p, fx.inputs()), cold, name + " warm oracle");
    }

    @Test void reshapeGradientIsOnesOfTheOriginalShape() {
        Fixture fx = Fixture.load("ad_reshape_f64.json");
        Program p = Programs.checked(fx.program(), Programs.source(fx.program(), DType.F64));
        List<Tensor> out = Programs.recorded(p, fx.inputs());
        assertThat(out).hasSize(2);
        Tensor gx = out.get(1);
        assertThat(gx.shape()).isEqualTo(fx.inputs().get("x").shape());
        for (double v : gx.floats()) assertThat(v).isEqualTo(1.0);
        Rhs.Fn grad = gradFn(TransformAd.transform(p));
        assertThat(grad.body().lets()).anyMatch(l -> l.rhs() instanceof Instr.Reshape r
                && r.to().equals(fx.inputs().get("x").shape()));
    }

    @Test void rank4MatmulGradientIsOnesTimesKTransposed() {
        Fixture fx = Fixture.load("ad_matmul4_f64.json");
        Program p = Programs.checked(fx.program(), Programs.source(fx.program(), DType.F64));
        List<Tensor> out = Programs.recorded(p, fx.inputs());
        Tensor q = fx.inputs().get("q"), k = fx.inputs().get("k");
        Tensor ones = Kernels.fill(out.get(0).type(), 1.0);
        Tensor want = ContractionKernels.matmul(ones, LayoutKernels.transpose(k, kina.ir.Perm.of(0, 1, 3, 2)));
        assertThat(out.get(1).bitEquals(want)).isTrue();
        assertThat(out.get(1).shape()).isEqualTo(q.shape());
    }

    @Test void gatherGradientIsAScatterAddAndTheIndexParameterHasNoCotangent() {
        Fixture fx = Fixture.load("ad_gather_f64.json");
        Program p = Programs.checked(fx.program(), Programs.source(fx.program(), DType.F64));
        Rhs.Fn grad = gradFn(TransformAd.transform(p));
        assertThat(grad.body().lets()).anyMatch(l -> l.rhs() instanceof Instr.ScatterAdd);
        assertThat(grad.body().lets()).noneMatch(l -> l.rhs() instanceof Instr.ScatterAlongAxis);
        List<Tensor> out = Programs.recorded(p, fx.inputs());
        assertThat(out).hasSize(2);                      // (y, g_emb): no entry for ids
        double[] g = out.get(1).floats();                // ids [[3, 1, 3, 7]], D = 4
        for (int v = 0; v < 8; v++)
            for (int d = 0; d < 4; d++) {
                double want = v == 3 ? 2 : (v == 1 || v == 7) ? 1 : 0;
                assertThat(g[v * 4 + d]).as("g_emb[%d, %d]", v, d).isEqualTo(want);
                if (want == 0) assertThat(Double.doubleToRawLongBits(g[v * 4 + d])).isZero();   // +0.0
            }
    }

    @Test void nllGradientIsSoftmaxMinusOneHot() {
        Fixture fx = Fixture.load("nll_ad_f64.json");
        Program p = Programs.checked(fx.program(), Programs.source(fx.program(), DType.F64));
        List<Tensor> out = Programs.recorded(p, fx.inputs());
        Tensor logits = fx.inputs().get("logits");
        Tensor sm = RowKernels.softmax(logits, 2);
        long[] t = fx.inputs().get("targets").ints();
        double[] g = out.get(1).floats();
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 8; c++) {
                double want = sm.floats()[r * 8 + c] - (t[r] == c ? 1 : 0);
                assertThat(g[r * 8 + c]).isCloseTo(want, org.assertj.core.data.Offset.offset(1e-15));
            }
        Rhs.Fn grad = gradFn(TransformAd.transform(p));
        assertThat(grad.body().lets()).anyMatch(l -> l.rhs() instanceof Instr.ScatterAlongAxis);
        assertThat(grad.body().lets()).noneMatch(l -> l.rhs() instanceof Instr.ScatterAdd);
    }

    @Test void embeddingGradientIsZeroOnAbsentIdsAndAccumulatesRepeatedOnes() {
        Fixture fx = Fixture.load("storylm0_ad_step_f64.json");
        String src = Programs.exposeHandle(Programs.source(fx.program(), DType.F64));
        List<Tensor> out = Programs.recorded(Programs.checked(fx.program(), src), fx.inputs());
        double[] g = out.get(1).floats();                // g_emb [8, 4]; ids [[3, 1, 3, 7]]
        for (int v : new int[] {0, 2, 4, 5, 6})
            for (int d = 0; d < 4; d++) assertThat(Double.doubleToRawLongBits(g[v * 4 + d])).isZero();
        for (int d = 0; d < 4; d++) assertThat(g[3 * 4 + d]).isNotZero();
    }

    /** values rank 1 with a rank-0 index: take_along_axis and its adjoint scatter_along_axis at rank 1. */
    @Test void nllOverASingleRowOfLogitsDifferentiates() {
        String src = Programs.source("src/test/resources/nll_row.kina", DType.F64);
        Program p = Programs.checked("row.kina", src);
        double[] z = {0.5, -1.25, 2.0, 0.0, 0.75, -0.5, 1.5, -2.0};
        java.util.Map<String, Tensor> in = java.util.Map.of("logits", Tensor.of(DType.F64, new long[] {8}, z),
                "target", Tensor.ofInts(kina.ir.TensorType.host(DType.I64), new long[] {2}));
        List<Tensor> rec = Programs.recorded(p, in);
        assertBits(rec, Programs.oracle(p, in), "nll row");
        Tensor sm = RowKernels.softmax(in.get("logits"), 0);
        for (int c = 0; c < 8; c++)
            assertThat(rec.get(1).floats()[c]).isCloseTo(sm.floats()[c] - (c == 2 ? 1 : 0), org.assertj.core.data.Offset.offset(1e-15));
    }

    static Rhs.Fn gradFn(Program p) {
        for (Let l : p.body().lets())
            if (l.rhs() instanceof Rhs.Fn fn && l.displayName().endsWith("_grad")) return fn;
        throw new AssertionError("no _grad fn in the transformed program");
    }

    static void assertBits(List<Tensor> a, List<Tensor> b, String what) {
        assertThat(a).as(what).hasSameSizeAs(b);
        for (int i = 0; i < a.size(); i++) {
            Tensor x = a.get(i), y = b.get(i);
            assertThat(x.type()).as(what + " output " + i).isEqualTo(y.type());
            for (int j = 0; j < x.size(); j++)
                if (x.isFloating())
                    assertThat(Double.doubleToRawLongBits(x.floats()[j]))
                            .as("%s output %d element %d: %s vs %s", what, i, j, x.floats()[j], y.floats()[j])
                            .isEqualTo(Double.doubleToRawLongBits(y.floats()[j]));
        }
    }

    /** Each output within {@code tol} of the reference, relative to the reference's largest magnitude. */
    static void assertClose(List<Tensor> got, List<Fixture.Named> want, double tol, String what) {
        assertThat(got).as(what).hasSize(want.size());
        for (int i = 0; i < got.size(); i++) {
            Tensor g = got.get(i), w = want.get(i).value();
            assertThat(g.shape()).as(what + " " + want.get(i).name()).isEqualTo(w.shape());
            double scale = 0;
            for (int j = 0; j < w.size(); j++) scale = Math.max(scale, Math.abs(w.get(j)));
            scale = Math.max(scale, 1e-300);
            for (int j = 0; j < w.size(); j++) {
                double rel = Math.abs(g.get(j) - w.get(j)) / scale;
                assertThat(rel).as("%s %s[%d]: kina %s vs torch %s", what, want.get(i).name(), j, g.get(j), w.get(j))
                        .isLessThanOrEqualTo(tol);
            }
        }
    }

}
