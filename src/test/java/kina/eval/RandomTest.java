package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Map;
import kina.ad.TransformAd;
import kina.check.TypeError;
import kina.ir.DType;
import kina.ir.Program;
import kina.ir.TensorType;
import kina.kernels.Parallel;
import kina.plan.Plan;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The counter-based generator and the random family: Philox-4x32-10 against Random123's published
 * known answers, kina's mapping of its words against scripts/reference_random.py (checked there
 * against numpy's Philox), values a function of key and position only, dropout's scaling equal to
 * PyTorch's bit for bit in F32 and F64, the plan equal to the interpreter at 1 and 2 threads, and
 * the type rules' refusals.
 */
class RandomTest {

    @AfterAll static void restoreThreads() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    static JsonNode reference() throws IOException {
        try (InputStream in = RandomTest.class.getResourceAsStream("/fixtures/random_philox.json")) {
            return new ObjectMapper().readTree(in);
        }
    }

    @Test void philoxMatchesRandom123sKnownAnswers() throws IOException {
        JsonNode kat = reference().get("kat");
        assertThat(kat.size()).isEqualTo(3);
        for (JsonNode v : kat) {
            int[] c = ints(v.get("counter")), k = ints(v.get("key")), out = new int[4];
            Philox.block(c[0], c[1], c[2], c[3], k[0], k[1], out);
            assertThat(out).as("counter %s key %s", v.get("counter"), v.get("key")).isEqualTo(ints(v.get("out")));
        }
        int[] zero = new int[4];
        Philox.block(0, 0, 0, 0, 0, 0, zero);                  // the paper's first vector, written out
        assertThat(zero).containsExactly(0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8);
    }

    @Test void theMappingMatchesTheReference() throws IOException {
        for (JsonNode e : reference().get("elements")) {
            long key = e.get("key").asLong(), stream = e.get("stream").asLong(), n = e.get("n").asLong();
            String what = "key " + key + " stream " + stream + " n " + n;
            int[] w = new int[4];
            Philox.element(key, stream, n, w);
            assertThat(w).as(what).isEqualTo(ints(e.get("words")));
            assertThat(bits(Philox.uniform32(w))).as(what).isEqualTo(bits(e.get("uniform_f32").asDouble()));
            assertThat(bits(Philox.uniform64(w[0], w[1]))).as(what).isEqualTo(bits(e.get("uniform_f64").asDouble()));
            double z = e.get("normal_f64").asDouble();               // Python's math: the same formula, within an ulp
            assertThat(Math.abs(Philox.normal(w) - z)).as(what).isLessThanOrEqualTo(2 * Math.ulp(z));
        }
    }

    private static Tensor key(long... k) { return Tensor.ofInts(TensorType.host(DType.I64, k.length), k); }

    @Test void valuesAreAFunctionOfKeyAndPositionOnly() {
        TensorType flat = TensorType.host(DType.F64, 24), grid = TensorType.host(DType.F64, 2, 3, 4);
        Tensor a = RandomKernels.randomUniform(key(7, 3), flat), b = RandomKernels.randomUniform(key(7, 3), grid);
        assertThat(b.floats()).isEqualTo(a.floats());                      // the row-major position, whatever the shape
        assertThat(RandomKernels.randomUniform(key(7), flat).floats())
                .isEqualTo(RandomKernels.randomUniform(key(7, 0), flat).floats());
        assertThat(RandomKernels.randomUniform(key(7, 4), flat).floats()).isNotEqualTo(a.floats());
        assertThat(RandomKernels.randomUniform(key(8, 3), flat).floats()).isNotEqualTo(a.floats());
        for (double u : a.floats()) assertThat(u).isGreaterThanOrEqualTo(0).isLessThan(1);
        // F32's uniform is F64's truncated to 24 bits; F32's normal is F64's rounded
        Tensor u32 = RandomKernels.randomUniform(key(7, 3), flat.withDType(DType.F32));
        Tensor n64 = RandomKernels.randomNormal(key(7, 3), flat), n32 = RandomKernels.randomNormal(key(7, 3), flat.withDType(DType.F32));
        for (int i = 0; i < 24; i++) {
            assertThat(u32.floats()[i]).isEqualTo(Math.floor(a.floats()[i] * 0x1p24) * 0x1p-24);
            assertThat(n32.floats()[i]).isEqualTo((double) (float) n64.floats()[i]);
        }
    }

    @Test void uniformAndNormalHaveTheirMoments() {
        int n = 1 << 16;
        Tensor u = RandomKernels.randomUniform(key(42), TensorType.host(DType.F64, n));
        Tensor z = RandomKernels.randomNormal(key(42), TensorType.host(DType.F64, n));
        double su = 0, sz = 0, szz = 0;
        for (int i = 0; i < n; i++) {
            su += u.floats()[i];
            sz += z.floats()[i];
            szz += z.floats()[i] * z.floats()[i];
        }
        assertThat(su / n).isCloseTo(0.5, org.assertj.core.data.Offset.offset(0.005));
        assertThat(sz / n).isCloseTo(0, org.assertj.core.data.Offset.offset(0.01));
        assertThat(szz / n).isCloseTo(1, org.assertj.core.data.Offset.offset(0.02));
    }

