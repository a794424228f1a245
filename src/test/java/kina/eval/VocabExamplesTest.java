package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.stream.Stream;
import kina.ir.DType;
import kina.ir.Program;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The transformer vocabulary's examples (examples/vocab/*.kina) against the PyTorch fixtures of
 * scripts/reference_vocab.py, in F64: the recorded gradient equals the oracle bit for bit, and both
 * are within 1e-12 (1e-10 for attention) of PyTorch relative to each tensor's largest magnitude.
 */
class VocabExamplesTest {

    static Stream<String> cases() {
        return Stream.of("rmsnorm", "layernorm", "gelu", "swiglu", "rope", "attention", "attention_start");
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
            double[] d = t.floats().clone();
            for (int i = 0; i < d.length; i++) d[i] = (float) d[i];
            in32.put(n, Tensor.ofFloats(t.type().withDType(DType.F32), d));
        });
        Program p = Programs.checked(fx.program(), Programs.source(fx.program(), DType.F32));
        List<Tensor> rec = Programs.recorded(p, in32);
        AdExamplesTest.assertBits(rec, Programs.oracle(p, in32), op + " F32");
        AdExamplesTest.assertClose(rec, fx.outputs(), 1e-5, op + " F32");
    }
}
