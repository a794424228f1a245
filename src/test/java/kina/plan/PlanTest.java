package kina.plan;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import kina.ad.TransformAd;
import kina.check.Checker;
import kina.eval.EvalError;
import kina.eval.Interpreter;
import kina.io.Npy;
import kina.kernels.Parallel;
import kina.eval.Tensor;
import kina.eval.Value;
import kina.ir.DType;
import kina.ir.KinaException;
import kina.ir.Program;
import kina.ir.TensorType;
import kina.model.Config;
import kina.model.Optimizer;
import kina.model.StoryLm;
import kina.syntax.Parser;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The compiled plan against the interpreter, raw bits, at 1 and 2 threads, over consecutive runs of one Plan. */
class PlanTest {

    @AfterAll static void restoreThreads() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    static Program transformed(String name, String src) {
        return TransformAd.transform(Checker.check(Parser.parse(name, src)));
    }

    static List<Tensor> interpret(Program p, Map<String, Tensor> in) { return flatten(new Interpreter(in).run(p)); }

    static List<Tensor> flatten(Value v) {
        List<Tensor> out = new ArrayList<>();
        switch (v) {
            case Tensor t -> out.add(t);
            case Value.Tuple tup -> tup.elems().forEach(e -> out.addAll(flatten(e)));
            case Value.Closure c -> throw new AssertionError("ended in fn " + c.name());
        }
        return out;
    }

    /**
     * One run of {@code plan} at 1 thread and one at 2, each on {@code randomInputs(plan, seed(threads), 4)},
     * equal to the interpreter's run of {@code p} bit for bit.
     */
    static void assertBitsAtOneAndTwoThreads(Plan plan, Program p, java.util.function.IntToLongFunction seed, String what) {
        for (int threads : new int[] {1, 2}) {
            Parallel.setThreads(threads);
            Map<String, Tensor> in = randomInputs(plan, seed.applyAsLong(threads), 4);
            assertBits(plan.run(in), interpret(p, in), what + "threads " + threads);
        }
    }

    static void assertBits(List<Tensor> got, List<Tensor> want, String what) {
        assertThat(got).as(what).hasSameSizeAs(want);
        for (int i = 0; i < want.size(); i++) {
            Tensor g = got.get(i), w = want.get(i);
            assertThat(g.type()).as("%s output %d type", what, i).isEqualTo(w.type());
            if (!g.bitEquals(w)) {
                int at = 0;
                while (at < w.size() && Double.doubleToRawLongBits(g.get(at)) == Double.doubleToRawLongBits(w.get(at))) at++;
                throw new AssertionError(what + ": output " + i + " " + w.type() + " differs first at element " + at
                        + ": plan " + g.get(at) + ", interpreter " + w.get(at));
            }
        }
    }

