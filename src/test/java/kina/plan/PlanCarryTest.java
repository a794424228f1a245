package kina.plan;

import static kina.plan.PlanTest.assertBits;
import static kina.plan.PlanTest.interpret;
import static kina.plan.PlanTest.randomInputs;
import static kina.plan.PlanTest.trainStep;
import static kina.plan.PlanTest.transformed;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kina.eval.EvalError;
import kina.kernels.Parallel;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.KinaException;
import kina.ir.Program;
import kina.model.Config;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Plan.carry: carried runs equal runs that feed outputs back as Tensors, bit for bit; set/get; refusals. */
class PlanCarryTest {

    @AfterAll static void restoreThreads() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    /** Input name → result index: StoryLM's weights and moments (toy: its 8 parameters), as training carries them. */
    static Map<String, Integer> stateOf(Plan plan, int carried) {
        Map<String, Integer> m = new LinkedHashMap<>();
        List<String> names = new ArrayList<>(plan.inputs().keySet());
        names.removeAll(List.of("ids", "targets", "cos", "sin", "lr", "bc1", "bc2", "token_ids"));
        for (String n : names) if (m.size() < carried) m.put(n, m.size());
        return m;
    }

    /**
     * Four steps of a StoryLM train step, each fed the previous step's updated weights and moments:
     * carried in the plan's buffers, and as Tensors through run (itself the interpreter's bits, PlanTest).
     */
    @ParameterizedTest
    @ValueSource(strings = {"storylm0", "tiny"})
    void carriedRunsEqualUncarriedRunsBitForBit(String config) {
        Program p = trainStep(config);
        Plan plain = Plan.compile(p), carried = Plan.compile(p);
        int vocab = Config.byName(config).vocab();
        boolean toy = Config.byName(config).toy();
        Map<String, Integer> carry = toy ? toyCarry() : stateOf(plain, plain.outputs().size() - 2);
        carried.carry(carry);
        assertThat(carried.carried()).containsExactlyElementsOf(carry.keySet());
        if (!toy) assertThat(carried.carriedInPlace()).as("weights and moments updated in place").isEqualTo(carry.size());
        for (int threads : new int[] {1, 2}) {
            Parallel.setThreads(threads);
            Map<String, Tensor> state = new HashMap<>();
            Map<String, Tensor> first = randomInputs(plain, 7 + threads, vocab);
            carry.keySet().forEach(n -> { state.put(n, first.get(n)); carried.set(n, first.get(n)); });
            for (int step = 0; step < 4; step++) {
                Map<String, Tensor> batch = randomInputs(plain, 100 * threads + step, vocab);
                carry.keySet().forEach(batch::remove);
                Map<String, Tensor> in = new HashMap<>(batch);
                in.putAll(state);
                List<Tensor> want = plain.run(in);
                List<Tensor> got = carried.run(batch);
                List<Tensor> rest = new ArrayList<>(), values = new ArrayList<>(), wantValues = new ArrayList<>();
                for (int k = 0; k < want.size(); k++) if (!carry.containsValue(k)) rest.add(want.get(k));
                assertBits(got, rest, config + " threads " + threads + " step " + step + " results");
                for (var e : carry.entrySet()) {
                    state.put(e.getKey(), want.get(e.getValue()));
                    values.add(carried.get(e.getKey()));
                    wantValues.add(want.get(e.getValue()));
                }
                assertBits(values, wantValues, config + " threads " + threads + " step " + step + " carried");
            }
        }
    }

    /** The toy step's result k is its parameter k (Bench.runToy). */
    private static Map<String, Integer> toyCarry() {
        Map<String, Integer> m = new LinkedHashMap<>();
        String[] names = {"emb", "mask", "scale", "wq", "wk", "wv", "wo", "lm_head"};
        for (int k = 0; k < names.length; k++) m.put(names[k], k);
        return m;
    }

    static final String EDGES = """
            let a = tensor<F32, [2, 3], @host> in
            let b = tensor<F32, [2, 3], @host> in
            let c = tensor<F32, [1, 2], @host> in
            let d = tensor<F32, [2, 3], @host> in
            let i = tensor<I64, [2], @host> in
            let k = tensor<F32, [1, 2], @host> payload { 1.5, -0.0 } in
            let y = a + b in
            let z = (y * d).exp() in
            (y, a, k, z, i.clamp(lo=0, hi=5), b.reshape([3, 2]))
            """;

