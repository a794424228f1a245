package kina.check;

import static kina.check.Ir.call;
import static kina.check.Ir.dev;
import static kina.check.Ir.f32;
import static kina.check.Ir.fn;
import static kina.check.Ir.handle;
import static kina.check.Ir.i64;
import static kina.check.Ir.param;
import static kina.check.Ir.t;
import static kina.check.Ir.tuple;
import static kina.check.Ir.tupleType;
import static kina.check.Ir.v;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.Type;
import kina.ir.Var;
import org.junit.jupiter.api.Test;

/** Scoping, fns, calls, reverseMode handles, tuples and destructuring. */
class CheckerTest {

    static TypeError err(Program p) { return assertThrows(TypeError.class, () -> Checker.check(p)); }

    static Type typeOf(Program checked, String name) {
        for (Let l : checked.body().lets()) if (l.binders().contains(v(name))) return l.type();
        throw new AssertionError("no let " + name);
    }

    /** The seeds' NLL fn (Section 10 §3): logits [1, 4, 8] → loss [1, 4]. */
    static Rhs.Fn nll() {
        var body = new Ir()
                .input("targets", i64(1, 4))
                .let("log_probs", new Instr.LogSoftmax(v("logits"), 2))
                .let("picked", new Instr.TakeAlongAxis(v("log_probs"), v("targets"), 2))
                .let("loss", new Instr.Neg(v("picked")))
                .block("loss");
        return fn(List.of(param("logits", f32(1, 4, 8))), f32(1, 4), body);
    }

    // ---- whole programs

    @Test void theNllProgramChecksAndEveryLetIsTyped() {
        Program p = new Ir().let("nll", nll()).input("logits", f32(1, 4, 8))
                .let("out", handle("nll", "logits")).program("out");
        Program c = Checker.check(p);
        assertThat(typeOf(c, "nll")).isEqualTo(new Type.Fn(List.of(f32(1, 4, 8)), f32(1, 4)));
        assertThat(typeOf(c, "out")).isEqualTo(tupleType(f32(1, 4), f32(1, 4, 8)));
        Rhs.Fn checkedFn = (Rhs.Fn) c.body().lets().getFirst().rhs();
        assertThat(checkedFn.body().lets()).allSatisfy(l -> assertThat(l.type()).isNotNull());
        assertThat(Checker.scope(checkedFn)).containsExactly(
                Map.entry(v("logits"), f32(1, 4, 8)), Map.entry(v("targets"), i64(1, 4)),
                Map.entry(v("log_probs"), f32(1, 4, 8)), Map.entry(v("picked"), f32(1, 4)), Map.entry(v("loss"), f32(1, 4)));
        assertThat(c.file()).isEqualTo("t.kina");
        assertThat(c.body().result()).isEqualTo(v("out"));
        assertThat(Checker.check(c)).isEqualTo(c);  // checking a checked program changes nothing
        assertThat(Checker.check(p)).isEqualTo(c);  // and is deterministic
    }

    @Test void theSpecNotesExampleChecks() {
        var body = new Ir().input("ids", i64(2))
                .let("lp", new Instr.LogSoftmax(v("x"), 1))
                .let("pick", new Instr.TakeAlongAxis(v("lp"), v("ids"), 1))
                .let("out", new Instr.Neg(v("pick"))).block("out");
        Program p = new Ir().input("lr", f32(1, 1))
                .let("f", fn(List.of(param("x", f32(2, 3))), f32(2), body))
                .input("x", f32(2, 3))
                .destructure(handle("f", "x"), "y", "g_x")
                .temp("%0", "result", new Instr.Broadcast(v("lr"), Shape.of(2, 3)))
                .temp("%1", "result", new Instr.Mul(v("%0"), v("g_x")))
                .temp("%2", "result", new Instr.Sub(v("x"), v("%1")))
                .program("%2");
        Program c = Checker.check(p);
        Let d = c.body().lets().get(3);
        assertThat(d.type()).isEqualTo(tupleType(f32(2), f32(2, 3)));
        assertThat(c.body().lets().getLast().type()).isEqualTo(f32(2, 3));
    }

    // ---- scoping

    @Test void aNameBoundTwiceNamesBothPositions() {
        TypeError e = err(new Ir().input("x", f32(2)).input("y", f32(2)).input("x", f32(3)).program("x"));
        assertThat(e.getMessage()).startsWith("let x: input: ").contains("bound twice", "t.kina:1:1", "t.kina:3:1");
        assertThat(e.pos().line()).isEqualTo(3);
    }

