package kina.ad;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Optional;
import kina.ad.ProgramBuilder.Param;
import kina.check.Checker;
import kina.check.TypeError;
import kina.ir.DType;
import kina.ir.Payload;
import kina.ir.Positions;
import kina.ir.Printer;
import kina.ir.Program;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Var;
import kina.syntax.Parser;
import org.junit.jupiter.api.Test;

class ProgramBuilderTest {
    static final TensorType XT = TensorType.host(DType.F32, 2, 3), WT = TensorType.host(DType.F32, 3, 4);

    /** The class comment's example, printed as it says, and equal to its source parsed. */
    @Test void theDocumentedExampleBuildsTheProgramItPrints() {
        ProgramBuilder b = new ProgramBuilder("<affine>");
        Var f = b.fn("f", List.of(new Param("x", XT), new Param("w", WT)),
                ps -> b.let("y", b.sum(b.exp(b.matmul(ps.get(0), ps.get(1))), 1, true)));
        Var x = b.input("x", XT), w = b.input("w", WT);
        List<Var> r = b.let(List.of("y", "g_x", "g_w"), b.handle(f, x, w));
        Program p = b.build(b.tuple(r));
        String text = """
                let f = fn(x: tensor<F32, [2, 3], @host>, w: tensor<F32, [3, 4], @host>) -> tensor<F32, [2, 1], @host> {
                  let y = (x @ w).exp().sum(axis=1, keepdims=true) in
                  y
                } in
                let x = tensor<F32, [2, 3], @host> in
                let w = tensor<F32, [3, 4], @host> in
                let (y, g_x, g_w) = handle f(x, w) with reverseMode in
                (y, g_x, g_w)
                """;
        assertThat(Printer.print(p)).isEqualTo(text);
        assertThat(Positions.strip(p)).isEqualTo(Positions.strip(Checker.check(Parser.parse("<affine>", text))));
        assertThat(p.body().lets().get(3).type()).as("typed, as the checker types it").isNotNull();
    }

    /** Temporaries are numbered as the parser numbers them and belong to the next let named. */
    @Test void temporariesBelongToTheNextNamedLet() {
        ProgramBuilder b = new ProgramBuilder("t");
        Var a = b.input("a", XT), c = b.input("c", XT);
        Var e = b.exp(a);                                  // made first, used by z only
        Var y = b.let("y", b.add(b.neg(a), c));
        Var z = b.let("z", b.mul(e, y));
        Program p = b.build(b.call(b.fn("id", List.of(new Param("q", XT)), ps -> ps.getFirst()), z));
        assertThat(p.body().lets().get(2).binders()).containsExactly(new Var("%0"));
        assertThat(p.body().lets().get(2).owner()).isEqualTo("y");
        assertThat(p.body().lets().get(3).owner()).isEqualTo("y");
        assertThat(p.body().lets().getLast().owner()).isEqualTo("result");
        assertThat(Printer.print(p)).contains("let y = -a + c in").contains("let z = a.exp() * y in").endsWith("id(z)\n");
    }

    @Test void aTypeMistakeFailsAtItsLetInOneLine() {
        ProgramBuilder b = new ProgramBuilder("<m>");
        Var x = b.input("x", XT);
        Var h = b.let("h", b.rmsnorm(x, Optional.empty(), Optional.empty(), 1e-5));
        assertThatThrownBy(() -> b.matmul(h, x)).isInstanceOf(TypeError.class)
                .hasMessage("<m>: matmul(h, x): inner dims differ: tensor<F32, [2, 3], @host> @ tensor<F32, [2, 3], @host> (K = 3 vs 2)")
                .satisfies(t -> assertThat(((TypeError) t).oneLine()).doesNotContain("\n"));
    }

    @Test void namesAndScopesAreChecked() {
        ProgramBuilder b = new ProgramBuilder("<n>");
        Var x = b.input("x", XT);
        assertThatThrownBy(() -> b.input("x", XT)).hasMessage("<n>: x is bound twice in one block");
        assertThatThrownBy(() -> b.let("in", b.exp(x))).hasMessage("<n>: 'in' is a keyword of the language and cannot name a value");
        assertThatThrownBy(() -> b.let("2x", b.exp(x))).hasMessageContaining("'2x' is not a name");
        assertThatThrownBy(() -> b.let("y", x)).hasMessage("<n>: let y = x only renames x; use x directly");
        assertThatThrownBy(() -> b.fn("f", List.of(new Param("q", XT)), ps -> b.let("r", b.add(ps.getFirst(), x))))
                .hasMessage("<n>: add: fn bodies are closed: x belongs to an enclosing block; pass it as a parameter");
        assertThatThrownBy(() -> b.exp(new Var("nowhere"))).hasMessage("<n>: exp: nowhere is not a value of this block");
    }

    @Test void tuplesAndHandlesAreTyped() {
        ProgramBuilder b = new ProgramBuilder("<h>");
        Var f = b.fn("f", List.of(new Param("x", XT)), ps -> b.let("s", b.exp(ps.getFirst())));
        Var x = b.input("x", XT);
        Var h = b.handle(f, x);
        assertThatThrownBy(() -> b.exp(h)).hasMessageContaining("exp(<handle f>): <handle f> is a tuple (tensor<F32, [2, 3], @host>, tensor<F32, [2, 3], @host>)");
        assertThatThrownBy(() -> b.let(List.of("a", "b", "c"), h)).hasMessageContaining("the pattern binds 3 names but <handle f> has 2 elements");
        assertThatThrownBy(() -> b.call(f, x, x)).hasMessage("<h>: call f: takes 1 arguments, got 2 (fn(tensor<F32, [2, 3], @host>) -> tensor<F32, [2, 3], @host>)");
        assertThatThrownBy(() -> b.handle(x, x)).hasMessageContaining("handle x: not a fn");
        List<Var> r = b.let(List.of("s", "g_x"), h);
        Program p = b.build(r.get(1));
        assertThat(Printer.print(p)).endsWith("let (s, g_x) = handle f(x) with reverseMode in\ng_x\n");
    }

    @Test void anInputNeedsANameAndLiteralsPrintInline() {
        ProgramBuilder b = new ProgramBuilder("<i>");
        Var x = b.input("x", TensorType.host(DType.F32, 1, 1));
        Var half = b.literal(TensorType.host(DType.F32, 1, 1), new Payload(0.5));
        Var y = b.let("y", b.mul(x, half));
        assertThat(Printer.print(b.build(y))).contains("let y = x * tensor<F32, [1, 1], @host> payload { 0.5 } in");
        ProgramBuilder c = new ProgramBuilder("<j>");
        Var u = c.input(TensorType.host(DType.F32, 2));
        Var v = c.let("v", c.reshape(u, new Shape(1, 2)));
        assertThatThrownBy(() -> c.build(v)).hasMessageContaining("an input of type tensor<F32, [2], @host> has no name");
        assertThatThrownBy(() -> b.exp(x)).isInstanceOf(IllegalStateException.class).hasMessageContaining("has built its program");
    }
}
