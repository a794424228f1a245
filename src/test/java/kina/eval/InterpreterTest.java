package kina.eval;

import kina.kernels.KinaMath;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Payload;
import kina.ir.Placement;
import kina.ir.Pos;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;
import org.junit.jupiter.api.Test;

/** Small programs built in Java (typed by hand), run through the interpreter. */
class InterpreterTest {

    static final TensorType F2x2 = TensorType.host(DType.F32, 2, 2);
    static final TensorType F2 = TensorType.host(DType.F32, 2);

    static Var v(String n) { return Var.of(n); }

    static Let let(String name, Rhs rhs, Type t) { return Let.typed(v(name), rhs, t); }

    static Let letAt(String name, int line, Rhs rhs, Type t) {
        return new Let(List.of(v(name)), false, rhs, new Pos("t.kina", line, 5), null, t);
    }

    static Program program(String result, Let... lets) {
        return new Program("t.kina", new Block(List.of(lets), v(result), Pos.NONE));
    }

    static Tensor f32(long[] dims, double... vals) { return Tensor.of(DType.F32, dims, vals); }

    static long[] dims(long... d) { return d; }

    @Test void runsAStraightLineProgram() {
        // let x = tensor<F32,[2,2]> in let w = literal in let y = x @ w in let s = y.sum(axis=1) in s
        Program p = program("s",
                let("x", new Instr.Input(F2x2), F2x2),
                let("w", new Instr.Literal(F2x2, new Payload(1, 0, 0, 2)), F2x2),
                let("y", new Instr.Matmul(v("x"), v("w")), F2x2),
                let("s", new Instr.Sum(v("y"), 1, false), F2));
        Value out = new Interpreter(Map.of("x", f32(dims(2, 2), 1, 2, 3, 4))).run(p);
        assertThat(out).isInstanceOf(Tensor.class);
        Tensor s = (Tensor) out;
        assertThat(s.type()).isEqualTo(F2);
        assertThat(s.floats()).containsExactly(5, 11);
    }

    @Test void callsFnsAndDestructuresTuples() {
        // let g = fn(a: F2) -> F2 { let e = a.exp() in e } in
        // let f = fn(a: F2) -> (F2, F2) { let n = -a in let c = g(n) in let t = (c, a) in t } in
        // let x = literal in let (p, q) = f(x) in let z = p + q in z
        Rhs.Fn g = new Rhs.Fn(List.of(new Rhs.Param(v("a"), F2, Pos.NONE)), F2,
                new Block(List.of(let("e", new Instr.Exp(v("a")), F2)), v("e"), Pos.NONE));
        Type pair = new Type.Tuple(List.of(F2, F2));
        Rhs.Fn f = new Rhs.Fn(List.of(new Rhs.Param(v("a"), F2, Pos.NONE)), pair,
                new Block(List.of(
                        let("n", new Instr.Neg(v("a")), F2),
                        let("c", new Rhs.Call(v("g"), List.of(v("n"))), F2),
                        let("t", new Rhs.Tuple(List.of(v("c"), v("a"))), pair)), v("t"), Pos.NONE));
        Program p = program("z",
                let("g", g, new Type.Fn(List.of(F2), F2)),
                let("f", f, new Type.Fn(List.of(F2), pair)),
                let("x", new Instr.Literal(F2, new Payload(0, 1)), F2),
                new Let(List.of(v("p"), v("q")), true, new Rhs.Call(v("f"), List.of(v("x"))), Pos.NONE, null, pair),
                let("z", new Instr.Add(v("p"), v("q")), F2));
        Tensor z = (Tensor) new Interpreter(Map.of()).run(p);
        assertThat(z.floats()).containsExactly(1, (double) (KinaMath.exp(-1f) + 1f));
    }