    @Test void aNameMayBeReboundInAFnScope() {
        var body = new Ir().let("y", new Instr.Exp(v("x"))).block("y");
        Program p = new Ir().input("x", f32(2)).input("y", f32(2))
                .let("f", fn(List.of(param("x", f32(2))), f32(2), body))
                .let("z", call("f", "y")).program("z");
        assertThat(typeOf(Checker.check(p), "z")).isEqualTo(f32(2));
    }

    @Test void unboundNamesAreErrors() {
        TypeError e = err(new Ir().input("a", f32(2)).let("c", new Instr.Add(v("a"), v("q"))).program("c"));
        assertThat(e.getMessage()).isEqualTo("let c: add: unbound name q");
        // a let may not use itself or a later let
        assertThat(err(new Ir().let("c", new Instr.Exp(v("c"))).program("c")).getMessage()).isEqualTo("let c: exp: unbound name c");
        assertThat(err(new Ir().input("a", f32(2)).program("zz")).getMessage()).isEqualTo("result: unbound name zz");
        assertThat(err(new Ir().input("a", f32(2)).let("c", call("g", "a")).program("c")).getMessage())
                .isEqualTo("let c: call: unbound name g");
    }

    @Test void fnBodiesAreClosed() {
        var body = new Ir().let("y", new Instr.Add(v("x"), v("w"))).block("y");
        Program p = new Ir().input("w", f32(2))
                .let("f", fn(List.of(param("x", f32(2))), f32(2), body)).program("w");
        TypeError e = err(p);
        assertThat(e.getMessage()).isEqualTo("let y: add: fn bodies are closed: pass w as a parameter");
        // also as the body's result
        var body2 = new Ir().block("w");
        TypeError e2 = err(new Ir().input("w", f32(2)).let("f", fn(List.of(param("x", f32(2))), f32(2), body2)).program("w"));
        assertThat(e2.getMessage()).isEqualTo("let f: fn: body result: fn bodies are closed: pass w as a parameter");
    }

    @Test void fnBodiesMayCallEarlierFns() {
        var gBody = new Ir().let("r", new Instr.Exp(v("x"))).block("r");
        var fBody = new Ir().let("s", call("g", "x")).let("t", new Instr.Neg(v("s"))).block("t");
        Program p = new Ir()
                .let("g", fn(List.of(param("x", f32(3))), f32(3), gBody))
                .let("f", fn(List.of(param("x", f32(3))), f32(3), fBody))
                .input("a", f32(3)).let("b", call("f", "a")).program("b");
        assertThat(typeOf(Checker.check(p), "b")).isEqualTo(f32(3));
        // no recursion: a fn's own name is bound only after its let
        var rec = new Ir().let("s", call("f", "x")).block("s");
        assertThat(err(new Ir().let("f", fn(List.of(param("x", f32(3))), f32(3), rec)).program("f")).getMessage())
                .isEqualTo("let s: call: unbound name f");
    }

    @Test void fnNamesAreOnlyCallTargets() {
        var body = new Ir().block("x");
        Ir base = new Ir().let("f", fn(List.of(param("x", f32(2))), f32(2), body)).input("a", f32(2));
        assertThat(err(base.let("c", new Instr.Add(v("a"), v("f"))).program("c")).getMessage())
                .isEqualTo("let c: add: f is a fn; a fn may be used only as a call or handle target");
        Ir base2 = new Ir().let("f", fn(List.of(param("x", f32(2))), f32(2), new Ir().block("x")));
        assertThat(err(base2.program("f")).getMessage()).startsWith("result: f is a fn");
        Ir base3 = new Ir().let("f", fn(List.of(param("x", f32(2))), f32(2), new Ir().block("x")));
        assertThat(err(base3.let("t", tuple("f")).program("t")).getMessage()).startsWith("let t: tuple: f is a fn");
    }

    @Test void tupleNamesAreOnlyDestructuredOrResults() {
        Program asResult = new Ir().input("a", f32(2)).input("b", i64(3)).let("t", tuple("a", "b")).program("t");
        Program c = Checker.check(asResult);
        assertThat(typeOf(c, "t")).isEqualTo(tupleType(f32(2), i64(3)));
        TypeError e = err(new Ir().input("a", f32(2)).let("t", tuple("a", "a")).let("c", new Instr.Neg(v("t"))).program("c"));
        assertThat(e.getMessage()).startsWith("let c: neg: t is a tuple (tensor<F32, [2], @host>, tensor<F32, [2], @host>)");
        assertThat(err(new Ir().input("a", f32(2)).let("t", tuple("a")).let("u", tuple("t", "a")).program("u")).getMessage())
                .startsWith("let u: tuple: t is a tuple");
    }

