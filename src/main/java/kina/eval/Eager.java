package kina.eval;

import java.util.function.Function;
import kina.ad.Ops;
import kina.ir.Instr;
import kina.ir.TensorType;
import kina.ir.Var;

/**
 * The eager reading of the vocabulary ({@code Ops<Tensor>}): every instruction runs its reference
 * kernel ({@link Kernels#apply}), the same one the interpreter runs, so the oracle's reverse scan
 * and the recorded backward graph produce the same bits.
 */
public final class Eager implements Ops<Tensor> {
    public static final Eager INSTANCE = new Eager();

    private Eager() {}

    @Override public TensorType type(Tensor x) { return x.type(); }

    @Override public Tensor apply(Instr ins, Function<Var, Tensor> operand) { return Kernels.apply(ins, operand); }
}