    @Test void bindingsListParamsThenLetsInOrder() {
        Rhs.Fn f = new Rhs.Fn(List.of(new Rhs.Param(v("a"), F2, Pos.NONE), new Rhs.Param(v("b"), F2, Pos.NONE)), F2,
                new Block(List.of(
                        let("%0", new Instr.Mul(v("a"), v("b")), F2),
                        let("y", new Instr.Add(v("%0"), v("a")), F2)), v("y"), Pos.NONE));
        Program p = program("f", let("f", f, new Type.Fn(List.of(F2, F2), F2)));
        Interpreter in = new Interpreter(Map.of());
        Value.Closure c = (Value.Closure) in.run(p);
        List<Value> args = List.of(f32(dims(2), 2, 3), f32(dims(2), 4, 5));
        var b = in.bindings(c, args);
        assertThat(b.keySet()).containsExactly(v("a"), v("b"), v("%0"), v("y"));
        assertThat(((Tensor) b.get(v("%0"))).floats()).containsExactly(8, 15);
        assertThat(((Tensor) in.call(c, args)).floats()).containsExactly(10, 18);
        assertThatThrownBy(() -> in.call(c, List.of(args.get(0))))
                .isInstanceOf(EvalError.class).hasMessage("call f: expected 2 arguments, got 1");
        assertThatThrownBy(() -> in.call(c, List.of(args.get(0), f32(dims(1), 1))))
                .isInstanceOf(EvalError.class)
                .hasMessage("call f: parameter b expects tensor<F32, [2], @host>, got tensor<F32, [1], @host>");
    }

    @Test void inputsAreFoundByNameInsideFns() {
        TensorType ids = TensorType.host(DType.I64, 2);
        // let nll = fn(l: F32[2,2]) -> F32[2] { let t = tensor<I64,[2]> in let lp = l.log_softmax(1) in
        //   let pk = lp.take_along_axis(t, 1) in let loss = -pk in loss } in let l = literal in nll(l)
        Rhs.Fn nll = new Rhs.Fn(List.of(new Rhs.Param(v("l"), F2x2, Pos.NONE)), F2,
                new Block(List.of(
                        let("t", new Instr.Input(ids), ids),
                        let("lp", new Instr.LogSoftmax(v("l"), 1), F2x2),
                        let("pk", new Instr.TakeAlongAxis(v("lp"), v("t"), 1), F2),
                        let("loss", new Instr.Neg(v("pk")), F2)), v("loss"), Pos.NONE));
        Program p = program("r",
                let("nll", nll, new Type.Fn(List.of(F2x2), F2)),
                let("l", new Instr.Literal(F2x2, new Payload(0, 0, 1, 1)), F2x2),
                let("r", new Rhs.Call(v("nll"), List.of(v("l"))), F2));
        Tensor r = (Tensor) new Interpreter(Map.of("t", Tensor.of(DType.I64, dims(2), 1, 0))).run(p);
        float ln2 = (float) StrictMath.log(2);
        assertThat(r.floats()).containsExactly(ln2, ln2);
    }

    @Test void missingAndMistypedInputsNameTheLet() {
        Program p = program("x", letAt("x", 3, new Instr.Input(F2x2), F2x2));
        assertThatThrownBy(() -> new Interpreter(Map.of()).run(p))
                .isInstanceOf(EvalError.class)
                .hasMessage("let x: input: no payload supplied for tensor<F32, [2, 2], @host>")
                .satisfies(e -> assertThat(((EvalError) e).pos()).isEqualTo(new Pos("t.kina", 3, 5)));
        assertThatThrownBy(() -> new Interpreter(Map.of("x", f32(dims(4), 1, 2, 3, 4))).run(p))
                .isInstanceOf(EvalError.class)
                .hasMessage("let x: input: expected tensor<F32, [2, 2], @host>, got tensor<F32, [4], @host>");
    }

    @Test void refusesDeviceAndNonHostDtypesByName() {
        TensorType dev = new TensorType(DType.F32, Shape.of(2), Placement.DEVICE);
        Program p = program("x", let("x", new Instr.Fill(dev, 1), dev));
        assertThatThrownBy(() -> new Interpreter(Map.of()).run(p))
                .isInstanceOf(EvalError.class)
                .hasMessage("let x: fill: the host interpreter does not run @device values");
        TensorType bf = TensorType.host(DType.BF16, 2);
        Program q = program("y",
                let("x", new Instr.Input(bf), bf),
                let("y", new Instr.Neg(v("x")), bf));
        assertThatThrownBy(() -> new Interpreter(Map.of()).run(q))
                .isInstanceOf(EvalError.class)
                .hasMessage("let x: input: the host interpreter does not run BF16");
        // an operation whose result type is refused is refused before computing
        Program r = program("y",
                let("x", new Instr.Fill(F2, 1), F2),
                let("y", new Instr.Exp(v("x")), TensorType.host(DType.F16, 2)));
        assertThatThrownBy(() -> new Interpreter(Map.of()).run(r))
                .isInstanceOf(EvalError.class)
                .hasMessage("let y: exp: the host interpreter does not run F16");
    }