    @Test void callTargetsMustBeFns() {
        TypeError e = err(new Ir().input("a", f32(2)).let("c", call("a", "a")).program("c"));
        assertThat(e.getMessage()).isEqualTo("let c: call: a is not a fn: it has type tensor<F32, [2], @host>");
        TypeError h = err(new Ir().input("a", f32(2)).let("c", handle("a", "a")).program("c"));
        assertThat(h.getMessage()).startsWith("let c: handle: a is not a fn");
    }

    @Test void temporariesAreReportedUnderTheirOwner() {
        Program p = new Ir().input("a", f32(2, 3)).input("b", f32(3, 2))
                .temp("%0", "loss", new Instr.Exp(v("a")))
                .let("loss", new Instr.Add(v("%0"), v("b"))).program("loss");
        TypeError e = err(p);
        assertThat(e.getMessage()).isEqualTo(
                "let loss: add: operand types differ: tensor<F32, [2, 3], @host> + tensor<F32, [3, 2], @host>");
        Program q = new Ir().input("a", i64(2, 3)).temp("%0", "loss", new Instr.Exp(v("a")))
                .let("loss", new Instr.Neg(v("%0"))).program("loss");
        TypeError f = err(q);
        assertThat(f.getMessage()).startsWith("let loss: exp: needs a floating operand").contains("[2, 3]");
        assertThat(f.pos().line()).isEqualTo(2);
    }

    // ---- fns

    @Test void theBodyMustHaveTheDeclaredType() {
        var body = new Ir().let("s", new Instr.Sum(v("x"), 1, false)).block("s");
        TypeError e = err(new Ir().let("f", fn(List.of(param("x", f32(2, 3))), f32(2, 3), body)).program("f"));
        assertThat(e.getMessage()).isEqualTo("let f: fn: body has type tensor<F32, [2], @host> but the fn declares tensor<F32, [2, 3], @host>");
        assertThat(e.pos().line()).isEqualTo(1);  // the fn let's position
    }

    @Test void aFnMayReturnATuple() {
        var body = new Ir().let("e", new Instr.Exp(v("x"))).let("r", tuple("e", "x")).block("r");
        var fnT = fn(List.of(param("x", f32(2))), tupleType(f32(2), f32(2)), body);
        Program p = new Ir().let("f", fnT).input("a", f32(2)).destructure(call("f", "a"), "p", "q")
                .let("s", new Instr.Add(v("p"), v("q"))).program("s");
        Program c = Checker.check(p);
        assertThat(typeOf(c, "p")).isEqualTo(tupleType(f32(2), f32(2)));
        assertThat(typeOf(c, "s")).isEqualTo(f32(2));
        Rhs.Fn checked = (Rhs.Fn) c.body().lets().getFirst().rhs();
        assertThat(Checker.scope(checked)).containsEntry(v("r"), tupleType(f32(2), f32(2))).containsEntry(v("e"), f32(2));
    }

    @Test void parametersAreBoundOnce() {
        var body = new Ir().block("x");
        TypeError e = err(new Ir().let("f", fn(List.of(param("x", f32(2)), param("x", f32(2))), f32(2), body)).program("f"));
        assertThat(e.getMessage()).startsWith("let f: fn: parameter x is bound twice");
        var body2 = new Ir().input("x", f32(2)).block("x");
        TypeError e2 = err(new Ir().let("f", fn(List.of(param("x", f32(2))), f32(2), body2)).program("f"));
        assertThat(e2.getMessage()).startsWith("let x: input: x is bound twice in one scope");
    }

    // ---- calls

    @Test void callsCheckArityAndArgumentTypes() {
        var body = new Ir().let("y", new Instr.Matmul(v("x"), v("w"))).block("y");
        Rhs.Fn f = fn(List.of(param("x", f32(2, 3)), param("w", f32(3, 4))), f32(2, 4), body);
        Ir ok = new Ir().let("f", f).input("a", f32(2, 3)).input("b", f32(3, 4)).let("c", call("f", "a", "b"));
        assertThat(typeOf(Checker.check(ok.program("c")), "c")).isEqualTo(f32(2, 4));
        TypeError arity = err(new Ir().let("f", f).input("a", f32(2, 3)).let("c", call("f", "a")).program("c"));
        assertThat(arity.getMessage()).startsWith("let c: call: f takes 2 arguments, got 1");
        TypeError arg = err(new Ir().let("f", f).input("a", f32(2, 3)).input("b", dev(f32(3, 4)))
                .let("c", call("f", "a", "b")).program("c"));
        assertThat(arg.getMessage()).isEqualTo("let c: call: argument 2 of f (b) has type tensor<F32, [3, 4], @device>, "
                + "the parameter has type tensor<F32, [3, 4], @host>");
    }

