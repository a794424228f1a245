package kina.eval;

import java.util.Optional;
import kina.ad.Ops;
import kina.ir.Instr.AttnOpts;
import kina.ir.Perm;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * The eager reading of the vocabulary ({@code Ops<Tensor>}): each call runs the same
 * {@link Kernels} method the interpreter runs for that instruction, so the oracle's reverse scan
 * and the recorded backward graph produce the same bits (DESIGN §4).
 */
public final class Eager implements Ops<Tensor> {
    public static final Eager INSTANCE = new Eager();

    private Eager() {}

    @Override public TensorType type(Tensor x) { return x.type(); }
    @Override public Tensor fill(TensorType t, double value) { return Kernels.fill(t, value); }
    @Override public Tensor neg(Tensor x) { return Kernels.neg(x); }
    @Override public Tensor exp(Tensor x) { return Kernels.exp(x); }
    @Override public Tensor log(Tensor x) { return Kernels.log(x); }
    @Override public Tensor add(Tensor a, Tensor b) { return Kernels.add(a, b); }
    @Override public Tensor sub(Tensor a, Tensor b) { return Kernels.sub(a, b); }
    @Override public Tensor mul(Tensor a, Tensor b) { return Kernels.mul(a, b); }
    @Override public Tensor div(Tensor a, Tensor b) { return Kernels.div(a, b); }
    @Override public Tensor matmul(Tensor a, Tensor b) { return Kernels.matmul(a, b); }
    @Override public Tensor reshape(Tensor x, Shape to) { return Kernels.reshape(x, to); }
    @Override public Tensor transpose(Tensor x, Perm perm) { return Kernels.transpose(x, perm); }
    @Override public Tensor broadcast(Tensor x, Shape to) { return Kernels.broadcast(x, to); }
    @Override public Tensor sum(Tensor x, int axis, boolean keepDims) { return Kernels.sum(x, axis, keepDims); }
    @Override public Tensor softmax(Tensor x, int axis) { return Kernels.softmax(x, axis); }
    @Override public Tensor logSoftmax(Tensor x, int axis) { return Kernels.logSoftmax(x, axis); }
    @Override public Tensor takeAlongAxis(Tensor values, Tensor indices, int axis) { return Kernels.takeAlongAxis(values, indices, axis); }
    @Override public Tensor gather(Tensor values, Tensor indices) { return Kernels.gather(values, indices); }
    @Override public Tensor scatterAdd(Tensor updates, Tensor indices, TensorType dest) { return Kernels.scatterAdd(updates, indices, dest); }
    @Override public Tensor scatterAlongAxis(int axis, Tensor updates, Tensor indices, TensorType dest) {
        return Kernels.scatterAlongAxis(axis, updates, indices, dest);
    }
    @Override public Tensor sqrt(Tensor x) { return Kernels.sqrt(x); }
    @Override public Tensor rsqrt(Tensor x) { return Kernels.rsqrt(x); }
    @Override public Tensor tanh(Tensor x) { return Kernels.tanh(x); }
    @Override public Tensor sigmoid(Tensor x) { return Kernels.sigmoid(x); }
    @Override public Tensor reciprocal(Tensor x) { return Kernels.reciprocal(x); }
    @Override public Tensor silu(Tensor x) { return Kernels.silu(x); }
    @Override public Tensor gelu(Tensor x) { return Kernels.gelu(x); }
    @Override public Tensor relu(Tensor x) { return Kernels.relu(x); }
    @Override public Tensor softcap(Tensor x, double cap) { return Kernels.softcap(x, cap); }
    @Override public Tensor argmax(Tensor x, int axis) { return Kernels.argmax(x, axis); }
    @Override public Tensor clamp(Tensor x, long lo, long hi) { return Kernels.clamp(x, lo, hi); }
    @Override public Tensor requant(Tensor x, int shift) { return Kernels.requant(x, shift); }
    @Override public Tensor maximum(Tensor a, Tensor b) { return Kernels.maximum(a, b); }
    @Override public Tensor greater(Tensor a, Tensor b) { return Kernels.greater(a, b); }
    @Override public Tensor select(Tensor mask, Tensor a, Tensor b) { return Kernels.select(mask, a, b); }
    @Override public Tensor swiglu(Tensor gate, Tensor up) { return Kernels.swiglu(gate, up); }
    @Override public Tensor rmsnorm(Tensor x, Optional<Tensor> weight, Optional<Tensor> residual, double eps) { return Kernels.rmsnorm(x, weight.orElse(null), residual.orElse(null), eps); }
    @Override public Tensor layernorm(Tensor x, Optional<Tensor> weight, Optional<Tensor> bias, double eps) { return Kernels.layernorm(x, weight.orElse(null), bias.orElse(null), eps); }
    @Override public Tensor l2norm(Tensor x, double eps) { return Kernels.l2norm(x, eps); }
    @Override public Tensor rope(Tensor x, Tensor cos, Tensor sin, int heads, int rotary, int start) { return Kernels.rope(x, cos, sin, heads, rotary, start); }
    @Override public Tensor attention(Tensor q, Tensor k, Tensor v, Optional<Tensor> sinks, AttnOpts opts) { return Kernels.attention(q, k, v, sinks.orElse(null), opts); }
    @Override public Tensor setRows(Tensor table, Tensor ids, Tensor rows) { return Kernels.setRows(table, ids, rows); }
    @Override public Tensor attentionProduct(Tensor a, Tensor b, AttnOpts opts, kina.ir.Instr.AttentionProduct.Form form) { return Kernels.attentionProduct(a, b, opts, form); }
    @Override public Tensor attentionProbs(Tensor q, Tensor k, Optional<Tensor> sinks, AttnOpts opts, boolean sinkColumn) { return Kernels.attentionProbs(q, k, sinks.orElse(null), opts, sinkColumn); }
}