    @Test void trapsAreLocatedAtTheLet() {
        TensorType vals = TensorType.host(DType.F32, 8, 2), ids = TensorType.host(DType.I64, 1, 4);
        TensorType out = TensorType.host(DType.F32, 1, 4, 2);
        Program p = program("y",
                let("e", new Instr.Fill(vals, 1), vals),
                let("i", new Instr.Literal(ids, new Payload(3, 1, 3, 8)), ids),
                letAt("y", 7, new Instr.Gather(v("e"), v("i")), out));
        assertThatThrownBy(() -> new Interpreter(Map.of()).run(p))
                .isInstanceOf(EvalError.class)
                .hasMessage("let y: gather index out of bounds: indices[0, 3] = 8, not in [0, 8)")
                .satisfies(e -> {
                    EvalError ee = (EvalError) e;
                    assertThat(ee.pos()).isEqualTo(new Pos("t.kina", 7, 5));
                    assertThat(ee.let()).isEqualTo("y");
                    assertThat(ee.oneLine()).isEqualTo(
                            "t.kina:7:5: error: let y: gather index out of bounds: indices[0, 3] = 8, not in [0, 8)");
                });
    }

    @Test void scatterTrapInsideAFnKeepsTheInnerLet() {
        TensorType u = TensorType.host(DType.F32, 2, 1), ids = TensorType.host(DType.I64, 2);
        TensorType dest = TensorType.host(DType.F32, 3, 1);
        Rhs.Fn f = new Rhs.Fn(List.of(new Rhs.Param(v("g"), u, Pos.NONE)), dest,
                new Block(List.of(
                        let("i", new Instr.Literal(ids, new Payload(0, 3)), ids),
                        letAt("g_e", 4, new Instr.ScatterAdd(v("g"), v("i"), dest), dest)), v("g_e"), Pos.NONE));
        Program p = program("r",
                let("f", f, new Type.Fn(List.of(u), dest)),
                let("x", new Instr.Fill(u, 1), u),
                letAt("r", 9, new Rhs.Call(v("f"), List.of(v("x"))), dest));
        assertThatThrownBy(() -> new Interpreter(Map.of()).run(p))
                .isInstanceOf(EvalError.class)
                .hasMessage("let g_e: scatter_add index out of bounds: indices[1] = 3, not in [0, 3)")
                .satisfies(e -> assertThat(((EvalError) e).detail()).startsWith("scatter_add index out of bounds"));
    }

    @Test void handleIsDelegatedToReverseMode() {
        Rhs.Fn f = new Rhs.Fn(List.of(new Rhs.Param(v("a"), F2, Pos.NONE)), F2,
                new Block(List.of(let("e", new Instr.Exp(v("a")), F2)), v("e"), Pos.NONE));
        Type pair = new Type.Tuple(List.of(F2, F2));
        Program p = program("h",
                let("f", f, new Type.Fn(List.of(F2), F2)),
                let("x", new Instr.Literal(F2, new Payload(0, 1)), F2),
                letAt("h", 5, new Rhs.Handle(v("f"), List.of(v("x"))), pair));
        assertThatThrownBy(() -> new Interpreter(Map.of()).run(p))
                .isInstanceOf(EvalError.class)
                .hasMessage("let h: handle f(x) with reverseMode: reverse mode is not available in this interpreter");

        List<Let> seen = new ArrayList<>();
        Interpreter.ReverseMode rm = (in, c, args, at) -> {
            seen.add(at);
            Tensor y = (Tensor) in.call(c, args);
            return new Value.Tuple(List.of(y, y));     // d exp = exp
        };
        Value.Tuple out = (Value.Tuple) new Interpreter(Map.of(), rm).run(p);
        assertThat(seen).hasSize(1);
        assertThat(seen.getFirst().var()).isEqualTo(v("h"));
        assertThat(((Tensor) out.elems().get(1)).floats()).containsExactly(1, KinaMath.exp(1f));
    }

    @Test void aResultOfTheWrongTypeIsNamed() {
        Program p = program("y",
                let("x", new Instr.Fill(F2, 1), F2),
                let("y", new Instr.Sum(v("x"), 0, true), F2));
        assertThatThrownBy(() -> new Interpreter(Map.of()).run(p))
                .isInstanceOf(EvalError.class)
                .hasMessage("let y: sum: computed tensor<F32, [1], @host> but the let is typed tensor<F32, [2], @host>");
    }

