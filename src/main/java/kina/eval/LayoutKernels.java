package kina.eval;

import static kina.eval.Kernels.check;
import static kina.eval.Kernels.make;
import static kina.eval.Kernels.volume;

import kina.ir.Instr;
import kina.ir.Perm;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * The reference kernels of the layout family ({@link Instr.Layout}): reshape, transpose and
 * broadcast move or copy elements without arithmetic (any dtype).
 */
public final class LayoutKernels {
    private LayoutKernels() {}

    // ---- layout -------------------------------------------------------------------------------------

    /** {@code x.reshape(to)}: the same row-major elements (a copy), volumes must agree. */
    public static Tensor reshape(Tensor x, Shape to) {
        TensorType out = x.type().withShape(to);
        check(volume("reshape", to) == x.size(), "reshape: " + x.shape() + " to " + to + " changes the volume");
        return x.isFloating() ? make(out, x.floats().clone()) : make(out, x.ints().clone());
    }

    /** {@code x.transpose(perm)}: output axis i is input axis perm[i]; out[o] = x[o permuted back]. */
    public static Tensor transpose(Tensor x, Perm perm) {
        Shape s = x.shape();
        check(perm.rank() == s.rank() && perm.valid(), "transpose: " + perm + " is not a permutation of rank " + s.rank());
        long[] inStride = s.strides(), src = new long[s.rank()];
        for (int i = 0; i < s.rank(); i++) src[i] = inStride[perm.at(i)];
        return strided("transpose", x, x.type().withShape(perm.apply(s)), src);
    }

    /**
     * {@code x.broadcast(to)} as NumPy broadcasts: x's dims align with the last dims of {@code to},
     * each 1 (expanded) or equal; the leading dims of {@code to} are new axes. A pure copy.
     */
    public static Tensor broadcast(Tensor x, Shape to) {
        Shape s = x.shape();
        check(to.rank() >= s.rank(), "broadcast: " + s + " to " + to + " drops axes");
        int lead = to.rank() - s.rank();
        long[] inStride = s.strides(), src = new long[to.rank()];      // new leading axes: stride 0
        for (int i = 0; i < s.rank(); i++) {
            check(s.dim(i) == 1 || s.dim(i) == to.dim(lead + i), "broadcast: " + s + " does not expand to " + to);
            src[lead + i] = s.dim(i) == 1 ? 0 : inStride[i];
        }
        return strided("broadcast", x, x.type().withShape(to), src);
    }

    /** out[o] = x[Σ o_i · srcStride_i], walking the output row-major with an odometer. */
    private static Tensor strided(String op, Tensor x, TensorType out, long[] srcStride) {
        int n = volume(op, out.shape());
        int r = out.rank();
        long[] dims = out.shape().dims();
        int[] src = new int[n];
        long[] o = new long[r];
        long at = 0;
        for (int f = 0; f < n; f++) {
            src[f] = (int) at;
            for (int i = r - 1; i >= 0; i--) {
                if (++o[i] < dims[i]) { at += srcStride[i]; break; }
                at -= (o[i] - 1) * srcStride[i];
                o[i] = 0;
            }
        }
        return select(x, out, src);
    }

    /** out[f] = x[src[f]] (any dtype); src entries are in range by construction. */
    static Tensor select(Tensor x, TensorType out, int[] src) {
        if (x.isFloating()) {
            double[] a = x.floats(), y = new double[src.length];
            for (int f = 0; f < src.length; f++) y[f] = a[src[f]];
            return make(out, y);
        }
        long[] a = x.ints(), y = new long[src.length];
        for (int f = 0; f < src.length; f++) y[f] = a[src[f]];
        return make(out, y);
    }
}
