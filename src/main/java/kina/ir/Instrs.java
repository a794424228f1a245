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
            case Sqrt(var x) -> new Sqrt(f.apply(x));
            case Rsqrt(var x) -> new Rsqrt(f.apply(x));
            case Tanh(var x) -> new Tanh(f.apply(x));
            case Sigmoid(var x) -> new Sigmoid(f.apply(x));
            case Reciprocal(var x) -> new Reciprocal(f.apply(x));
            case Silu(var x) -> new Silu(f.apply(x));
            case Gelu(var x) -> new Gelu(f.apply(x));
            case Relu(var x) -> new Relu(f.apply(x));
            case Softcap(var x, var cap) -> new Softcap(f.apply(x), cap);
            case ArgMax(var x, var axis) -> new ArgMax(f.apply(x), axis);
            case Clamp(var x, var lo, var hi) -> new Clamp(f.apply(x), lo, hi);
            case Requant(var x, var shift) -> new Requant(f.apply(x), shift);
            case Add(var a, var b) -> new Add(f.apply(a), f.apply(b));
            case Sub(var a, var b) -> new Sub(f.apply(a), f.apply(b));
            case Mul(var a, var b) -> new Mul(f.apply(a), f.apply(b));
            case Div(var a, var b) -> new Div(f.apply(a), f.apply(b));
            case Maximum(var a, var b) -> new Maximum(f.apply(a), f.apply(b));
            case Greater(var a, var b) -> new Greater(f.apply(a), f.apply(b));
            case Select(var m, var a, var b) -> new Select(f.apply(m), f.apply(a), f.apply(b));
            case Swiglu(var g, var u) -> new Swiglu(f.apply(g), f.apply(u));
            case Matmul(var a, var b) -> new Matmul(f.apply(a), f.apply(b));
            case Reshape(var x, var to) -> new Reshape(f.apply(x), to);
            case Transpose(var x, var perm) -> new Transpose(f.apply(x), perm);
            case Broadcast(var x, var to) -> new Broadcast(f.apply(x), to);
            case Sum(var x, var axis, var keep) -> new Sum(f.apply(x), axis, keep);
            case LogSoftmax(var x, var axis) -> new LogSoftmax(f.apply(x), axis);
            case Softmax(var x, var axis) -> new Softmax(f.apply(x), axis);
            case RmsNorm(var x, var w, var r, var eps) -> new RmsNorm(f.apply(x), w.map(f), r.map(f), eps);
            case LayerNorm(var x, var w, var b, var eps) -> new LayerNorm(f.apply(x), w.map(f), b.map(f), eps);
            case L2Norm(var x, var eps) -> new L2Norm(f.apply(x), eps);
            case Rope(var x, var c, var s, var h, var rot, var start) -> new Rope(f.apply(x), f.apply(c), f.apply(s), h, rot, start);
            case Attention(var q, var k, var v, var sinks, var opts) ->
                    new Attention(f.apply(q), f.apply(k), f.apply(v), sinks.map(f), opts);
            case TakeAlongAxis(var v, var ids, var axis) -> new TakeAlongAxis(f.apply(v), f.apply(ids), axis);
            case Gather(var v, var ids) -> new Gather(f.apply(v), f.apply(ids));
            case SetRows(var t, var ids, var rows) -> new SetRows(f.apply(t), f.apply(ids), f.apply(rows));
            case ScatterAdd(var u, var ids, var dest) -> new ScatterAdd(f.apply(u), f.apply(ids), dest);
            case ScatterAlongAxis(var axis, var u, var ids, var dest) -> new ScatterAlongAxis(axis, f.apply(u), f.apply(ids), dest);
            case AttentionProbs(var q, var k, var sinks, var opts, var col) ->
                    new AttentionProbs(f.apply(q), f.apply(k), sinks.map(f), opts, col);
            case AttentionProduct(var a, var b, var opts, var form) -> new AttentionProduct(f.apply(a), f.apply(b), opts, form);
        };
    }
}
