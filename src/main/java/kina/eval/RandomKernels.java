package kina.eval;

import static kina.eval.Kernels.check;
import static kina.eval.Kernels.make;
import static kina.eval.Kernels.requireHost;
import static kina.eval.Kernels.round;
import static kina.eval.Kernels.volume;

import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.TensorType;

/**
 * The reference kernels of the random family ({@link Instr.Random}): each element a pure function
 * of the key and its row-major position through {@link Philox}, so no kernel has state and the
 * order in which elements are computed does not matter.
 */
public final class RandomKernels {
    private RandomKernels() {}

    /** The key's first element K (the Philox key). The key is I64 [1] or [2]. */
    static long key(Tensor key) {
        check(key.dtype() == DType.I64 && key.shape().rank() == 1 && (key.size() == 1 || key.size() == 2),
                "random: the key must be I64 [1] or [2], not " + key.type());
        return key.ints()[0];
    }

    /** The key's second element S (the counter's high words), 0 for a key of one element. */
    static long stream(Tensor key) { return key.size() == 2 ? key.ints()[1] : 0; }

    private static void floating(String op, TensorType t) {
        requireHost(op, t);
        check(t.dtype() == DType.F32 || t.dtype() == DType.F64, op + ": the host runs " + op + " on F32 and F64, not " + t.dtype());
    }

    /** {@code key.random_uniform(T)}: y[n] = {@link Philox#uniform} of element n's block, in [0, 1), exact. */
    public static Tensor randomUniform(Tensor key, TensorType t) {
        floating("random_uniform", t);
        long k = key(key), s = stream(key);
        boolean single = t.dtype() == DType.F32;
        double[] y = new double[volume("random_uniform", t.shape())];
        int[] x = new int[4];
        for (int n = 0; n < y.length; n++) {
            Philox.element(k, s, n, x);
            y[n] = Philox.uniform(x, single);
        }
        return make(t, y);
    }

    /** {@code key.random_normal(T)}: y[n] = r({@link Philox#normal} of element n's block). */
    public static Tensor randomNormal(Tensor key, TensorType t) {
        floating("random_normal", t);
        long k = key(key), s = stream(key);
        DType d = t.dtype();
        double[] y = new double[volume("random_normal", t.shape())];
        int[] x = new int[4];
        for (int n = 0; n < y.length; n++) {
            Philox.element(k, s, n, x);
            y[n] = round(d, Philox.normal(x));
        }
        return make(t, y);
    }

    /**
     * {@code x.dropout(key, p=P)}: y[n] = r(x[n]·m[n]) with m[n] = s = r(1 / r(1 − P)) where the
     * uniform of element n in x's dtype is ≥ P, else +0.0 (PyTorch's x·(mask / (1 − P))).
     */
    public static Tensor dropout(Tensor x, Tensor key, double p) {
        floating("dropout", x.type());
        check(p >= 0 && p < 1, "dropout: p must be in [0, 1), got " + p);
        long k = key(key), st = stream(key);
        DType d = x.dtype();
        boolean single = d == DType.F32;
        double scale = scale(d, p);
        double[] a = x.floats(), y = new double[a.length];
        int[] w = new int[4];
        for (int n = 0; n < a.length; n++) {
            Philox.element(k, st, n, w);
            y[n] = round(d, a[n] * (Philox.uniform(w, single) >= p ? scale : 0.0));
        }
        return make(x.type(), y);
    }

    /** The scale of a kept element: r(1 / r(1 − p)). */
    public static double scale(DType d, double p) { return round(d, 1.0 / round(d, 1 - p)); }
}
