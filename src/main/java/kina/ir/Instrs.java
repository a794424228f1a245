package kina.ir;

import java.util.function.UnaryOperator;
import kina.ir.Instr.*;

/** Structural helpers over {@link Instr}: one exhaustive switch each. */
public final class Instrs {
    private Instrs() {}

    /** The same instruction with every operand {@code v} replaced by {@code f(v)}; attributes unchanged. */
    public static Instr mapOperands(Instr ins, UnaryOperator<Var> f) {
        return switch (ins) {
            case Input i -> i;
            case Literal l -> l;
            case Fill fl -> fl;
            case Neg(var x) -> new Neg(f.apply(x));
            case Exp(var x) -> new Exp(f.apply(x));
            case Log(var x) -> new Log(f.apply(x));
            case Add(var a, var b) -> new Add(f.apply(a), f.apply(b));
            case Sub(var a, var b) -> new Sub(f.apply(a), f.apply(b));
            case Mul(var a, var b) -> new Mul(f.apply(a), f.apply(b));
            case Div(var a, var b) -> new Div(f.apply(a), f.apply(b));
            case Matmul(var a, var b) -> new Matmul(f.apply(a), f.apply(b));
            case Reshape(var x, var to) -> new Reshape(f.apply(x), to);
            case Transpose(var x, var perm) -> new Transpose(f.apply(x), perm);
            case Broadcast(var x, var to) -> new Broadcast(f.apply(x), to);
            case Sum(var x, var axis, var keep) -> new Sum(f.apply(x), axis, keep);
            case LogSoftmax(var x, var axis) -> new LogSoftmax(f.apply(x), axis);
            case Softmax(var x, var axis) -> new Softmax(f.apply(x), axis);
            case TakeAlongAxis(var v, var ids, var axis) -> new TakeAlongAxis(f.apply(v), f.apply(ids), axis);
            case Gather(var v, var ids) -> new Gather(f.apply(v), f.apply(ids));
            case ScatterAdd(var u, var ids, var dest) -> new ScatterAdd(f.apply(u), f.apply(ids), dest);
            case ScatterAlongAxis(var axis, var u, var ids, var dest) -> new ScatterAlongAxis(axis, f.apply(u), f.apply(ids), dest);
        };
    }
}
