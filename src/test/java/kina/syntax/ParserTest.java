package kina.syntax;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;

import org.junit.jupiter.api.Test;

import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Pos;
import kina.ir.Printer;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Var;

class ParserTest {

    /** Section 10 §3, verbatim. */
    static final String NLL = """
            let nll = fn(logits: tensor<F32, [1, 4, 8], @host>) -> tensor<F32, [1, 4], @host> {
              let targets = tensor<I64, [1, 4], @host> in
              let log_probs = logits.log_softmax(axis=2) in
              let picked = log_probs.take_along_axis(targets, axis=2) in
              let loss = -picked in
              loss
            } in
            let logits = tensor<F32, [1, 4, 8], @host> in
            handle nll(logits) with reverseMode
            """;

    /** Section 14 §8 / spec-notes §8.4: the step program, its parameter types filled in. */
    static final String STEP = """
            // the StoryLM-0 SGD step on the embedding table
            let step = fn(token_ids: tensor<I64, [1, 4], @host>, emb: tensor<F32, [8, 4], @host>,
                          mask: tensor<F32, [1, 2, 4, 4], @host>, scale: tensor<F32, [1, 2, 4, 4], @host>,
                          wq: tensor<F32, [1, 4, 4], @host>, wk: tensor<F32, [1, 4, 4], @host>,
                          wv: tensor<F32, [1, 4, 4], @host>, wo: tensor<F32, [1, 4, 4], @host>,
                          lm_head: tensor<F32, [1, 4, 8], @host>,
                          lr: tensor<F32, [1, 1], @host>) -> tensor<F32, [8, 4], @host> {
              let (logits, g_emb, g_mask, g_scale, g_wq, g_wk, g_wv, g_wo, g_lm) =
                handle storylm0_fwd(token_ids, emb, mask, scale, wq, wk, wv, wo, lm_head)
                with reverseMode in
              emb - lr.broadcast([8, 4]) * g_emb
            } in
            step
            """;

    static Var v(String n) { return new Var(n); }

    static TensorType f32(long... d) { return TensorType.host(DType.F32, d); }

    @Test
    void nllProgramOfSection10ParsesAsWritten() {
        Program p = Parser.parse("nll.kina", NLL);
        Block top = p.body();
        assertThat(top.lets()).hasSize(3);
        Let nll = top.lets().get(0);
        assertThat(nll.var()).isEqualTo(v("nll"));
        assertThat(nll.pos()).isEqualTo(new Pos("nll.kina", 1, 1));
        Rhs.Fn fn = (Rhs.Fn) nll.rhs();
        assertThat(fn.params()).containsExactly(new Rhs.Param(v("logits"), f32(1, 4, 8), new Pos("nll.kina", 1, 14)));
        assertThat(fn.result()).isEqualTo(f32(1, 4));
        Block body = fn.body();
        assertThat(body.lets()).extracting(Let::rhs).containsExactly(
                new Instr.Input(TensorType.host(DType.I64, 1, 4)),
                new Instr.LogSoftmax(v("logits"), 2),
                new Instr.TakeAlongAxis(v("log_probs"), v("targets"), 2),
                new Instr.Neg(v("picked")));
        assertThat(body.lets()).allMatch(l -> !l.temporary() && l.type() == null);
        assertThat(body.result()).isEqualTo(v("loss"));
        assertThat(body.resultPos()).isEqualTo(new Pos("nll.kina", 6, 3));
        assertThat(top.lets().get(1).rhs()).isEqualTo(new Instr.Input(f32(1, 4, 8)));
        // the result expression is a temporary owned by "result"
        Let handle = top.lets().get(2);
        assertThat(handle.var()).isEqualTo(v("%0"));
        assertThat(handle.owner()).isEqualTo("result");
        assertThat(handle.rhs()).isEqualTo(new Rhs.Handle(v("nll"), List.of(v("logits"))));
        assertThat(handle.pos()).isEqualTo(new Pos("nll.kina", 9, 1));
        assertThat(top.result()).isEqualTo(v("%0"));
        // and it prints back exactly as written
        assertThat(Printer.print(p)).isEqualTo(NLL);
    }