    /**
     * Carried values fed from a step, another input (b' = a: the old a, whatever order the copies
     * run in), a constant; one output feeding two inputs; an uncarried output that is also carried.
     */
    @Test void carryingInputsConstantsAndSharedOutputs() {
        Program p = transformed("edges", EDGES);
        Plan plain = Plan.compile(p), carried = Plan.compile(p);
        Map<String, Integer> carry = Map.of("a", 0, "b", 1, "c", 2, "d", 0);
        carried.carry(carry);
        Map<String, Tensor> state = new HashMap<>(randomInputs(plain, 5, 4));
        state.remove("i");
        state.forEach(carried::set);
        for (int run = 0; run < 4; run++) {
            Map<String, Tensor> in = new HashMap<>(state);
            Tensor i = Tensor.of(DType.I64, new long[] {2}, run, 9 - run);
            in.put("i", i);
            List<Tensor> want = plain.run(in);
            assertBits(want, interpret(p, in), "edges run " + run + ": the plan against the interpreter");
            assertBits(carried.run(Map.of("i", i)), List.of(want.get(3), want.get(4), want.get(5)), "edges run " + run);
            carry.forEach((name, k) -> state.put(name, want.get(k)));
            for (String name : carry.keySet())
                assertBits(List.of(carried.get(name)), List.of(state.get(name)), "edges run " + run + " " + name);
        }
    }

    @Test void setThenGetGivesTheSameBits() {
        Plan plan = Plan.compile(transformed("edges", EDGES));
        plan.carry(Map.of("a", 0, "c", 2));
        Map<String, Tensor> in = randomInputs(plan, 3, 4);
        plan.set("a", in.get("a"));
        plan.set("c", Tensor.of(DType.F32, new long[] {1, 2}, -0.0, Double.NaN));
        assertBits(List.of(plan.get("a"), plan.get("c")), List.of(in.get("a"), Tensor.of(DType.F32, new long[] {1, 2}, -0.0, Double.NaN)), "round trip");
        assertThat(plan.get("a")).isNotSameAs(plan.get("a"));
        plan.carry(Map.of());
        assertThat(plan.carried()).isEmpty();
        assertThat(plan.run(in)).hasSize(6);
    }

    @Test void aRunThatTrapsLeavesTheCarriedValues() {
        Program p = transformed("g", """
                let e = tensor<F32, [4, 2], @host> in
                let i = tensor<I64, [3], @host> in
                let y = e.gather(i) in
                (e + e, y)
                """);
        Plan plan = Plan.compile(p);
        plan.carry(Map.of("e", 0));
        Tensor e = Tensor.of(DType.F32, new long[] {4, 2}, 1, 2, 3, 4, 5, 6, 7, 8);
        plan.set("e", e);
        assertThatThrownBy(() -> plan.run(Map.of("i", Tensor.of(DType.I64, new long[] {3}, 0, 4, 1)))).isInstanceOf(EvalError.class);
        assertBits(List.of(plan.get("e")), List.of(e), "after the trap");
        List<Tensor> out = plan.run(Map.of("i", Tensor.of(DType.I64, new long[] {3}, 0, 3, 1)));
        assertBits(out, List.of(Tensor.of(DType.F32, new long[] {3, 2}, 1, 2, 7, 8, 3, 4)), "gather");
        assertBits(List.of(plan.get("e")), List.of(Tensor.of(DType.F32, new long[] {4, 2}, 2, 4, 6, 8, 10, 12, 14, 16)), "e + e");
    }

    /**
     * In place only where it is safe, and the values right either way (three runs against the
     * interpreter fed the previous outputs): the update reading its input before writing (in
     * place); the input read after the update writes (in the fused pass: a copy); an index step
     * after the update, which could trap with the update done (a copy); one output feeding two
     * inputs (copies); an input read by a later matmul (a copy), and by an earlier one (in place);
     * the output written by a merged product (in place; had z been added to y, the fused add, which
     * reads w, would run after the product, and the value would be copied).
     * A lone step (not a fused pass) is never updated in place: its kernel is not checked for it.
     */
    @Test void carriedValuesAreUpdatedInPlaceOnlyWhereSafe() {
        String head = """
                let w = tensor<F32, [4, 64], @host> in
                let g = tensor<F32, [4, 64], @host> in
                let v = tensor<F32, [4, 64], @host> in
                let i = tensor<I64, [3], @host> in
                """;
        inPlace(head + "let w2 = w - g * w in (w2, v + g)", Map.of("w", 0), 1);
        inPlace(head + "let w2 = w - g in let y = w * g in (w2, y)", Map.of("w", 0), 0);
        inPlace(head + "let w2 = w - g in let y = v.gather(i) in (w2, y)", Map.of("w", 0), 0);
        inPlace(head + "let w2 = w - g in (w2, v + g)", Map.of("w", 0, "v", 0), 0);
        inPlace(head + "let w2 = w - g in let wt = w.transpose([1, 0]) in let y = g @ wt in (w2, y)", Map.of("w", 0), 0);
        inPlace(head + "let wt = w.transpose([1, 0]) in let y = g @ wt in let w2 = w - g * w in (w2, y)", Map.of("w", 0), 1);
        // the carried output written by a product merged with another of the same left operand (Plan.sharedOperands)
        String merged = head + """
                let s1 = tensor<F32, [64, 64], @host> in
                let s2 = tensor<F32, [64, 64], @host> in
                let z = w * v in
                let w2 = g @ s1 in
                let y = g @ s2 in
                (w2, y, z)
                """;
        assertThat(Plan.compile(transformed("merged", merged)).sharedOperandProducts()).isEqualTo(2);
        inPlace(merged, Map.of("w", 0), 1);
    }