    // ---- reverseMode handles (Section 14 §3)

    @Test void handleResultIsThePrimalAndTheFloatingParamsCotangents() {
        var body = new Ir().let("e", new Instr.Gather(v("emb"), v("ids")))
                .let("m", new Instr.Matmul(v("e"), v("w"))).block("m");
        Rhs.Fn f = fn(List.of(param("ids", i64(1, 4)), param("emb", f32(8, 4)), param("w", t(DType.BF16, 4, 2))),
                f32(1, 4, 2), body);
        // e is rank 3, w rank 2: the fn body is checked before any handle of it
        TypeError bad = err(new Ir().let("f", f).program("f"));
        assertThat(bad.getMessage()).startsWith("let m: matmul: ranks differ");
        var body2 = new Ir().let("e", new Instr.Gather(v("emb"), v("ids"))).block("e");
        Rhs.Fn g = fn(List.of(param("ids", i64(1, 4)), param("emb", f32(8, 4)), param("u", t(DType.F64, 3))),
                f32(1, 4, 4), body2);
        Program p = new Ir().let("g", g).input("ids", i64(1, 4)).input("emb", f32(8, 4)).input("u", t(DType.F64, 3))
                .destructure(handle("g", "ids", "emb", "u"), "logits", "g_emb", "g_u").program("g_emb");
        Program c = Checker.check(p);
        assertThat(c.body().lets().getLast().type()).isEqualTo(tupleType(f32(1, 4, 4), f32(8, 4), t(DType.F64, 3)));
    }

    @Test void handleWithNoFloatingParamsIsThePrimal() {
        var body = new Ir().let("s", new Instr.Sum(v("ids"), 0, false)).block("s");
        Rhs.Fn f = fn(List.of(param("ids", i64(4))), i64(), body);
        Program p = new Ir().let("f", f).input("ids", i64(4)).let("r", handle("f", "ids")).program("r");
        assertThat(typeOf(Checker.check(p), "r")).isEqualTo(i64());
    }

    @Test void handleNeedsOneTensorResult() {
        var body = new Ir().let("r", tuple("x", "x")).block("r");
        Rhs.Fn f = fn(List.of(param("x", f32(2))), tupleType(f32(2), f32(2)), body);
        TypeError e = err(new Ir().let("f", f).input("a", f32(2)).let("h", handle("f", "a")).program("h"));
        assertThat(e.getMessage()).startsWith("let h: handle: reverseMode needs f to return one tensor")
                .contains("(tensor<F32, [2], @host>, tensor<F32, [2], @host>)");
        TypeError arity = err(new Ir().let("f", nll()).let("h", handle("f")).program("h"));
        assertThat(arity.getMessage()).startsWith("let h: handle: f takes 1 arguments, got 0");
    }

    // ---- destructuring

    @Test void destructuringNeedsATupleOfTheRightLength() {
        Ir base = new Ir().let("nll", nll()).input("logits", f32(1, 4, 8));
        TypeError e = err(base.destructure(handle("nll", "logits"), "y", "g", "extra").program("y"));
        assertThat(e.getMessage()).startsWith("let (y, g, extra): handle: pattern binds 3 names but the tuple has 2 elements")
                .contains("tensor<F32, [1, 4], @host>", "tensor<F32, [1, 4, 8], @host>");
        TypeError t2 = err(new Ir().input("a", f32(2)).destructure(new Instr.Neg(v("a")), "p", "q").program("p"));
        assertThat(t2.getMessage()).isEqualTo("let (p, q): neg: cannot destructure tensor<F32, [2], @host>: not a tuple");
        TypeError dup = err(new Ir().input("a", f32(2)).destructure(tuple("a", "a"), "p", "p").program("p"));
        assertThat(dup.getMessage()).isEqualTo("let (p, p): tuple: p is bound twice in one pattern");
        TypeError clash = err(new Ir().input("a", f32(2)).destructure(tuple("a", "a"), "a", "p").program("p"));
        assertThat(clash.getMessage()).startsWith("let (a, p): tuple: a is bound twice in one scope");
    }