    @Test
    void stepProgramOfSection14Parses() {
        Program p = Parser.parse("step.kina", STEP);
        Rhs.Fn step = (Rhs.Fn) p.body().lets().getFirst().rhs();
        assertThat(step.params()).hasSize(10);
        assertThat(step.result()).isEqualTo(f32(8, 4));
        List<Let> lets = step.body().lets();
        Let d = lets.getFirst();
        assertThat(d.destructure()).isTrue();
        assertThat(d.binders()).extracting(Var::name)
                .containsExactly("logits", "g_emb", "g_mask", "g_scale", "g_wq", "g_wk", "g_wv", "g_wo", "g_lm");
        assertThat(d.rhs()).isEqualTo(new Rhs.Handle(v("storylm0_fwd"), List.of(
                v("token_ids"), v("emb"), v("mask"), v("scale"), v("wq"), v("wk"), v("wv"), v("wo"), v("lm_head"))));
        assertThat(d.pos()).isEqualTo(new Pos("step.kina", 8, 3));
        // emb - lr.broadcast([8, 4]) * g_emb, post-order temporaries owned by the fn's let
        assertThat(lets.subList(1, lets.size())).extracting(Let::binders, Let::rhs, Let::owner).containsExactly(
                org.assertj.core.groups.Tuple.tuple(List.of(v("%0")), new Instr.Broadcast(v("lr"), Shape.of(8, 4)), "step"),
                org.assertj.core.groups.Tuple.tuple(List.of(v("%1")), new Instr.Mul(v("%0"), v("g_emb")), "step"),
                org.assertj.core.groups.Tuple.tuple(List.of(v("%2")), new Instr.Sub(v("emb"), v("%1")), "step"));
        assertThat(lets.get(1).pos()).isEqualTo(new Pos("step.kina", 11, 9));
        assertThat(lets.get(3).pos()).isEqualTo(new Pos("step.kina", 11, 3));
        assertThat(step.body().result()).isEqualTo(v("%2"));
        assertThat(p.body().result()).isEqualTo(v("step"));
    }

    @Test
    void nestedExpressionsBecomePostOrderTemporariesOwnedByTheirLet() {
        Program p = Parser.parse("t.kina", "let y = (a + b.exp()).sum(axis=1) @ c in y");
        List<Let> lets = p.body().lets();
        assertThat(lets).extracting(Let::rhs).containsExactly(
                new Instr.Exp(v("b")),
                new Instr.Add(v("a"), v("%0")),
                new Instr.Sum(v("%1"), 1, false),
                new Instr.Matmul(v("%2"), v("c")));
        assertThat(lets.subList(0, 3)).allMatch(l -> "y".equals(l.owner()));
        assertThat(lets.get(3).owner()).isNull();
        assertThat(lets.get(0).pos()).isEqualTo(new Pos("t.kina", 1, 14));
        assertThat(lets.get(1).pos()).isEqualTo(new Pos("t.kina", 1, 9));
    }

    @Test
    void constantsTuplesAndLiterals() {
        Program p = Parser.parse("t.kina", """
                let a = ones(tensor<F32, [2], @host>) in
                let b = zeros(tensor<F64, [2], @device>) in
                let c = fill(tensor<F32, [2], @host>, -1e9) in
                let d = tensor<I64, [3], @host> payload { 1, -2, 3 } in
                let e = tensor<F32, [2], @host> payload { 1.5E-3, -0.0 } in
                let (f, g) = (a.reshape([2, 1]), b.transpose([1, 0])) in
                (f, g.broadcast([2, 2]).sum(axis=0, keepdims=true))
                """);
        List<Let> lets = p.body().lets();
        assertThat(lets.get(0).rhs()).isEqualTo(new Instr.Fill(f32(2), 1.0));
        assertThat(lets.get(1).rhs()).isEqualTo(new Instr.Fill(new TensorType(DType.F64, Shape.of(2), kina.ir.Placement.DEVICE), 0.0));
        assertThat(lets.get(2).rhs()).isEqualTo(new Instr.Fill(f32(2), -1e9));
        assertThat(lets.get(3).rhs()).isEqualTo(new Instr.Literal(TensorType.host(DType.I64, 3), new kina.ir.Payload(1, -2, 3)));
        assertThat(lets.get(4).rhs()).isEqualTo(new Instr.Literal(f32(2), new kina.ir.Payload(1.5e-3, -0.0)));
        assertThat(lets.get(7).rhs()).isEqualTo(new Rhs.Tuple(List.of(v("%0"), v("%1"))));
        assertThat(lets.get(7).destructure()).isTrue();
        assertThat(lets.get(7).owner()).isNull();
        assertThat(lets.get(5).owner()).isEqualTo("[f, g]");
        assertThat(p.body().lets().getLast().rhs()).isEqualTo(new Rhs.Tuple(List.of(v("f"), v("%3"))));
        String printed = Printer.print(p);
        assertThat(printed).contains("fill(tensor<F32, [2], @host>, -1.0E9)", "payload { 1, -2, 3 }", "payload { 0.0015, -0.0 }");
        assertThat(Printer.print(Parser.parse("t.kina", printed))).isEqualTo(printed);
    }

