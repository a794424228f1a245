package kina.plan;

import static kina.plan.PlanTest.assertBits;
import static kina.plan.PlanTest.interpret;
import static kina.plan.PlanTest.randomInputs;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import kina.check.Checker;
import kina.check.TypeRules;
import kina.eval.Tensor;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Fusions;
import kina.ir.Instr;
import kina.ir.Instrs;
import kina.ir.Let;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Var;
import kina.kernels.Parallel;
import kina.syntax.Parser;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every plan fusion against its expansion ({@link Fusions#expand}), the one place its meaning is
 * written: on random inputs in F32 and F64, the plan's kernel for the fusion (its native kernel
 * where it has one, at 1 and 2 threads), its reference kernel (the interpreter) and the
 * interpreter running the expansion in its place give the same bits, and the fusion's type rule
 * gives the checker's types of the expansion. The fusions are read off the sealed type, so one
 * without a case here fails; and where the rewrite table makes the fusion, it makes it from the
 * expansion itself.
 */
class FusedExpansionTest {

    @AfterAll static void restoreThreads() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    private static final String T57 = "tensor<F32, [5, 7], @host>";

    /** Sources holding the fusion, written in F32 (F64 replaces the dtype), by fusion; whether the rule of its name makes it back from its expansion. */
    record Case(String what, String source, boolean remade) {}

    static final Map<Class<? extends Instr>, List<Case>> CASES = ordered(
            Instr.MatmulT.class, List.of(
                    matmulT(false, true, "[5, 7]", "[3, 7]", true),
                    matmulT(true, false, "[7, 5]", "[7, 3]", true),
                    matmulT(true, true, "[7, 5]", "[3, 7]", true),
                    matmulT(false, false, "[5, 7]", "[7, 3]", false),
                    matmulT(true, false, "[2, 7, 5]", "[2, 7, 3]", true)),
            Instr.MatmulShared.class, List.of(
                    new Case("matmul_shared", "let a = tensor<F32, [5, 7], @host> in let b = tensor<F32, [7, 3], @host> in\n"
                            + "let c = tensor<F32, [7, 4], @host> in let (x, y) = %matmul_shared(a, b, c) in (x, y)", true),
                    new Case("matmul_shared, transposed", "let a = tensor<F32, [7, 5], @host> in let b = tensor<F32, [3, 7], @host> in\n"
                            + "let c = tensor<F32, [4, 7], @host> in let e = tensor<F32, [2, 7], @host> in\n"
                            + "let (x, y, z) = %matmul_shared(a, b, c, e, transpose_a=true, transpose_b=true) in (x, y, z)", true)),
            Instr.SoftmaxGrad.class, List.of(
                    new Case("softmax_grad", "let p = " + T57 + " in let dp = " + T57 + " in\n"
                            + "let ds = %softmax_grad(p, dp) in ds", true),
                    new Case("softmax_grad with row sums, rank 3", "let p = tensor<F32, [2, 3, 9], @host> in let dp = tensor<F32, [2, 3, 9], @host> in\n"
                            + "let (ds, d) = %softmax_grad(p, dp, row_sums=true) in (ds, d)", true)),
            Instr.AttentionWithLse.class, List.of(
                    new Case("attention_with_lse", attentionInputs()
                            + "let (o, lse) = %attention_with_lse(q, k, v, heads=2, kv_heads=1) in (o, lse)", true),
                    new Case("attention_with_lse, sinks, softcap, window", attentionInputs() + "let s = tensor<F32, [2], @host> in\n"
                            + "let (o, lse) = %attention_with_lse(q, k, v, s, heads=2, kv_heads=1, softcap=3.0, window=3) in (o, lse)", true)),
            Instr.AttentionBackward.class, List.of(
                    backward("dq=true", false),
                    backward("dk=true, dv=true", true),
                    backward("dq=true, dk=true, dv=true, softcap=2.0, chunk=4", true)),
            Instr.SwigluSigmoid.class, List.of(
                    new Case("swiglu_sigmoid", "let g = " + T57 + " in let u = " + T57 + " in\n"
                            + "let (z, s) = %swiglu_sigmoid(g, u) in (z, s)", true)),
            Instr.Elementwise.class, List.of(
                    new Case("elementwise", "let a = " + T57 + " in let b = " + T57 + " in let c = tensor<F32, [1, 7], @host> in\n"
                            + "let (r, q) = %elementwise(a, b, c, fn(x: " + T57 + ", y: " + T57 + ", z: tensor<F32, [1, 7], @host>) -> ("
                            + T57 + ", " + T57 + ") {\n"
                            + "  let u = x * y in let w = z.broadcast([5, 7]) in let s = u - w in let r = s.maximum(x) in\n"
                            + "  let m = -r in let q = (u * u).sqrt() / (w + y) in (m, q)\n"
                            + "}) in (r, q)", false)));

    @SuppressWarnings("unchecked")
    private static Map<Class<? extends Instr>, List<Case>> ordered(Object... kv) {
        Map<Class<? extends Instr>, List<Case>> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((Class<? extends Instr>) kv[i], (List<Case>) kv[i + 1]);
        return m;
    }

    private static Case matmulT(boolean ta, boolean tb, String as, String bs, boolean remade) {
        return new Case("matmul_t " + ta + " " + tb + " " + as + " " + bs,
                "let a = tensor<F32, " + as + ", @host> in let b = tensor<F32, " + bs + ", @host> in\n"
                        + "let y = %matmul_t(a, b, transpose_a=" + ta + ", transpose_b=" + tb + ") in y", remade);
    }

    /** q, g [6, 8] (2 heads of 4), k, v [6, 4] (1 kv head). */
    private static String attentionInputs() {
        return "let q = tensor<F32, [6, 8], @host> in let k = tensor<F32, [6, 4], @host> in let v = tensor<F32, [6, 4], @host> in\n";
    }

    private static Case backward(String flags, boolean remade) {
        String opts = flags.contains("softcap") ? ", softcap=2.0, chunk=4" : "";
        String which = flags.replaceAll(", (softcap|chunk)=[0-9.]+", "");
        List<String> names = new ArrayList<>();
        for (String f : which.split(", ")) names.add(f.substring(0, 2));
        String binders = names.size() == 1 ? names.getFirst() : "(" + String.join(", ", names) + ")";
        return new Case("attention_backward " + flags, attentionInputs()
                + "let g = tensor<F32, [6, 8], @host> in let d = tensor<F32, [6, 2], @host> in\n"
                + "let lse = %attention_lse(q, k, heads=2, kv_heads=1" + opts + ") in\n"
                + "let " + binders + " = %attention_backward(q, k, v, g, lse, d, heads=2, kv_heads=1, " + flags + ") in "
                + (names.size() == 1 ? binders : "(" + String.join(", ", names) + ")"), remade);
    }

    @Test void everyFusionHasCases() {
        List<String> missing = new ArrayList<>();
        for (Class<? extends Instr> k : Instrs.records())
            if (Instr.Fused.class.isAssignableFrom(k) && !CASES.containsKey(k)) missing.add(k.getSimpleName());
        assertThat(missing).as("fusions with no case in FusedExpansionTest.CASES").isEmpty();
    }

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        CASES.forEach((k, cs) -> cs.forEach(c -> {
            for (DType d : List.of(DType.F32, DType.F64)) out.add(Arguments.of(c.what() + " " + d, c, d));
        }));
        return out.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void theKernelsAndTheTypeAreTheExpansions(String what, Case c, DType d) {
        Program p = Checker.check(Parser.parse(what, d == DType.F64 ? c.source().replace("F32", "F64") : c.source()));
        Let fusedLet = p.body().lets().stream().filter(l -> l.rhs() instanceof Instr.Fused).findFirst().orElseThrow();
        Instr.Fused f = (Instr.Fused) fusedLet.rhs();
        Program expanded = Checker.check(expand(p, fusedLet));

        Map<Var, TensorType> types = new HashMap<>();
        for (Let l : expanded.body().lets()) if (l.type() instanceof TensorType t) types.put(l.var(), t);
        Fusions.Expansion e = f.expand(types::get);
        assertThat(TypeRules.results(f, types::get)).as(what + ": the type rule is the expansion's type")
                .isEqualTo(e.results().stream().map(types::get).toList());
        assertThat(fusedLet.type()).isEqualTo(TypeRules.result(f, types::get));

        Plan fast = Plan.compile(p, Set.of()), remade = Plan.compile(expanded);
        for (int threads : new int[] {1, 2}) {
            Parallel.setThreads(threads);
            for (long seed = 0; seed < 2; seed++) {
                Map<String, Tensor> in = randomInputs(fast, 31 * seed + threads, 4);
                List<Tensor> reference = interpret(p, in), expansion = interpret(expanded, in);
                assertBits(reference, expansion, what + ": the reference kernel against the expansion, seed " + seed);
                assertBits(fast.run(in), expansion, what + ": the plan's kernel, threads " + threads + ", seed " + seed);
                assertBits(remade.run(in), expansion, what + ": the plan of the expansion, threads " + threads + ", seed " + seed);
            }
        }
        if (d == DType.F32 && c.remade())
            assertThat(remade.rewrites().get(f.op())).as(what + ": rule " + f.op() + " remakes it from its expansion").isEqualTo(1);
    }

    /** {@code p} with the fused let replaced by its expansion, the lets after it reading the expansion's results. */
    static Program expand(Program p, Let fused) {
        Map<Var, TensorType> types = new HashMap<>();
        Map<Var, Var> to = new HashMap<>();
        List<Let> lets = new ArrayList<>();
        for (Let l : p.body().lets()) {
            if (l == fused) {
                Fusions.Expansion e = ((Instr.Fused) l.rhs()).expand(types::get);
                lets.addAll(e.lets());
                for (int i = 0; i < l.binders().size(); i++) to.put(l.binders().get(i), e.results().get(i));
                continue;
            }
            if (l.type() instanceof TensorType t) types.put(l.var(), t);
            Rhs r = switch (l.rhs()) {
                case Instr ins -> Instrs.mapOperands(ins, v -> to.getOrDefault(v, v));
                case Rhs.Tuple(var elems) -> new Rhs.Tuple(elems.stream().map(v -> to.getOrDefault(v, v)).toList());
                case Rhs.Fn _, Rhs.Call _, Rhs.Handle _ -> throw new IllegalArgumentException("not a flat case: " + l.displayName());
            };
            lets.add(new Let(l.binders(), l.destructure(), r, l.pos(), l.owner(), null));
        }
        Var result = to.getOrDefault(p.body().result(), p.body().result());
        return new Program(p.file(), new Block(lets, result, p.body().resultPos()));
    }
}