    @Test void scopeGivesDestructuredBindersTheirElementTypes() {
        var inner = new Ir().let("r", new Instr.Exp(v("x"))).block("r");
        var body = new Ir().let("h", fn(List.of(param("x", f32(2))), f32(2), inner))
                .destructure(handle("h", "x"), "y", "g_x")
                .let("z", new Instr.Add(v("y"), v("g_x"))).block("z");
        Program q = new Ir().let("f", fn(List.of(param("x", f32(2))), f32(2), body)).input("a", f32(2))
                .let("out", call("f", "a")).program("out");
        Program c = Checker.check(q);
        Map<Var, Type> scope = Checker.scope((Rhs.Fn) c.body().lets().getFirst().rhs());
        assertThat(scope).containsExactly(Map.entry(v("x"), f32(2)),
                Map.entry(v("h"), new Type.Fn(List.of(f32(2)), f32(2))),
                Map.entry(v("y"), f32(2)), Map.entry(v("g_x"), f32(2)), Map.entry(v("z"), f32(2)));
        assertThat(scope).doesNotContainKey(v("r"));
    }

    // ---- NumPy conventions

    @Test void negativeAxesAndPermEntriesCountFromTheEndAndPrintNormalised() {
        String src = """
                let x = tensor<F32, [2, 3, 4], @host> in
                let t = tensor<I64, [2, 3], @host> in
                let a = x.sum(axis=-1, keepdims=true) in
                let b = x.log_softmax(axis=-2) in
                let c = x.transpose([0, -1, -2]) in
                let d = b.take_along_axis(t, axis=-1) in
                let e = x.softmax(axis=-3) in
                let m = x.argmax(axis=-1) in
                d
                """;
        Program c = Checker.check(kina.syntax.Parser.parse("n.kina", src));
        assertThat(typeOf(c, "a")).isEqualTo(f32(2, 3, 1));
        assertThat(typeOf(c, "c")).isEqualTo(f32(2, 4, 3));
        assertThat(typeOf(c, "d")).isEqualTo(f32(2, 3));
        assertThat(typeOf(c, "m")).isEqualTo(i64(2, 3));
        assertThat(kina.ir.Printer.print(c)).contains("x.sum(axis=2, keepdims=true)", "x.log_softmax(axis=1)",
                "x.transpose([0, 2, 1])", "b.take_along_axis(t, axis=2)", "x.softmax(axis=0)", "x.argmax(axis=2)")
                .doesNotContain("-1", "-2", "-3");
        TypeError far = err(kina.syntax.Parser.parse("n.kina", "let x = tensor<F32, [2, 3], @host> in\nlet a = x.sum(axis=-3) in\na\n"));
        assertThat(far.oneLine()).isEqualTo("n.kina:2:1: error: let a: sum: axis -3 out of range for tensor<F32, [2, 3], @host> "
                + "(rank 2: axes are 0..1, or -2..-1 counted from the end)");
    }

    @Test void destructuringAHandleOfAnI64ParameterNamesItAndSaysWhy() {
        var body = new Ir().let("y", new Instr.Gather(v("table"), v("ids"))).block("y");
        Rhs.Fn onlyIds = fn(List.of(param("ids", i64(3))), f32(3, 4), new Ir().input("table", f32(5, 4))
                .let("y", new Instr.Gather(v("table"), v("ids"))).block("y"));
        TypeError alone = err(new Ir().let("f", onlyIds).input("x_i64", i64(3))
                .destructure(handle("f", "x_i64"), "y", "dx").program("y"));
        assertThat(alone.getMessage()).isEqualTo("let (y, dx): handle: cannot destructure tensor<F32, [3, 4], @host>: not a tuple; "
                + "handle f with reverseMode returns the result alone: parameter ids : tensor<I64, [3], @host> of f is discrete, "
                + "and I64 values get no cotangent (bind the result alone: let y = handle …)");
        Rhs.Fn mixed = fn(List.of(param("table", f32(5, 4)), param("ids", i64(3))), f32(3, 4), body);
        TypeError three = err(new Ir().let("f", mixed).input("t", f32(5, 4)).input("i", i64(3))
                .destructure(handle("f", "t", "i"), "y", "g_t", "g_i").program("y"));
        assertThat(three.getMessage()).startsWith("let (y, g_t, g_i): handle: pattern binds 3 names but the tuple has 2 elements")
                .endsWith("handle f with reverseMode returns the result and 1 cotangent: parameter ids : tensor<I64, [3], @host> "
                        + "of f is discrete, and I64 values get no cotangent");
    }
}