    // ---- errors --------------------------------------------------------------------------------

    private static SyntaxError fails(String src) {
        try {
            Parser.parse("e.kina", src);
        } catch (SyntaxError e) {
            return e;
        }
        throw new AssertionError("parsed: " + src);
    }

    @Test
    void truncatedFileFailsAtEndOfInput() {
        SyntaxError e = fails("let x = a.exp() in\nlet y = x.sum(axis=1");
        assertThat(e.pos()).isEqualTo(new Pos("e.kina", 2, 21));
        assertThat(e.getMessage()).isEqualTo("expected ',' or ')' but found end of input");
        assertThat(e.oneLine()).isEqualTo("e.kina:2:21: error: expected ',' or ')' but found end of input");
        SyntaxError e2 = fails("let x = a.exp() in\n");
        assertThat(e2.pos()).isEqualTo(new Pos("e.kina", 2, 1));
        assertThat(e2.getMessage()).isEqualTo("expected an expression but found end of input");
        SyntaxError e3 = fails("let f = fn(x: tensor<F32, [2], @host>) -> tensor<F32, [2], @host> {\n  x.exp()\n");
        assertThat(e3.getMessage()).isEqualTo("expected '}' but found end of input");
        assertThat(e3.pos()).isEqualTo(new Pos("e.kina", 3, 1));
    }

    @Test
    void missingInNamesWhatWasFound() {
        SyntaxError e = fails("let x = a.exp()\nlet y = x in y");
        assertThat(e.getMessage()).isEqualTo("expected 'in' but found 'let'");
        assertThat(e.pos()).isEqualTo(new Pos("e.kina", 2, 1));
        SyntaxError e2 = fails("let x = f(a in x");
        assertThat(e2.getMessage()).isEqualTo("expected ')' but found 'in'");
        assertThat(e2.pos()).isEqualTo(new Pos("e.kina", 1, 13));
    }

    @Test
    void unknownMethodListsTheKnownOnes() {
        SyntaxError e = fails("let y = x.exp().cosh() in y");
        assertThat(e.pos()).isEqualTo(new Pos("e.kina", 1, 17));
        assertThat(e.getMessage()).isEqualTo("unknown method 'cosh'; known methods: exp, log, reshape, transpose, "
                + "broadcast, slice, concat, pad, sum, softmax, log_softmax, take_along_axis, gather, sqrt, rsqrt, tanh, sigmoid, "
                + "reciprocal, silu, gelu, relu, softcap, argmax, clamp, requant, maximum, greater, select, swiglu, "
                + "rmsnorm, layernorm, l2norm, rope, attention, row, set_rows, random_uniform, random_normal, dropout");
    }

    @Test
    void keywordArgumentsAreChecked() {
        SyntaxError missing = fails("let y = x.sum(keepdims=true) in y");
        assertThat(missing.getMessage()).isEqualTo("missing keyword argument 'axis' of sum (write sum(…, axis=…))");
        assertThat(missing.pos()).isEqualTo(new Pos("e.kina", 1, 28));
        SyntaxError unknown = fails("let y = x.log_softmax(axes=1) in y");
        assertThat(unknown.getMessage()).isEqualTo("unknown keyword argument 'axes' of log_softmax; it takes axis=");
        assertThat(unknown.pos()).isEqualTo(new Pos("e.kina", 1, 23));
        assertThat(fails("let y = x.sum(axis=1, axis=2) in y").getMessage()).isEqualTo("keyword argument 'axis' given twice");
        assertThat(fails("let y = x.sum(axis=true) in y").getMessage()).isEqualTo("expected an integer but found 'true'");
    }

    @Test
    void badTokensAreRefusedWhereTheyAre() {
        SyntaxError e = fails("let y = x # z in y");
        assertThat(e.getMessage()).isEqualTo("unexpected character '#'");
        assertThat(e.pos()).isEqualTo(new Pos("e.kina", 1, 11));
        SyntaxError n = fails("let y = x + 1.5 in y");
        assertThat(n.getMessage()).startsWith("expected an expression but found '1.5'");
        assertThat(fails("let y = tensor<F33, [2], @host> in y").getMessage())
                .isEqualTo("unknown dtype 'F33'; expected one of F32, F64, BF16, F16, F8E4M3, F8E5M2, I64, I1");
        assertThat(fails("let y = tensor<F32, [2], @gpu> in y").getMessage())
                .isEqualTo("unknown placement '@gpu'; expected @host or @device");
    }

