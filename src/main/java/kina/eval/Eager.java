package kina.eval;

import kina.ad.Ops;
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
}