    @Test void runsEveryInstructionDeterministically() {
        TensorType f64 = TensorType.host(DType.F64, 2, 3), ids2 = TensorType.host(DType.I64, 2);
        TensorType t32 = TensorType.host(DType.F64, 3, 2), sq = TensorType.host(DType.F64, 2, 2);
        TensorType g = TensorType.host(DType.F64, 2, 3, 3), row = TensorType.host(DType.F64, 1, 3);
        Program p = program("out",
                let("x", new Instr.Input(f64), f64),
                let("i", new Instr.Literal(ids2, new Payload(2, 0)), ids2),
                let("j", new Instr.Literal(ids2, new Payload(1, 1)), ids2),
                let("o", new Instr.Fill(f64, 1), f64),
                let("a", new Instr.Add(v("x"), v("o")), f64),
                let("b", new Instr.Sub(v("a"), v("x")), f64),
                let("c", new Instr.Mul(v("a"), v("b")), f64),
                let("d", new Instr.Div(v("c"), v("a")), f64),
                let("e", new Instr.Exp(v("d")), f64),
                let("l", new Instr.Log(v("e")), f64),
                let("n", new Instr.Neg(v("l")), f64),
                let("t", new Instr.Transpose(v("n"), kina.ir.Perm.of(1, 0)), t32),
                let("m", new Instr.Matmul(v("x"), v("t")), sq),
                let("r", new Instr.Reshape(v("x"), Shape.of(3, 2)), t32),
                let("s", new Instr.Sum(v("x"), 0, true), row),
                let("bc", new Instr.Broadcast(v("s"), Shape.of(2, 3)), f64),
                let("sm", new Instr.Softmax(v("bc"), 1), f64),
                let("ls", new Instr.LogSoftmax(v("sm"), 1), f64),
                let("ta", new Instr.TakeAlongAxis(v("ls"), v("i"), 1), TensorType.host(DType.F64, 2)),
                let("ga", new Instr.Gather(v("x"), v("j")), TensorType.host(DType.F64, 2, 3)),
                let("sa", new Instr.ScatterAdd(v("ga"), v("j"), f64), f64),
                let("sx", new Instr.ScatterAlongAxis(1, v("ta"), v("i"), f64), f64),
                let("gg", new Instr.Reshape(v("sa"), Shape.of(2, 3, 1)), TensorType.host(DType.F64, 2, 3, 1)),
                let("g3", new Instr.Broadcast(v("gg"), Shape.of(2, 3, 3)), g),
                let("out", new Rhs.Tuple(List.of(v("m"), v("r"), v("sx"), v("g3"), v("sa"))),
                        new Type.Tuple(List.of(sq, t32, f64, g, f64))));
        Map<String, Tensor> in = Map.of("x", Tensor.of(DType.F64, dims(2, 3), 0.5, -1, 2, 0, 3, 1));
        Value.Tuple a = (Value.Tuple) new Interpreter(in).run(p), b = (Value.Tuple) new Interpreter(in).run(p);
        for (int k = 0; k < a.elems().size(); k++)
            assertThat(((Tensor) a.elems().get(k)).bitEquals((Tensor) b.elems().get(k))).isTrue();
        // ids [1, 1]: both rows of the gather are x's row 1; scatter_add puts 2·row 1 there, row 0 stays +0.0
        assertThat(((Tensor) a.elems().get(4)).floats()).containsExactly(0, 0, 0, 0, 6, 2);
        assertThat(((Tensor) a.elems().get(1)).floats()).containsExactly(0.5, -1, 2, 0, 3, 1);          // reshape keeps the order
        assertThat(((Tensor) a.elems().get(3)).floats()).containsExactly(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 6, 6, 2, 2, 2);
        // d = (a·b)/a with a = x + 1 and b = 1 is NaN where x = −1 (0/0), else 1; m = x @ (−log(exp d))ᵀ
        double l = ElementwiseKernels.log(ElementwiseKernels.exp(Tensor.of(DType.F64, dims(1), 1.0))).floats()[0];
        double[] m = ((Tensor) a.elems().get(0)).floats();
        assertThat(m[0]).isNaN();
        assertThat(m[2]).isNaN();
        assertThat(m[1]).isEqualTo(-1.5 * l);
        assertThat(m[3]).isEqualTo(-4 * l);
        double[] sx = ((Tensor) a.elems().get(2)).floats();                // take_along_axis then scatter back: only [0, 2] and [1, 0]
        for (int k = 0; k < 6; k++) if (k != 2 && k != 3) assertThat(Double.doubleToRawLongBits(sx[k])).as("sx[%d]", k).isZero();
        assertThat(sx[2]).isNegative();
        assertThat(sx[3]).isNegative();
    }
}