    @Test
    void negativeDimsAreRefused() {
        SyntaxError e = fails("let y = tensor<F32, [2, -3], @host> in y");
        assertThat(e.getMessage()).isEqualTo("negative dim -3 in a shape; dims must be >= 0");
        assertThat(e.pos()).isEqualTo(new Pos("e.kina", 1, 25));
        assertThat(fails("let y = x.reshape([-1, 2]) in y").getMessage()).isEqualTo("negative dim -1 in a shape; dims must be >= 0");
    }

    @Test
    void renamingAndNestedLetsAreRefused() {
        SyntaxError e = fails("let x = y in x");
        assertThat(e.getMessage()).isEqualTo("let x = y only renames y; use y directly");
        assertThat(e.pos()).isEqualTo(new Pos("e.kina", 1, 9));
        assertThat(fails("let x = (let z = a.exp() in z) in x").getMessage()).startsWith("a let chain can only be");
    }

    /** The single instruction of {@code let y = … in y}. */
    private static Instr only(String src) {
        Program p = Parser.parse("e.kina", src);
        return (Instr) p.body().lets().getFirst().rhs();
    }

    @Test
    void internalScattersParseInTheirMarkedForm() {
        assertThat(only("let g = %scatter_add(u, ids, tensor<F32, [8, 4], @host>) in g"))
                .isEqualTo(new Instr.ScatterAdd(v("u"), v("ids"), f32(8, 4)));
        assertThat(only("let g = %scatter_along_axis(u, ids, tensor<F32, [1, 4, 8], @host>, axis=2) in g"))
                .isEqualTo(new Instr.ScatterAlongAxis(2, v("u"), v("ids"), f32(1, 4, 8)));
        SyntaxError kwFirst = fails("let g = %scatter_along_axis(u, ids, axis=2, tensor<F32, [1, 4, 8], @host>) in g");
        assertThat(kwFirst.getMessage()).isEqualTo("expected 'tensor' but found 'axis'");
        assertThat(fails("let g = %scatter_add(u, ids) in g").getMessage()).isEqualTo("expected ',' but found ')'");
        assertThat(fails("%3").getMessage()).isEqualTo("'%3' is not an IR-internal instruction (%scatter_add, %scatter_along_axis, "
                + "%attention_lse, %attention_exp, %attention_dq, %attention_dk, %attention_dv, %attention_qk, %attention_pk, %attention_pq, "
                + "%matmul_t, %matmul_shared, %softmax_grad, %attention_with_lse, %attention_backward, %swiglu_sigmoid, %elementwise); "
                + "a temporary's name is never written: write the expression itself");
        SyntaxError asMethod = fails("let g = u.scatter_add(ids, tensor<F32, [8, 4], @host>) in g");
        assertThat(asMethod.getMessage()).isEqualTo("scatter_add is IR-internal (made by transform_ad): write it %scatter_add(…), operands inside the parentheses");
        assertThat(asMethod.pos()).isEqualTo(new Pos("e.kina", 1, 11));
    }

    @Test
    void printedInternalScattersReadBack() {
        TensorType dest = f32(8, 4);
        Block b = new Block(List.of(
                Let.of(v("g"), new Instr.ScatterAdd(v("u"), v("ids"), dest), Pos.NONE),
                Let.of(v("h"), new Instr.ScatterAlongAxis(2, v("u"), v("ids"), f32(1, 4, 8)), Pos.NONE)), v("g"), Pos.NONE);
        String text = Printer.print(b);
        assertThat(text).isEqualTo("""
                let g = %scatter_add(u, ids, tensor<F32, [8, 4], @host>) in
                let h = %scatter_along_axis(u, ids, tensor<F32, [1, 4, 8], @host>, axis=2) in
                g
                """);
        assertThat(kina.ir.Positions.strip(Parser.parse("e.kina", text).body())).isEqualTo(b);
        assertThat(Printer.rhs(new Instr.Sub(v("%0"), v("b")))).isEqualTo("%0 - b");
    }