    static String source(String path, DType d) {
        try {
            String s = Files.readString(Path.of(path));
            return d == DType.F64 ? s.replace("F32", "F64") : s;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    // ---- the examples ----------------------------------------------------------------------------

    static Stream<Arguments> fixtures() {
        List<Arguments> l = new ArrayList<>();
        for (String n : List.of("ad_gather", "ad_matmul4", "ad_reshape", "nll_ad", "storylm0_ad_step", "storylm0_train_step"))
            for (DType d : List.of(DType.F32, DType.F64)) l.add(Arguments.of(n + "_" + d.spelling().toLowerCase() + ".json", d));
        for (String n : List.of("attention", "attention_start", "gelu", "layernorm", "rmsnorm", "rope", "swiglu"))
            for (DType d : List.of(DType.F32, DType.F64)) l.add(Arguments.of("vocab_" + n + "_f64.json", d));
        return l.stream();
    }

    @ParameterizedTest(name = "{0} as {1}")
    @MethodSource("fixtures")
    void examplesEqualTheInterpreterBitForBit(String fixture, DType d) {
        kina.eval.Fixture fx = kina.eval.Fixture.load(fixture);
        Program p = transformed(fx.program(), source(fx.program(), d));
        Map<String, Tensor> in = fx.inputsAs(d);
        List<Tensor> want = interpret(p, in);
        Plan plan = Plan.compile(p);
        for (int threads : new int[] {1, 2}) {
            Parallel.setThreads(threads);
            for (int run = 0; run < 3; run++) assertBits(plan.run(in), want, fixture + " threads " + threads + " run " + run);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"nll", "storylm0_forward", "storylm0_train_step", "nll_ad", "storylm0_ad_step"})
    void examplesWithNpyInputs(String name) throws IOException {
        String file = "examples/" + name + ".kina";
        Program p = transformed(file, source(file, DType.F32));
        Plan plan = Plan.compile(p);
        Path dir = Path.of("examples/inputs", name.startsWith("nll") ? "nll" : "storylm0");
        Map<String, Tensor> in = new HashMap<>();
        for (Map.Entry<String, TensorType> e : plan.inputs().entrySet()) {
            Path f = dir.resolve(e.getKey() + ".npy");
            in.put(e.getKey(), Files.exists(f) ? Npy.read(f, e.getValue()) : random(e.getKey(), e.getValue(), new SplittableRandom(3), 4));
        }
        List<Tensor> want = interpret(p, in);
        for (int run = 0; run < 2; run++) assertBits(plan.run(in), want, name + " run " + run);
    }

    // ---- the StoryLM train steps -----------------------------------------------------------------

    /** Random inputs: floats N(0, 0.1²) (v_ states |·|, lr small, bc ≥ 1), integers in [0, vocab). */
    static Tensor random(String name, TensorType t, SplittableRandom r, int vocab) {
        int n = (int) t.shape().vol();
        if (!t.dtype().floating()) {
            long[] l = new long[n];
            for (int i = 0; i < n; i++) l[i] = r.nextInt(vocab);
            return Tensor.ofInts(t, l);
        }
        double[] d = new double[n];
        for (int i = 0; i < n; i++) {
            double g = r.nextGaussian() * 0.1;
            d[i] = switch (name) {
                case "lr" -> 1e-3;
                case "bc1", "bc2" -> 1 + r.nextDouble();
                default -> name.startsWith("v_") ? Math.abs(g) * 0.01 : g;
            };
        }
        return Tensor.ofFloats(t, d);
    }

    static Map<String, Tensor> randomInputs(Plan plan, long seed, int vocab) {
        SplittableRandom r = new SplittableRandom(seed);
        Map<String, Tensor> in = new LinkedHashMap<>();
        plan.inputs().forEach((k, t) -> in.put(k, random(k, t, r, vocab)));
        return in;
    }

    static Program trainStep(String config) {
        Config c = Config.byName(config);
        return TransformAd.transform(c.toy() ? StoryLm.toyTrainStep(c) : StoryLm.trainStep(c, 2, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0)));
    }

    @ParameterizedTest
    @ValueSource(strings = {"storylm0", "tiny", "small"})
    void storyLmTrainStepsEqualTheInterpreterBitForBit(String config) {
        Program p = trainStep(config);
        Plan plan = Plan.compile(p);
        int vocab = Config.byName(config).vocab();
        for (int threads : new int[] {1, 2}) {
            Parallel.setThreads(threads);
            for (int run = 0; run < 3; run++) {
                Map<String, Tensor> in = randomInputs(plan, 100 * threads + run, vocab);
                assertBits(plan.run(in), interpret(p, in), config + " threads " + threads + " run " + run);
            }
        }
    }

    // ---- liveness and the arena ------------------------------------------------------------------

    @Test void theArenaReusesBuffers() {
        Plan plan = Plan.compile(trainStep("tiny"));
        System.out.printf("tiny train step: %d steps, arena %d buffers %,d bytes, slots %,d bytes%n",
                plan.steps(), plan.arenaBuffers(), plan.arenaBytes(), plan.slotBytes());
        assertThat(plan.arenaBytes()).isLessThan(plan.slotBytes() / 2);
    }

    @Test void theStepProfileListsEveryStepWithItsMeanTime() {
        Plan plan = Plan.compile(trainStep("tiny"));
        Parallel.setThreads(1);
        plan.profile(true);
        int runs = 3;
        for (int run = 0; run < runs; run++) plan.run(randomInputs(plan, run, Config.byName("tiny").vocab()));
        List<String> steps = plan.profileSteps(), kinds = plan.profileReport();
        assertThat(steps).hasSize(plan.steps());
        double perRun = 0, summed = 0;
        java.util.regex.Pattern ms = java.util.regex.Pattern.compile(" ([0-9.]+) ms");
        for (String st : steps) {
            java.util.regex.Matcher m = ms.matcher(st);
            assertThat(m.find()).as(st).isTrue();
            perRun += Double.parseDouble(m.group(1));
        }
        for (String k : kinds) {
            java.util.regex.Matcher m = ms.matcher(k);
            assertThat(m.find()).as(k).isTrue();
            summed += Double.parseDouble(m.group(1));
        }
        // the step lines are means per run, the kinds' lines sums over the runs (rounded to 0.1 ms each)
        assertThat(perRun).isPositive();
        assertThat(perRun * runs).isCloseTo(summed, org.assertj.core.data.Offset.offset(0.05 * kinds.size() + 0.0001 * runs * steps.size()));
    }

    @Test void reshapesAndFoldedTransposesAreNotSteps() {
        Program p = transformed("t", """
                let a = tensor<F32, [2, 3], @host> in
                let b = tensor<F32, [2, 3], @host> in
                let bt = b.transpose([1, 0]) in
                let c = a @ bt in
                c.reshape([4])
                """);
        Plan plan = Plan.compile(p);
        assertThat(plan.steps()).isEqualTo(1);
        Map<String, Tensor> in = randomInputs(plan, 1, 4);
        assertBits(plan.run(in), interpret(p, in), "a @ b^T");
    }

    @Test void outputsMayBeInputsConstantsViewsAndRepeats() {
        Program p = transformed("e", """
                let x = tensor<F32, [2, 3], @host> in
                let unused = tensor<F32, [5], @host> in
                let i = tensor<I64, [2, 3], @host> in
                let c = tensor<F32, [1, 2], @host> payload { 1.5, -0.0 } in
                let xr = x.reshape([3, 2]) in
                let j = i.clamp(lo=3, hi=40) in
                let k = j.transpose([1, 0]) in
                let y = x.exp() in
                (x, xr, c, y, y, j, k, x.transpose([1, 0]))
                """);
        Plan plan = Plan.compile(p);
        for (int run = 0; run < 3; run++) {
            Map<String, Tensor> in = randomInputs(plan, run, 50);
            assertBits(plan.run(in), interpret(p, in), "edge outputs run " + run);
        }
    }

    // ---- refusals and traps ------------------------------------------------------------------------

    @Test void aRemainingHandleIsRefusedByName() {
        Program p = Checker.check(Parser.parse("h", """
                let f = fn(x: tensor<F32, [2], @host>) -> tensor<F32, [2], @host> { x.exp() } in
                let x = tensor<F32, [2], @host> in
                let (y, g) = handle f(x) with reverseMode in
                g
                """));
        assertThatThrownBy(() -> Plan.compile(p)).isInstanceOf(KinaException.class)
                .hasMessageContaining("handle f(…) with reverseMode is not planned");
    }

    @Test void anIndexTrapHasTheInterpretersMessage() {
        Program p = transformed("g", """
                let e = tensor<F32, [4, 2], @host> in
                let i = tensor<I64, [3], @host> in
                let y = e.gather(i) in
                y
                """);
        Map<String, Tensor> in = Map.of("e", Tensor.of(DType.F32, new long[] {4, 2}, 1, 2, 3, 4, 5, 6, 7, 8),
                "i", Tensor.of(DType.I64, new long[] {3}, 0, 4, 1));
        String want = null;
        try { interpret(p, in); } catch (EvalError e) { want = e.oneLine(); }
        assertThat(want).isNotNull();
        Plan plan = Plan.compile(p);
        String expected = want;
        assertThatThrownBy(() -> plan.run(in)).isInstanceOf(EvalError.class)
                .satisfies(e -> assertThat(((EvalError) e).oneLine()).isEqualTo(expected));
        Map<String, Tensor> ok = new HashMap<>(in);
        ok.put("i", Tensor.of(DType.I64, new long[] {3}, 0, 3, 1));
        assertBits(plan.run(ok), interpret(p, ok), "gather after a trap");
    }

    @Test void aMissingInputIsNamed() {
        Program p = transformed("m", "let x = tensor<F32, [2], @host> in\nx.exp()\n");
        assertThatThrownBy(() -> Plan.compile(p).run(Map.of())).isInstanceOf(EvalError.class)
                .hasMessageContaining("let x: input: no payload supplied for tensor<F32, [2], @host>");
    }
}
