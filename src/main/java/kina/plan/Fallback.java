package kina.plan;

import java.util.Map;
import java.util.Optional;
import kina.eval.Kernels;
import kina.eval.Tensor;
import kina.ir.Instr;
import kina.ir.Var;

/**
 * The generic kernel: the operands wrapped as {@link Tensor}s and the interpreter's own
 * {@link Kernels} called, so the bits are the interpreter's by construction. Used for every
 * instruction (or dtype) without a native kernel, and to raise the exact trap message when a
 * native kernel's index check fails.
 */
final class Fallback {
    private Fallback() {}

    /** One case per instruction, as Interpreter.instr; {@code env} maps the instruction's operands. */
    static Tensor apply(Instr ins, Map<Var, Tensor> env) {
        return switch (ins) {
            case Instr.Input _, Instr.Literal _, Instr.Fill _ ->
                    throw new IllegalStateException(ins.op() + " is a slot of the plan, not a step");
            case Instr.Neg(Var x) -> Kernels.neg(env.get(x));
            case Instr.Exp(Var x) -> Kernels.exp(env.get(x));
            case Instr.Log(Var x) -> Kernels.log(env.get(x));
            case Instr.Sqrt(Var x) -> Kernels.sqrt(env.get(x));
            case Instr.Rsqrt(Var x) -> Kernels.rsqrt(env.get(x));
            case Instr.Tanh(Var x) -> Kernels.tanh(env.get(x));
            case Instr.Sigmoid(Var x) -> Kernels.sigmoid(env.get(x));
            case Instr.Reciprocal(Var x) -> Kernels.reciprocal(env.get(x));
            case Instr.Silu(Var x) -> Kernels.silu(env.get(x));
            case Instr.Gelu(Var x) -> Kernels.gelu(env.get(x));
            case Instr.Relu(Var x) -> Kernels.relu(env.get(x));
            case Instr.Softcap(Var x, double cap) -> Kernels.softcap(env.get(x), cap);
            case Instr.ArgMax(Var x, int axis) -> Kernels.argmax(env.get(x), axis);
            case Instr.Clamp(Var x, long lo, long hi) -> Kernels.clamp(env.get(x), lo, hi);
            case Instr.Requant(Var x, int shift) -> Kernels.requant(env.get(x), shift);
            case Instr.Add(Var a, Var b) -> Kernels.add(env.get(a), env.get(b));
            case Instr.Sub(Var a, Var b) -> Kernels.sub(env.get(a), env.get(b));
            case Instr.Mul(Var a, Var b) -> Kernels.mul(env.get(a), env.get(b));
            case Instr.Div(Var a, Var b) -> Kernels.div(env.get(a), env.get(b));
            case Instr.Maximum(Var a, Var b) -> Kernels.maximum(env.get(a), env.get(b));
            case Instr.Greater(Var a, Var b) -> Kernels.greater(env.get(a), env.get(b));
            case Instr.Select(Var m, Var a, Var b) -> Kernels.select(env.get(m), env.get(a), env.get(b));
            case Instr.Swiglu(Var g, Var u) -> Kernels.swiglu(env.get(g), env.get(u));
            case Instr.Matmul(Var a, Var b) -> Kernels.matmul(env.get(a), env.get(b));
            case Instr.Reshape(Var x, var to) -> Kernels.reshape(env.get(x), to);
            case Instr.Transpose(Var x, var perm) -> Kernels.transpose(env.get(x), perm);
            case Instr.Broadcast(Var x, var to) -> Kernels.broadcast(env.get(x), to);
            case Instr.Sum(Var x, int axis, boolean keepDims) -> Kernels.sum(env.get(x), axis, keepDims);
            case Instr.LogSoftmax(Var x, int axis) -> Kernels.logSoftmax(env.get(x), axis);
            case Instr.Softmax(Var x, int axis) -> Kernels.softmax(env.get(x), axis);
            case Instr.RmsNorm(Var x, var w, var r, double eps) -> Kernels.rmsnorm(env.get(x), opt(env, w), opt(env, r), eps);
            case Instr.LayerNorm(Var x, var w, var b, double eps) -> Kernels.layernorm(env.get(x), opt(env, w), opt(env, b), eps);
            case Instr.L2Norm(Var x, double eps) -> Kernels.l2norm(env.get(x), eps);
            case Instr.Rope(Var x, Var c, Var s, int heads, int rotary, int start) ->
                    Kernels.rope(env.get(x), env.get(c), env.get(s), heads, rotary, start);
            case Instr.Attention(Var q, Var k, Var v, var sinks, var o) ->
                    Kernels.attention(env.get(q), env.get(k), env.get(v), opt(env, sinks), o);
            case Instr.TakeAlongAxis(Var v, Var idx, int axis) -> Kernels.takeAlongAxis(env.get(v), env.get(idx), axis);
            case Instr.Gather(Var v, Var idx) -> Kernels.gather(env.get(v), env.get(idx));
            case Instr.SetRows(Var t, Var idx, Var rows) -> Kernels.setRows(env.get(t), env.get(idx), env.get(rows));
            case Instr.ScatterAdd(Var u, Var idx, var dest) -> Kernels.scatterAdd(env.get(u), env.get(idx), dest);
            case Instr.ScatterAlongAxis(int axis, Var u, Var idx, var dest) ->
                    Kernels.scatterAlongAxis(axis, env.get(u), env.get(idx), dest);
            case Instr.AttentionProbs(Var q, Var k, var sinks, var o, boolean col) ->
                    Kernels.attentionProbs(env.get(q), env.get(k), opt(env, sinks), o, col);
            case Instr.AttentionProduct(Var a, Var b, var o, var form) -> Kernels.attentionProduct(env.get(a), env.get(b), o, form);
        };
    }

    private static Tensor opt(Map<Var, Tensor> env, Optional<Var> v) { return v.map(env::get).orElse(null); }
}
