package kina.ad;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import kina.check.Checker;
import kina.ir.Block;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.syntax.Parser;
import org.junit.jupiter.api.Test;

/** Where a VJP rule does its per-row work: once per row, not once per element of a broadcast. */
class VjpShapesTest {

    /** The types of every let whose instruction is {@code kind}, through fn bodies. */
    static List<TensorType> typesOf(Block b, Class<? extends Instr> kind) {
        List<TensorType> out = new ArrayList<>();
        for (Let l : b.lets()) {
            if (kind.isInstance(l.rhs()) && l.type() instanceof TensorType t) out.add(t);
            if (l.rhs() instanceof Rhs.Fn fn) out.addAll(typesOf(fn.body(), kind));
        }
        return out;
    }

    @Test
    void rmsnormsBackwardTakesRsqrtPerRow() {
        String x = "tensor<F32, [2, 5, 8], @host>", w = "tensor<F32, [8], @host>";
        Program p = Checker.check(TransformAd.transform(Checker.check(Parser.parse("t.kina",
                "let f = fn(x: " + x + ", w: " + w + ") -> " + x + " {\n  let y = x.rmsnorm(w, eps=1e-5) in\n  y\n} in\n"
                        + "let x = " + x + " in\nlet w = " + w + " in\nhandle f(x, w) with reverseMode\n"))));
        List<TensorType> rsqrt = typesOf(p.body(), Instr.Rsqrt.class);
        assertThat(rsqrt).isNotEmpty().allSatisfy(t -> assertThat(t.shape().dim(t.rank() - 1)).as(t.toString()).isEqualTo(1));
    }
}
