package kina.model;

import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.TensorType;

/**
 * The rotary position embedding's tables (RoFormer, Su et al. 2021), in kina's half-split form:
 * feature i of a head is paired with feature i + hd/2 and rotated by θ(t, i) = t · base^(−2i/hd).
 * Computed with StrictMath, so every run and every platform gets the same bits.
 */
public final class Rope {
    private Rope() {}

    /** {cos, sin}, each [seq, hd/2] F32, of config {@code c}'s head width, sequence length and base. */
    public static Tensor[] tables(Config c) {
        int t = c.seq(), half = c.headDim() / 2;
        double[] cs = new double[t * half], sn = new double[t * half];
        for (int pos = 0; pos < t; pos++)
            for (int i = 0; i < half; i++) {
                double theta = pos * StrictMath.pow(c.ropeBase(), -2.0 * i / c.headDim());
                cs[pos * half + i] = StrictMath.cos(theta);
                sn[pos * half + i] = StrictMath.sin(theta);
            }
        TensorType tt = TensorType.host(DType.F32, t, half);
        return new Tensor[] {Tensor.ofFloats(tt, cs), Tensor.ofFloats(tt, sn)};
    }
}