    /** {@code let f = fn(x, w, key) { let y = x.dropout(key, p=0.15) in let z = y * w in z } … handle f(x, w, key)}. */
    static final String SCALING = """
            let f = fn(x: tensor<T, [3, 7], @host>, w: tensor<T, [3, 7], @host>, key: tensor<I64, [2], @host>) -> tensor<T, [3, 7], @host> {
              let y = x.dropout(key, p=0.15) in
              let z = y * w in
              z
            } in
            let x = tensor<T, [3, 7], @host> in
            let w = tensor<T, [3, 7], @host> in
            let key = tensor<I64, [2], @host> in
            let (z, g_x, g_w) = handle f(x, w, key) with reverseMode in
            (x.dropout(key, p=0.15), g_x)
            """;

    @Test void dropoutScalesAsPyTorchBitForBitInF32AndF64() {
        for (DType d : new DType[] {DType.F32, DType.F64}) {
            Fixture fx = Fixture.load("dropout_scaling_" + d.spelling().toLowerCase() + ".json");
            assertThat(fx.program()).isEqualTo("x.dropout(key, p=0.15)");
            Program p = Programs.checked("scaling.kina", SCALING.replace("<T,", "<" + d.spelling() + ","));
            List<Tensor> rec = Programs.recorded(p, fx.inputs()), want = fx.outputs().stream().map(Fixture.Named::value).toList();
            AdExamplesTest.assertBits(rec, want, "dropout " + d);
            AdExamplesTest.assertBits(Programs.oracle(p, fx.inputs()), want, "dropout " + d + " oracle");
            long dropped = 0;
            for (double v : rec.getFirst().floats()) dropped += v == 0 ? 1 : 0;
            assertThat(dropped).as("some elements dropped, most kept").isBetween(1L, 10L);
        }
    }

    static final String PROGRAM = """
            let f = fn(x: tensor<F32, [6, 40], @host>, key: tensor<I64, [2], @host>) -> tensor<F32, [6, 40], @host> {
              let u = key.random_uniform(tensor<F32, [6, 40], @host>) in
              let e = key.random_normal(tensor<F32, [6, 40], @host>) in
              let d = x.dropout(key, p=0.3) in
              let a = d * u in
              let y = a + e in
              y
            } in
            let x = tensor<F32, [6, 40], @host> in
            let key = tensor<I64, [2], @host> in
            handle f(x, key) with reverseMode
            """;

    @Test void thePlanEqualsTheInterpreterAtOneAndTwoThreads() {
        for (DType d : new DType[] {DType.F32, DType.F64}) {
            Program t = TransformAd.transform(Programs.checked("random.kina", PROGRAM.replace("F32", d.spelling())));
            double[] xs = new double[240];
            for (int i = 0; i < xs.length; i++) xs[i] = Kernels.round(d, Math.sin(i));
            Map<String, Tensor> in = Map.of("x", Tensor.ofFloats(TensorType.host(d, 6, 40), xs), "key", key(-5, 1L << 40));
            List<Tensor> want = Programs.flatten(new Interpreter(in).run(t));
            Plan plan = Plan.compile(t);
            for (int threads : new int[] {1, 2}) {
                Parallel.setThreads(threads);
                AdExamplesTest.assertBits(plan.run(in), want, d + " plan, threads " + threads);
            }
        }
    }

    @Test void typeRulesRefuseBadKeysTypesAndRates() {
        assertThatThrownBy(() -> check("k: tensor<I64, [3], @host>", "k.random_uniform(tensor<F32, [2], @host>)"))
                .isInstanceOf(TypeError.class)
                .hasMessageContaining("let y: random_uniform: the key must be I64 [1] or [2] (key, stream), got tensor<I64, [3], @host>");
        assertThatThrownBy(() -> check("k: tensor<F32, [2], @host>", "k.random_normal(tensor<F32, [2], @host>)"))
                .hasMessageContaining("let y: random_normal: the key must be I64 [1] or [2]");
        assertThatThrownBy(() -> check("k: tensor<I64, [2], @host>", "k.random_uniform(tensor<I64, [2], @host>)"))
                .hasMessageContaining("let y: random_uniform: makes F32 or F64, not tensor<I64, [2], @host>");
        assertThatThrownBy(() -> check("k: tensor<I64, [2], @host>, x: tensor<F32, [2], @host>", "x.dropout(k, p=1.0)"))
                .hasMessageContaining("let y: dropout: p must be in [0, 1), got 1");
        assertThatThrownBy(() -> check("k: tensor<I64, [2], @host>, x: tensor<I64, [2], @host>", "x.dropout(k, p=0.5)"))
                .hasMessageContaining("let y: dropout: x must be F32 or F64, got tensor<I64, [2], @host>");
    }

    static void check(String params, String expr) {
        Programs.checked("t.kina", "let f = fn(" + params + ") -> tensor<F32, [2], @host> {\n  let y = " + expr
                + " in\n  y\n} in\nlet z = tensor<F32, [1], @host> in\nz\n");
    }

    private static int[] ints(JsonNode a) {
        int[] out = new int[a.size()];
        for (int i = 0; i < out.length; i++) out[i] = (int) a.get(i).asLong();
        return out;
    }

    private static long bits(double v) { return Double.doubleToRawLongBits(v); }
}
