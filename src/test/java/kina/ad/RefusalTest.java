package kina.ad;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import kina.check.Checker;
import kina.ir.Program;
import kina.syntax.Parser;
import org.junit.jupiter.api.Test;

/** transform_ad refuses by name (DESIGN §5): never a silent zero. */
class RefusalTest {
    static AdError refused(String src) {
        Program p = Checker.check(Parser.parse("t.kina", src));
        return catchThrowableOfType(AdError.class, () -> TransformAd.transform(p));
    }

    static final String X = "tensor<F32, [2, 3], @host>";

    @Test void aMethodChainInTheDifferentiatedBodyNamesItsLet() {
        AdError e = refused("let f = fn(x: " + X + ") -> " + X + " {\n  let y = x.exp().log() in\n  y\n} in\n"
                + "let x = " + X + " in\nhandle f(x) with reverseMode\n");
        assertThat(e.let()).isEqualTo("y");
        assertThat(e.refusal()).isInstanceOf(Refusal.NotAnAdSpine.class);
        assertThat(e.oneLine()).startsWith("t.kina:2:").contains("let y:").contains("split it into one let per operation");
    }

    @Test void aBodyMustEndInAVar() {
        AdError e = refused("let f = fn(x: " + X + ") -> " + X + " {\n  let y = x.exp() in\n  -y\n} in\n"
                + "let x = " + X + " in\nhandle f(x) with reverseMode\n");
        assertThat(e.getMessage()).contains("must end in a Var");
    }

    @Test void anI64ResultIsNotDifferentiated() {
        AdError e = refused("let f = fn(x: " + X + ", ids: tensor<I64, [2], @host>) -> tensor<I64, [2], @host> {\n  ids\n} in\n"
                + "let x = " + X + " in\nlet ids = tensor<I64, [2], @host> in\nhandle f(x, ids) with reverseMode\n");
        assertThat(e.refusal()).isInstanceOf(Refusal.NotDifferentiated.class);
        assertThat(e.getMessage()).contains("ids").contains("I64").contains("discrete");
    }

    @Test void aCallInTheDifferentiatedBodyIsDifferentiatedThroughItsBody() {
        Program p = Checker.check(Parser.parse("t.kina", "let g = fn(x: " + X + ") -> " + X + " {\n  let y = x.exp() in\n  y\n} in\n"
                + "let f = fn(x: " + X + ") -> " + X + " {\n  let z = g(x) in\n  z\n} in\n"
                + "let x = " + X + " in\nhandle f(x) with reverseMode\n"));
        String printed = kina.ir.Printer.print(TransformAd.transform(p));
        assertThat(printed).contains("  let z = x.exp() in\n", "let g_x = g_z * z in").doesNotContain("g(x)\n  let g_z");
    }

    @Test void aCallOfAFnNotInScopeIsRefusedByName() {
        var fn = (kina.ir.Rhs.Fn) Checker.check(Parser.parse("t.kina", "let g = fn(x: " + X + ") -> " + X + " {\n  let y = x.exp() in\n  y\n} in\n"
                + "let f = fn(x: " + X + ") -> " + X + " {\n  let z = g(x) in\n  z\n} in\nlet x = " + X + " in\nx\n")).body().lets().get(1).rhs();
        AdError e = catchThrowableOfType(AdError.class, () -> TransformAd.reverseFn("f", fn));
        assertThat(e.let()).isEqualTo("z");
        assertThat(e.getMessage()).isEqualTo("reverseMode: let z: g is not a fn in scope of f");
    }

    @Test void aDeviceGatherIsRefusedWithTheSeedsText() {
        AdError e = refused("let f = fn(emb: tensor<F32, [8, 4], @device>, ids: tensor<I64, [1, 4], @device>) -> tensor<F32, [1, 4, 4], @device> {\n"
                + "  let y = emb.gather(ids) in\n  y\n} in\n"
                + "let emb = tensor<F32, [8, 4], @device> in\nlet ids = tensor<I64, [1, 4], @device> in\nhandle f(emb, ids) with reverseMode\n");
        assertThat(e.refusal()).isEqualTo(new Refusal.Unavailable("scatter_add: checked device lowering is not available"));
        assertThat(e.let()).isEqualTo("y");
    }

    @Test void aLetThatGetsNoCotangentIsSkippedNotRefused() {
        // d depends only on the discrete ids and no cotangent reaches it: its rule (clamp refuses,
        // no gradient) is never asked, and nothing is recorded for it.
        Program p = Checker.check(Parser.parse("t.kina",
                "let f = fn(x: " + X + ", ids: tensor<I64, [2], @host>) -> " + X + " {\n"
                        + "  let d = ids.clamp(lo=0, hi=1) in\n  let y = x.exp() in\n  y\n} in\n"
                        + "let x = " + X + " in\nlet ids = tensor<I64, [2], @host> in\nhandle f(x, ids) with reverseMode\n"));
        String printed = kina.ir.Printer.print(TransformAd.transform(p));
        assertThat(printed).contains("let g_x = ").doesNotContain("g_d").doesNotContain("g_ids");
        assertThat(printed.split("clamp", -1)).as("only f's clamp and its copy in f_grad").hasSize(3);
    }

    @Test void anUnreachedFloatingParameterGetsPositiveZeros() {
        Program p = Checker.check(Parser.parse("t.kina",
                "let f = fn(x: " + X + ", u: " + X + ") -> " + X + " {\n  let y = x.exp() in\n  y\n} in\n"
                        + "let x = " + X + " in\nlet u = " + X + " in\nhandle f(x, u) with reverseMode\n"));
        String printed = kina.ir.Printer.print(TransformAd.transform(p));
        assertThat(printed).contains("let g_u = zeros(" + X + ") in");
    }
}
