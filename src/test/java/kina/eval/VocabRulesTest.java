package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import kina.ad.AdError;
import kina.ad.Primals;
import kina.ad.Pullback;
import kina.ad.Recording;
import kina.ad.Refusal;
import kina.ad.TransformAd;
import kina.ad.Vjp;
import kina.check.Checker;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Positions;
import kina.ir.Printer;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Var;
import kina.syntax.Parser;
import org.junit.jupiter.api.Test;

/**
 * The transformer vocabulary beyond the numeric checks: surface spellings read back through the
 * printer, every refusal by name, the fully masked attention row, and that every instruction has
 * a gradcheck case (closure under adjoints is ClosureTest).
 */
class VocabRulesTest {

    // ---- surface -----------------------------------------------------------------------------

    static final String SURFACE = """
            let f = fn(x: tensor<F32, [2, 4, 8], @host>, w: tensor<F32, [8], @host>, r: tensor<F32, [2, 4, 8], @host>,
                       cos: tensor<F32, [6, 2], @host>, sin: tensor<F32, [6, 2], @host>,
                       k: tensor<F32, [2, 6, 4], @host>, sinks: tensor<F32, [4], @host>,
                       tab: tensor<F32, [5, 8], @host>, i: tensor<I64, [1], @host>, ids: tensor<I64, [2], @host>,
                       rows: tensor<F32, [2, 8], @host>, n: tensor<I64, [3], @host>) -> tensor<F32, [2, 4, 8], @host> {
              let a = x.sqrt().rsqrt().tanh().sigmoid().reciprocal().silu().gelu().relu().softcap(cap=30.0) in
              let b = a.maximum(x).swiglu(r) in
              let c = x.greater(r).select(x, r) in
              let n0 = x.rmsnorm(eps=1e-5) in
              let n1 = x.rmsnorm(w, eps=1e-5) in
              let n2 = x.rmsnorm(w, r, eps=1e-6) in
              let n3 = x.layernorm(eps=1e-5) in
              let n4 = x.layernorm(w, eps=1e-5) in
              let n5 = x.layernorm(w, w, eps=1e-5) in
              let n6 = x.l2norm(eps=1e-6) in
              let p0 = x.rope(cos, sin, heads=2) in
              let p1 = x.rope(cos, sin, heads=2, rotary=4, start=2) in
              let t0 = x.attention(k, k, heads=4, kv_heads=2) in
              let t1 = x.attention(k, k, sinks, heads=4, kv_heads=2, scale=0.5, softcap=50.0, window=3, start=2) in
              let t2 = x.attention(k, k, heads=4, kv_heads=2, chunk=2) in
              let am = x.argmax(axis=2) in
              let q = n.clamp(lo=-3, hi=7).requant(shift=2).relu() in
              let one = tab.row(i) in
              let set = tab.set_rows(ids, rows) in
              b
            } in
            let z = tensor<F32, [1], @host> in
            z
            """;

    @Test void everySpellingParsesChecksAndReadsBackThroughThePrinter() {
        Program p = Checker.check(Parser.parse("s.kina", SURFACE));
        String printed = Printer.print(p);
        Program q = Checker.check(Parser.parse("s.kina", printed));
        assertThat(Positions.strip(q)).isEqualTo(Positions.strip(p));
        assertThat(Printer.print(q)).isEqualTo(printed);
        assertThat(printed).contains("x.rmsnorm(w, r, eps=1.0E-6)", "x.layernorm(eps=1.0E-5)",
                "x.rope(cos, sin, heads=2, rotary=4, start=2)",
                "x.attention(k, k, sinks, heads=4, kv_heads=2, scale=0.5, softcap=50.0, window=3, start=2)",
                "tab.gather(i)", "tab.set_rows(ids, rows)", "n.clamp(lo=-3, hi=7).requant(shift=2).relu()");
    }

    @Test void typeRulesRefuseBadShapesByName() {
        assertThatThrownBy(() -> check("x: tensor<F32, [4, 8], @host>, cos: tensor<F32, [3, 2], @host>",
                "x.rope(cos, cos, heads=2, start=1)"))
                .hasMessageContaining("rope: the tables have 3 rows; start 1 + 4 rows of x needs 5");
        assertThatThrownBy(() -> check("x: tensor<F32, [4, 8], @host>, k: tensor<F32, [4, 4], @host>",
                "x.attention(k, k, heads=4, kv_heads=3)")).hasMessageContaining("attention: kv_heads 3 must divide heads 4");
        assertThatThrownBy(() -> check("x: tensor<F32, [4, 8], @host>, w: tensor<F32, [4], @host>",
                "x.rmsnorm(w, eps=1e-5)")).hasMessageContaining("rmsnorm: weight must be");
    }

    private static void check(String params, String expr) {
        Checker.check(Parser.parse("t.kina", "let f = fn(" + params + ") -> tensor<F32, [4, 8], @host> {\n  let y = "
                + expr + " in\n  y\n} in\nlet z = tensor<F32, [1], @host> in\nz\n"));
    }

    // ---- refusals ----------------------------------------------------------------------------