    @Test
    void attentionProductsParseInTheirMarkedForm() {
        var opts = new Instr.AttnOpts(4, 2, Double.NaN, 0, 0, 0, 0);
        for (var form : Instr.AttentionProduct.Form.values()) {
            assertThat(only("let y = %" + form.op() + "(a, b, heads=4, kv_heads=2) in y"))
                    .isEqualTo(new Instr.AttentionProduct(v("a"), v("b"), opts, form));
            assertThat(fails("let y = %" + form.op() + " in y").getMessage()).isEqualTo("expected '(' but found 'in'");
            assertThat(fails("let y = %" + form.op() + "(a, b, heads=4) in y").getMessage())
                    .isEqualTo("missing keyword argument 'kv_heads' of " + form.op() + " (write " + form.op() + "(…, kv_heads=…))");
            // as a method: refused at the method name, with the marked spelling to use
            SyntaxError m = fails("let y = a." + form.op() + "(b, heads=4, kv_heads=2) in y");
            assertThat(m.getMessage()).isEqualTo(form.op() + " is IR-internal (made by transform_ad): write it %" + form.op()
                    + "(…), operands inside the parentheses");
            assertThat(m.pos()).isEqualTo(new Pos("e.kina", 1, 11));
        }
        var two = new Instr.AttnOpts(2, 1, Double.NaN, 0, 0, 0, 0);
        assertThat(only("let p = %attention_lse(q, k, heads=2, kv_heads=1) in p"))
                .isEqualTo(new Instr.AttentionLse(v("q"), v("k"), java.util.Optional.empty(), two));
        assertThat(only("let p = %attention_lse(q, k, s, heads=2, kv_heads=1, window=3) in p"))
                .isEqualTo(new Instr.AttentionLse(v("q"), v("k"), java.util.Optional.of(v("s")), new Instr.AttnOpts(2, 1, Double.NaN, 0, 3, 0, 0)));
        assertThat(only("let p = %attention_exp(q, k, lse, heads=2, kv_heads=1) in p"))
                .isEqualTo(new Instr.AttentionExp(v("q"), v("k"), v("lse"), two));
        for (var wrt : Instr.AttentionGrad.Wrt.values())
            assertThat(only("let p = %" + wrt.op() + "(q, k, v, g, lse, d, heads=2, kv_heads=1) in p"))
                    .isEqualTo(new Instr.AttentionGrad(v("q"), v("k"), v("v"), v("g"), v("lse"), v("d"), two, wrt));
        assertThat(fails("let p = %attention_dq(q, k, v, g, lse, heads=2, kv_heads=1) in p").getMessage()).isEqualTo("expected ',' or ')' but found '='");
    }

    @Test
    void printedAttentionProductsReadBack() {
        var window = new Instr.AttnOpts(4, 2, Double.NaN, 0, 3, 0, 2);
        var chunk = new Instr.AttnOpts(4, 2, 0.5, 30, 0, 2, 0);
        var plain = new Instr.AttnOpts(2, 1, Double.NaN, 0, 0, 0, 0);
        Block b = new Block(List.of(
                Let.of(v("s"), new Instr.AttentionProduct(v("q"), v("k"), window, Instr.AttentionProduct.Form.QK), Pos.NONE),
                Let.of(v("dq"), new Instr.AttentionProduct(v("s"), v("k"), chunk, Instr.AttentionProduct.Form.PK), Pos.NONE),
                Let.of(v("dk"), new Instr.AttentionProduct(v("s"), v("q"), plain, Instr.AttentionProduct.Form.PQ), Pos.NONE)),
                v("dk"), Pos.NONE);
        String text = Printer.print(b);
        assertThat(text).isEqualTo("""
                let s = %attention_qk(q, k, heads=4, kv_heads=2, window=3, start=2) in
                let dq = %attention_pk(s, k, heads=4, kv_heads=2, scale=0.5, softcap=30.0, chunk=2) in
                let dk = %attention_pq(s, q, heads=2, kv_heads=1) in
                dk
                """);
        assertThat(kina.ir.Positions.strip(Parser.parse("e.kina", text).body())).isEqualTo(b);
    }

    @Test
    void fillPrintsOnesZerosOrItsValue() {
        assertThat(Printer.rhs(new Instr.Fill(f32(2), 1.0))).isEqualTo("ones(tensor<F32, [2], @host>)");
        assertThat(Printer.rhs(new Instr.Fill(f32(2), 0.0))).isEqualTo("zeros(tensor<F32, [2], @host>)");
        assertThat(Printer.rhs(new Instr.Fill(f32(2), -0.0))).isEqualTo("fill(tensor<F32, [2], @host>, -0.0)");
        assertThat(Printer.rhs(new Instr.Fill(f32(2), Double.NEGATIVE_INFINITY))).isEqualTo("fill(tensor<F32, [2], @host>, -inf)");
        Program p = Parser.parse("t.kina", "fill(tensor<F32, [2], @host>, -0.0)");
        assertThat(p.body().lets().getFirst().rhs()).isEqualTo(new Instr.Fill(f32(2), -0.0));
    }
}
