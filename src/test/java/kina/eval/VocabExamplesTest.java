package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import kina.check.Checker;
import kina.check.TypeRules;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Pos;
import kina.ir.Printer;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Var;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The transformer vocabulary's examples (examples/vocab/*.kina) against the PyTorch fixtures of
 * scripts/reference_vocab.py and scripts/reference_random.py (the random examples), in F64: the recorded gradient equals the oracle bit for bit, and both
 * are within 1e-12 (1e-10 for attention) of PyTorch relative to each tensor's largest magnitude.
 * The IR-internal attention products (no surface form) are built as IR from their fixture's
 * "program", the instruction as the printer shows it, and held to 1e-12.
 */
class VocabExamplesTest {

    static Stream<String> cases() {
        return Stream.of("rmsnorm", "layernorm", "gelu", "swiglu", "rope", "attention", "attention_start",
                "qkv_split", "token_shift", "concat", "random_projection", "noise", "dropout");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void recordedEqualsOracleBitForBitAndMatchesPyTorch(String op) {
        Fixture fx = Fixture.load("vocab_" + op + "_f64.json");
        assertThat(fx.program()).isEqualTo("examples/vocab/" + op + ".kina");
        Program p = Programs.checked(fx.program(), Programs.source(fx.program(), DType.F64));
        List<Tensor> rec = Programs.recorded(p, fx.inputs());
        AdExamplesTest.assertBits(rec, Programs.oracle(p, fx.inputs()), op);
        AdExamplesTest.assertClose(rec, fx.outputs(), op.startsWith("attention") ? 1e-10 : 1e-12, op);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void theF32ProgramRunsAndMatchesTheF64ReferenceLoosely(String op) {
        Fixture fx = Fixture.load("vocab_" + op + "_f64.json");
        java.util.Map<String, Tensor> in32 = new java.util.LinkedHashMap<>();
        fx.inputs().forEach((n, t) -> {
            if (!t.isFloating()) {                  // a random key
                in32.put(n, t);
                return;
            }
            double[] d = t.floats().clone();
            for (int i = 0; i < d.length; i++) d[i] = (float) d[i];
            in32.put(n, Tensor.ofFloats(t.type().withDType(DType.F32), d));
        });
        Program p = Programs.checked(fx.program(), Programs.source(fx.program(), DType.F32));
        List<Tensor> rec = Programs.recorded(p, in32);
        AdExamplesTest.assertBits(rec, Programs.oracle(p, in32), op + " F32");
        AdExamplesTest.assertClose(rec, fx.outputs(), 1e-5, op + " F32");
    }

    // ---- attention's adjoint products: IR-internal, built here, printed as the fixture names them

    static final Instr.AttnOpts WINDOW = new Instr.AttnOpts(4, 2, Double.NaN, 0, 2, 0, 2);
    static final Instr.AttnOpts CHUNK = new Instr.AttnOpts(2, 1, Double.NaN, 0, 0, 2, 1);

    static Stream<String> products() {
        return Stream.of("attention_qk", "attention_qk_chunk", "attention_pk", "attention_pk_chunk",
                "attention_pq", "attention_pq_chunk");
    }

    /** The instruction of fixture {@code name} on operands a, b: its form, and the window or chunk mask of reference_vocab.py. */
    static Instr.AttentionProduct product(String name) {
        var form = Instr.AttentionProduct.Form.valueOf(name.substring("attention_".length(), "attention_".length() + 2).toUpperCase());
        return new Instr.AttentionProduct(new Var("a"), new Var("b"), name.endsWith("_chunk") ? CHUNK : WINDOW, form);
    }

    /** {@code let f = fn(a, b) { let y = ins in y } in handle f(a, b) with reverseMode}: (y, g_a, g_b). */
    static Program productProgram(Instr.AttentionProduct ins, TensorType ta, TensorType tb) {
        Var a = ins.a(), b = ins.b(), y = new Var("y"), f = new Var("f"), r = new Var("r");
        TensorType ty = TypeRules.infer(ins, Map.of(a, ta, b, tb)::get);
        Rhs.Fn fn = new Rhs.Fn(List.of(new Rhs.Param(a, ta, Pos.NONE), new Rhs.Param(b, tb, Pos.NONE)), ty,
                new Block(List.of(Let.of(y, ins, Pos.NONE)), y, Pos.NONE));
        List<Let> top = new ArrayList<>(List.of(Let.of(f, fn, Pos.NONE), Let.of(a, new Instr.Input(ta), Pos.NONE),
                Let.of(b, new Instr.Input(tb), Pos.NONE), Let.of(r, new Rhs.Handle(f, List.of(a, b)), Pos.NONE)));
        return Checker.check(new Program(ins.op(), new Block(top, r, Pos.NONE)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("products")
    void attentionProductsMatchPyTorch(String name) {
        Fixture fx = Fixture.load("vocab_" + name + "_f64.json");
        Instr.AttentionProduct ins = product(name);
        assertThat(Printer.rhs(ins)).isEqualTo(fx.program());
        Program p = productProgram(ins, fx.inputs().get("a").type(), fx.inputs().get("b").type());
        List<Tensor> rec = Programs.recorded(p, fx.inputs());
        AdExamplesTest.assertBits(rec, Programs.oracle(p, fx.inputs()), name);
        AdExamplesTest.assertClose(rec, fx.outputs(), 1e-12, name);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("products")
    void attentionProductsInF32MatchTheF64ReferenceLoosely(String name) {
        Fixture fx = Fixture.load("vocab_" + name + "_f64.json");
        Map<String, Tensor> in32 = fx.inputsAs(DType.F32);
        Program p = productProgram(product(name), in32.get("a").type(), in32.get("b").type());
        List<Tensor> rec = Programs.recorded(p, in32);
        AdExamplesTest.assertBits(rec, Programs.oracle(p, in32), name + " F32");
        AdExamplesTest.assertClose(rec, fx.outputs(), 1e-5, name + " F32");
    }
}