    /** Vjp.of in the recording reading over a scope of one operand {@code a} of type {@code t}. */
    private static Pullback<Var> vjp(Instr ins, TensorType t, TensorType out) {
        Var a = new Var("a"), y = new Var("y");
        Map<Var, TensorType> scope = new HashMap<>(Map.of(a, t, y, out));
        Recording rec = new Recording(scope, Set.of("a", "y"));
        Primals<Var> p = new Primals<>() {
            @Override public Var of(Var v) { return v; }
            @Override public TensorType type(Var v) { return rec.type(v); }
        };
        return Vjp.of(ins, p, y, rec.fill(out, 1.0), rec);
    }

    private static String refusal(Instr ins, TensorType t, TensorType out) {
        Pullback<Var> r = vjp(ins, t, out);
        assertThat(r).isInstanceOf(Pullback.Refused.class);
        Refusal why = ((Pullback.Refused<Var>) r).why();
        assertThat(why).isInstanceOf(Refusal.NoGradient.class);
        return new AdError(why, "y", kina.ir.Pos.NONE).getMessage();
    }

    @Test void argmaxIsRefusedWithNoGradient() {
        Var a = new Var("a");
        assertThat(refusal(new Instr.ArgMax(a, 1), TensorType.host(DType.F64, 2, 3), TensorType.host(DType.I64, 2)))
                .isEqualTo("reverseMode: let y: argmax: no gradient (piecewise constant: the index of the largest "
                        + "element is piecewise constant in every input)");
    }

    @Test void integerClampIsRefusedWithNoGradient() {
        TensorType i = TensorType.host(DType.I64, 3);
        assertThat(refusal(new Instr.Clamp(new Var("a"), 0, 4), i, i)).isEqualTo(
                "reverseMode: let y: clamp: no gradient (integer arithmetic: a saturation of integers is a step function of them)");
    }

    @Test void integerRequantIsRefusedWithNoGradient() {
        TensorType i = TensorType.host(DType.I64, 3);
        assertThat(refusal(new Instr.Requant(new Var("a"), 3), i, i)).isEqualTo(
                "reverseMode: let y: requant: no gradient (integer arithmetic: a floored shift of an integer is a step function of it)");
    }

    @Test void integerReluIsRefusedWithNoGradient() {
        TensorType i = TensorType.host(DType.I64, 3);
        assertThat(refusal(new Instr.Relu(new Var("a")), i, i)).isEqualTo(
                "reverseMode: let y: relu: no gradient (integer arithmetic: a ReLU of integers is a step function of them)");
    }

    @Test void comparisonIsRefusedWithNoGradient() {
        Var a = new Var("a");
        assertThat(refusal(new Instr.Greater(a, a), TensorType.host(DType.F64, 3), TensorType.host(DType.I1, 3)))
                .isEqualTo("reverseMode: let y: greater: no gradient (piecewise constant: a comparison is a step function of its operands)");
    }

    static final String ROPE_PARAM = """
            let f = fn(x: tensor<F64, [2, 4], @host>, cos: tensor<F64, [2, 2], @host>) -> tensor<F64, [2, 4], @host> {
              let sin = cos.tanh() in
              let y = x.rope(%s, sin, heads=1) in
              y
            } in
            let x = tensor<F64, [2, 4], @host> in
            let cos = tensor<F64, [2, 2], @host> in
            handle f(x, cos) with reverseMode
            """;

    @Test void aRopeTableThatIsAParameterIsNotDifferentiated() {
        Program p = Checker.check(Parser.parse("r.kina", ROPE_PARAM.formatted("cos")));
        assertThatThrownBy(() -> TransformAd.transform(p)).isInstanceOfSatisfying(AdError.class, e -> {
            assertThat(e.getMessage()).isEqualTo("reverseMode: let y: not differentiated: cos (rope)");
            assertThat(e.refusal()).isEqualTo(new Refusal.NotDifferentiated("cos", "rope"));
        });
        Map<String, Tensor> in = Map.of("x", Kernels.fill(TensorType.host(DType.F64, 2, 4), 0.5),
                "cos", Kernels.fill(TensorType.host(DType.F64, 2, 2), 0.25));
        assertThatThrownBy(() -> new Interpreter(in, new Oracle()).run(p))
                .hasMessageContaining("not differentiated: cos (rope)");
    }

    @Test void aRopeTableComputedFromAParameterIsNotDifferentiated() {
        Program p = Checker.check(Parser.parse("r.kina", ROPE_PARAM.formatted("sin")));
        assertThatThrownBy(() -> TransformAd.transform(p)).isInstanceOfSatisfying(AdError.class, e ->
                assertThat(e.getMessage()).isEqualTo("reverseMode: let y: not differentiated: sin (rope)"));
    }

    // ---- the fully masked row ----------------------------------------------------------------

