package kina.eval;

import static kina.eval.Kernels.check;
import static kina.eval.Kernels.make;
import static kina.eval.Kernels.volume;

import kina.ir.Instr;
import kina.ir.Perm;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * The reference kernels of the layout family ({@link Instr.Layout}): reshape, transpose,
 * broadcast, slice, concat and pad move or copy elements without arithmetic (any dtype).
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

    /**
     * {@code x.slice(axis=k, start=s, size=n)}: y[a ++ [j] ++ b] = x[a ++ [s + j] ++ b] for j &lt; n,
     * a copy; requires 0 ≤ s and s + n ≤ dim k.
     */
    public static Tensor slice(Tensor x, int axis, long start, long size) {
        Shape s = x.shape();
        Kernels.requireAxis("slice", axis, s.rank());
        check(start >= 0 && size >= 0 && start + size <= s.dim(axis),
                "slice: start " + start + " + size " + size + " exceeds axis " + axis + " of size " + s.dim(axis));
        TensorType out = x.type().withShape(s.with(axis, size));
        int outer = Kernels.prod(s, 0, axis), inner = Kernels.prod(s, axis + 1, s.rank()), dim = (int) s.dim(axis);
        int[] src = new int[volume("slice", out.shape())];
        for (int o = 0, f = 0; o < outer; o++)
            for (int j = 0; j < size; j++)
                for (int i = 0; i < inner; i++) src[f++] = (o * dim + (int) start + j) * inner + i;
        return select(x, out, src);
    }

    /**
     * {@code a.concat(b, axis=k)}: along axis k, a's elements then b's; every other dim and the
     * dtype equal.
     */
    public static Tensor concat(Tensor a, Tensor b, int axis) {
        Shape sa = a.shape(), sb = b.shape();
        Kernels.requireAxis("concat", axis, sa.rank());
        check(a.dtype() == b.dtype() && sb.rank() == sa.rank() && sb.with(axis, sa.dim(axis)).equals(sa),
                "concat: " + a.type() + " and " + b.type() + " differ off axis " + axis);
        TensorType out = a.type().withShape(sa.with(axis, sa.dim(axis) + sb.dim(axis)));
        int outer = Kernels.prod(sa, 0, axis), inner = Kernels.prod(sa, axis + 1, sa.rank());
        int ra = (int) sa.dim(axis) * inner, rb = (int) sb.dim(axis) * inner, n = volume("concat", out.shape());
        if (a.isFloating()) {
            double[] y = new double[n];
            for (int o = 0; o < outer; o++) {
                System.arraycopy(a.floats(), o * ra, y, o * (ra + rb), ra);
                System.arraycopy(b.floats(), o * rb, y, o * (ra + rb) + ra, rb);
            }
            return make(out, y);
        }
        long[] y = new long[n];
        for (int o = 0; o < outer; o++) {
            System.arraycopy(a.ints(), o * ra, y, o * (ra + rb), ra);
            System.arraycopy(b.ints(), o * rb, y, o * (ra + rb) + ra, rb);
        }
        return make(out, y);
    }

    /**
     * {@code x.pad(axis=k, before=p, after=q)}: along axis k, p zeros, x, then q zeros (+0.0 for
     * floating dtypes, 0 for discrete ones); p, q ≥ 0.
     */
    public static Tensor pad(Tensor x, int axis, long before, long after) {
        Shape s = x.shape();
        Kernels.requireAxis("pad", axis, s.rank());
        check(before >= 0 && after >= 0, "pad: before " + before + " and after " + after + " must be >= 0");
        TensorType out = x.type().withShape(s.with(axis, s.dim(axis) + before + after));
        int outer = Kernels.prod(s, 0, axis), inner = Kernels.prod(s, axis + 1, s.rank());
        int row = (int) s.dim(axis) * inner, padded = (int) out.shape().dim(axis) * inner, at = (int) before * inner;
        int n = volume("pad", out.shape());
        if (x.isFloating()) {
            double[] y = new double[n];
            for (int o = 0; o < outer; o++) System.arraycopy(x.floats(), o * row, y, o * padded + at, row);
            return make(out, y);
        }
        long[] y = new long[n];
        for (int o = 0; o < outer; o++) System.arraycopy(x.ints(), o * row, y, o * padded + at, row);
        return make(out, y);
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