    /** A trap before an in-place update: the run throws and the carried value is as it was. */
    @Test void aTrapBeforeAnInPlaceUpdateLeavesTheValue() {
        Program p = transformed("trap", """
                let w = tensor<F32, [4, 64], @host> in
                let g = tensor<F32, [4, 64], @host> in
                let v = tensor<F32, [4, 64], @host> in
                let i = tensor<I64, [3], @host> in
                let y = v.gather(i) in
                let w2 = w - g * w in
                (w2, y)
                """);
        Plan plan = Plan.compile(p);
        plan.carry(Map.of("w", 0));
        assertThat(plan.carriedInPlace()).isEqualTo(1);
        Map<String, Tensor> in = randomInputs(plan, 4, 3);
        plan.set("w", in.get("w"));
        Map<String, Tensor> rest = new HashMap<>(in);
        rest.remove("w");
        rest.put("i", Tensor.of(DType.I64, new long[] {3}, 0, 9, 1));
        assertThatThrownBy(() -> plan.run(rest)).isInstanceOf(EvalError.class);
        assertBits(List.of(plan.get("w")), List.of(in.get("w")), "after the trap");
        rest.put("i", Tensor.of(DType.I64, new long[] {3}, 0, 3, 1));
        Map<String, Tensor> all = new HashMap<>(rest);
        all.put("w", in.get("w"));
        Tensor want = interpret(p, all).getFirst();
        plan.run(rest);
        assertBits(List.of(plan.get("w")), List.of(want), "after a run");
    }

    private static void inPlace(String src, Map<String, Integer> carry, int expected) {
        Program p = transformed("inplace", src);
        Plan plan = Plan.compile(p);
        plan.carry(carry);
        assertThat(plan.carriedInPlace()).as(src).isEqualTo(expected);
        Map<String, Tensor> state = new HashMap<>(randomInputs(plan, 11, 3));
        state.put("i", Tensor.of(DType.I64, new long[] {3}, 0, 2, 1));
        carry.keySet().forEach(n -> plan.set(n, state.get(n)));
        for (int run = 0; run < 3; run++) {
            List<Tensor> want = interpret(p, state);
            Map<String, Tensor> rest = new HashMap<>(state);
            carry.keySet().forEach(rest::remove);
            List<Tensor> got = plan.run(rest), wantRest = new ArrayList<>();
            for (int k = 0; k < want.size(); k++) if (!carry.containsValue(k)) wantRest.add(want.get(k));
            assertBits(got, wantRest, src + " run " + run);
            carry.forEach((n, k) -> state.put(n, want.get(k)));
            for (String n : carry.keySet()) assertBits(List.of(plan.get(n)), List.of(state.get(n)), src + " run " + run + " " + n);
        }
    }

    @Test void refusalsAreOneLineAndNamed() {
        Plan plan = Plan.compile(transformed("edges", EDGES));
        refused(() -> plan.carry(Map.of("q", 0)), PlanError.class, "plan: carry: no input named q");
        refused(() -> plan.carry(Map.of("a", 6)), PlanError.class, "plan: carry: a from output 6, but the plan has 6 outputs");
        refused(() -> plan.carry(Map.of("a", 2)), PlanError.class,
                "plan: carry: input a is tensor<F32, [2, 3], @host>, output 2 is tensor<F32, [1, 2], @host>");
        refused(() -> plan.set("a", Tensor.of(DType.F32, new long[] {2}, 1, 2)), PlanError.class,
                "plan: carry: a is not a carried input (nothing is carried)");
        plan.carry(Map.of("a", 0));
        refused(() -> plan.get("b"), PlanError.class, "plan: carry: b is not a carried input (carried: a)");
        refused(() -> plan.get("a"), PlanError.class, "plan: carry: a has no value yet (set it first)");
        refused(() -> plan.set("a", Tensor.of(DType.F32, new long[] {2}, 1, 2)), EvalError.class,
                "let a: input: expected tensor<F32, [2, 3], @host>, got tensor<F32, [2], @host>");
        Map<String, Tensor> in = randomInputs(plan, 1, 4);
        refused(() -> plan.run(in), EvalError.class, "let a: input: a is carried by the plan; give it with Plan.set, not to run");
        in.remove("a");
        refused(() -> plan.run(in), EvalError.class,
                "let a: input: no payload supplied for tensor<F32, [2, 3], @host> (a carried input: set it first)");
    }

    private static void refused(Runnable r, Class<? extends KinaException> type, String message) {
        assertThatThrownBy(r::run).isInstanceOf(type).hasMessage(message).satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    }
}