    /**
     * Rows 2 over L = 3 from start 2 with window 1: row 0 attends position 2, row 1 (last position
     * 3 ≥ L) attends nothing. Its output is +0.0, its q gradient +0.0, and nothing is NaN; with a
     * sink the row's whole softmax mass is the sink, whose gradient is then 0 for that row.
     */
    @Test void aFullyMaskedRowGivesZerosAndNoNaN() {
        for (String sinks : new String[] {"", ", sinks"}) {
            String src = """
                    let f = fn(q: tensor<F64, [2, 4], @host>, k: tensor<F64, [3, 2], @host>, v: tensor<F64, [3, 2], @host>,
                               sinks: tensor<F64, [2], @host>) -> tensor<F64, [2, 4], @host> {
                      let y = q.attention(k, v%s, heads=2, kv_heads=1, window=1, start=2) in
                      y
                    } in
                    let q = tensor<F64, [2, 4], @host> in
                    let k = tensor<F64, [3, 2], @host> in
                    let v = tensor<F64, [3, 2], @host> in
                    let sinks = tensor<F64, [2], @host> in
                    handle f(q, k, v, sinks) with reverseMode
                    """.formatted(sinks);
            Program p = Checker.check(Parser.parse("m.kina", src));
            SplittableRandom rng = new SplittableRandom(5);
            Map<String, Tensor> in = new HashMap<>();
            for (var e : Map.of("q", new long[] {2, 4}, "k", new long[] {3, 2}, "v", new long[] {3, 2}, "sinks", new long[] {2}).entrySet()) {
                double[] d = new double[(int) kina.ir.Shape.of(e.getValue()).vol()];
                for (int i = 0; i < d.length; i++) d[i] = rng.nextDouble(-1, 1);
                in.put(e.getKey(), Tensor.ofFloats(TensorType.host(DType.F64, e.getValue()), d));
            }
            List<Tensor> rec = Programs.recorded(p, in);
            AdExamplesTest.assertBits(rec, Programs.oracle(p, in), "masked" + sinks);
            for (Tensor t : rec) for (double d : t.floats()) assertThat(d).isFinite();
            Tensor y = rec.get(0), gq = rec.get(1);
            for (int e = 4; e < 8; e++) {
                assertThat(Double.doubleToRawLongBits(y.floats()[e])).as("y[1, %d]", e - 4).isZero();
                assertThat(gq.floats()[e]).as("g_q[1, %d]", e - 4).isZero();
            }
            assertThat(y.floats()[0]).isNotZero();
        }
    }

    /**
     * maximum's VJP gives a tie, and a NaN in a, to a: with b equal to a (two parameters, so the two
     * cotangents do not meet in one), g_a is the whole upstream cotangent and g_b exactly +0.0.
     */
    @Test void maximumGivesTiesAndNaNToItsFirstOperand() {
        String src = """
                let f = fn(a: tensor<F64, [4], @host>, b: tensor<F64, [4], @host>, w: tensor<F64, [4], @host>) -> tensor<F64, [4], @host> {
                  let m = a.maximum(b) in
                  let y = m * w in
                  y
                } in
                let a = tensor<F64, [4], @host> in
                let b = tensor<F64, [4], @host> in
                let w = tensor<F64, [4], @host> in
                handle f(a, b, w) with reverseMode
                """;
        Program p = Checker.check(Parser.parse("max.kina", src));
        TensorType t = TensorType.host(DType.F64, 4);
        Map<String, Tensor> in = Map.of("a", Tensor.ofFloats(t, new double[] {1.5, -2, Double.NaN, 0.0}),
                "b", Tensor.ofFloats(t, new double[] {1.5, -2, 3, 0.0}), "w", Tensor.ofFloats(t, new double[] {0.25, -3, 7, 5}));
        List<Tensor> rec = Programs.recorded(p, in);
        AdExamplesTest.assertBits(rec, Programs.oracle(p, in), "maximum ties");
        Tensor ga = rec.get(1), gb = rec.get(2);
        assertThat(ga.floats()).containsExactly(0.25, -3, 7, 5);
        for (int i = 0; i < 4; i++) assertThat(Double.doubleToRawLongBits(gb.floats()[i])).as("g_b[%d] is +0.0", i).isZero();
    }

    // ---- coverage and closure ----------------------------------------------------------------

    private static final Set<Class<?>> CONSTANTS = Set.of(Instr.Input.class, Instr.Literal.class, Instr.Fill.class);

    @Test void everyInstructionIsExercisedByAGradCheckCase() {
        Set<Class<?>> seen = new HashSet<>();
        for (String op : GradCheckTest.OPS)
            for (long seed = 0; seed < 12; seed++)
                for (Let l : fnBody(GradCheckTest.Case.make(op, new SplittableRandom(seed * 7919 + 17), DType.F64).program))
                    seen.add(l.rhs().getClass());
        for (Class<?> k : kina.ir.Instrs.records())         // the plan's fusions are made after AD, never differentiated
            if (!CONSTANTS.contains(k) && !Instr.Fused.class.isAssignableFrom(k)) assertThat(seen).as(k.getSimpleName()).contains(k);
    }

    private static List<Let> fnBody(Program p) {
        for (Let l : p.body().lets()) if (l.rhs() instanceof Rhs.Fn fn) return fn.body().lets();
        throw new AssertionError("no fn");
    }

    @SuppressWarnings("unused") private static Optional<Var> none() { return Optional.empty(); }
}
