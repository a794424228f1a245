package kina.eval;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import kina.check.TypeError;
import kina.ir.DType;
import kina.ir.Printer;
import kina.ir.Program;
import kina.ir.TensorType;
import org.junit.jupiter.api.Test;

/**
 * slice, concat and pad beyond the gradient checks: their values on written-out cases (floating
 * and I64), slice and pad undoing each other, negative axes, the printed forms, and the type
 * rules' one-line refusals naming the let, the axis and the sizes.
 */
class SlicesTest {

    static final String PROGRAM = """
            let x = tensor<F32, [2, 3], @host> payload { 1, 2, 3, 4, 5, 6 } in
            let i = tensor<I64, [2, 2], @host> payload { 7, 8, 9, 10 } in
            let s = x.slice(axis=-1, start=1, size=2) in
            let e = x.slice(axis=0, start=2, size=0) in
            let p = x.pad(axis=0, before=1, after=2) in
            let q = x.pad(axis=1, after=1) in
            let c = x.concat(s, axis=1) in
            let ci = i.concat(i, axis=0) in
            let si = i.slice(axis=1, start=1, size=1) in
            let back = p.slice(axis=0, start=1, size=2) in
            (s, e, p, q, c, ci, si, back)
            """;

    @Test void valuesOnWrittenOutCases() {
        Program p = Programs.checked("slices.kina", PROGRAM);
        List<Tensor> out = Programs.flatten(new Interpreter(Map.of()).run(p));
        assertThat(out.get(0).floats()).containsExactly(2, 3, 5, 6);
        assertThat(out.get(0).type()).isEqualTo(TensorType.host(DType.F32, 2, 2));
        assertThat(out.get(1).type()).isEqualTo(TensorType.host(DType.F32, 0, 3));
        assertThat(out.get(2).floats()).containsExactly(0, 0, 0, 1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0);
        assertThat(out.get(3).floats()).containsExactly(1, 2, 3, 0, 4, 5, 6, 0);
        assertThat(out.get(4).floats()).containsExactly(1, 2, 3, 2, 3, 4, 5, 6, 5, 6);
        assertThat(out.get(5).ints()).containsExactly(7, 8, 9, 10, 7, 8, 9, 10);
        assertThat(out.get(6).ints()).containsExactly(8, 10);
        assertThat(out.get(7).floats()).containsExactly(1, 2, 3, 4, 5, 6);       // slice undoes pad
        for (double z : out.get(2).floats()) if (z == 0) assertThat(Double.doubleToRawLongBits(z)).as("pad is +0.0").isZero();
    }

    @Test void negativeAxesAreStoredAndPrintedNonNegative() {
        String printed = Printer.print(Programs.checked("slices.kina", PROGRAM));
        assertThat(printed).contains("x.slice(axis=1, start=1, size=2)", "x.pad(axis=0, before=1, after=2)",
                "x.pad(axis=1, after=1)", "x.concat(s, axis=1)");
    }

    @Test void typeRulesNameTheLetTheAxisAndTheSizes() {
        assertThatThrownBy(() -> check("x.slice(axis=1, start=2, size=2)")).isInstanceOf(TypeError.class)
                .hasMessageContaining("let y: slice: start 2 + size 2 exceeds axis 1 of size 3 in tensor<F32, [2, 3], @host>");
        assertThatThrownBy(() -> check("x.slice(axis=1, start=-1, size=2)"))
                .hasMessageContaining("let y: slice: start -1 + size 2 exceeds axis 1 of size 3 in tensor<F32, [2, 3], @host> (start and size must be >= 0)");
        assertThatThrownBy(() -> check("x.slice(axis=2, start=0, size=1)"))
                .hasMessageContaining("let y: slice: axis 2 out of range for tensor<F32, [2, 3], @host>");
        assertThatThrownBy(() -> check("x.pad(axis=0, before=-1)"))
                .hasMessageContaining("let y: pad: before -1 and after 0 must be >= 0 (axis 0 of tensor<F32, [2, 3], @host>)");
        assertThatThrownBy(() -> check("x.concat(w, axis=1)"))
                .hasMessageContaining("let y: concat: operands must agree in dtype, placement and every dim but axis 1: "
                        + "tensor<F32, [2, 3], @host>, tensor<F32, [3, 2], @host>");
        assertThatThrownBy(() -> check("x.concat(i, axis=0)"))
                .hasMessageContaining("let y: concat: operands must agree in dtype");
        check("x.concat(x, axis=0).slice(axis=0, start=2, size=2)");
    }

    private static void check(String expr) {
        Programs.checked("t.kina", "let f = fn(x: tensor<F32, [2, 3], @host>, w: tensor<F32, [3, 2], @host>, "
                + "i: tensor<I64, [2, 3], @host>) -> tensor<F32, [2, 3], @host> {\n  let y = " + expr
                + " in\n  x\n} in\nlet z = tensor<F32, [1], @host> in\nz\n");
    }
}
