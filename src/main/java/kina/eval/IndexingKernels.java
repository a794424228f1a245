package kina.eval;

import static kina.eval.Kernels.check;
import static kina.eval.Kernels.checkAll;
import static kina.eval.Kernels.make;
import static kina.eval.Kernels.prod;
import static kina.eval.Kernels.requireAxis;
import static kina.eval.Kernels.requireFloating;
import static kina.eval.Kernels.requireHost;
import static kina.eval.Kernels.requireIndices;
import static kina.eval.Kernels.round;
import static kina.eval.Kernels.volume;

import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * The reference kernels of the indexing family ({@link Instr.Indexing}): reads and writes by I64
 * indices, every index checked before any output is written (a bad one is an {@link EvalError}
 * naming it).
 */
public final class IndexingKernels {
    private IndexingKernels() {}

    // ---- indexing -----------------------------------------------------------------------------------

    /**
     * {@code values.take_along_axis(indices, axis)}: values α++[C]++β, I64 indices α++β (the axis
     * dropped) → α++β; out[a ++ b] = values[a ++ [indices[a ++ b]] ++ b]. Every index is checked
     * against [0, C) first: {@code take_along_axis index out of bounds: indices[…] = v, not in [0, C)}.
     * A pure copy (no arithmetic).
     */
    public static Tensor takeAlongAxis(Tensor values, Tensor indices, int axis) {
        Shape s = values.shape();
        requireAxis("take_along_axis", axis, s.rank());
        requireIndices("take_along_axis", indices);
        check(indices.shape().equals(s.drop(axis)),
                "take_along_axis: indices " + indices.shape() + " must be values " + s + " without axis " + axis);
        int outer = prod(s, 0, axis), c = (int) s.dim(axis), inner = prod(s, axis + 1, s.rank());
        checkAll("take_along_axis", indices, c);
        int[] src = new int[outer * inner];
        long[] idx = indices.ints();
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                int f = o * inner + i;
                src[f] = (int) ((o * (long) c + idx[f]) * inner + i);
            }
        return LayoutKernels.select(values, values.type().withShape(s.drop(axis)), src);
    }

    /**
     * {@code values.gather(indices)}: values [V, D], I64 indices σ → σ++[D];
     * y[i ++ [d]] = values[indices[i], d]. Every index is checked against [0, V) first:
     * {@code gather index out of bounds: indices[…] = v, not in [0, V)}. A pure copy.
     */
    public static Tensor gather(Tensor values, Tensor indices) {
        Shape s = values.shape();
        check(s.rank() == 2, "gather: values must be rank 2 [V, D], not " + s);
        requireIndices("gather", indices);
        long v = s.dim(0);
        int dd = (int) s.dim(1);
        checkAll("gather", indices, v);
        TensorType out = values.type().withShape(indices.shape().concat(dd));
        int n = volume("gather", out.shape());
        int[] src = new int[n];
        long[] idx = indices.ints();
        for (int i = 0; i < idx.length; i++)
            for (int d = 0; d < dd; d++) src[i * dd + d] = (int) idx[i] * dd + d;
        return LayoutKernels.select(values, out, src);
    }

    /**
     * {@code table.set_rows(ids, rows)}: a copy of table [V, D] with row ids[k] replaced by rows[k]
     * (no arithmetic). Every id is checked against [0, V) first, and ids must be distinct:
     * {@code set_rows index out of bounds: …}, {@code set_rows: duplicate index v at ids[k]}.
     */
    public static Tensor setRows(Tensor table, Tensor ids, Tensor rows) {
        requireFloating("set_rows", table);
        requireIndices("set_rows", ids);
        Shape s = table.shape();
        check(s.rank() == 2 && ids.shape().rank() == 1
                && rows.type().equals(table.type().withShape(Shape.of(ids.shape().dim(0), s.dim(1)))),
                "set_rows: table " + table.type() + ", ids " + ids.type() + ", rows " + rows.type());
        checkAll("set_rows", ids, s.dim(0));
        long[] idx = ids.ints();
        java.util.Set<Long> seen = new java.util.HashSet<>();
        for (int i = 0; i < idx.length; i++)
            check(seen.add(idx[i]), "set_rows: duplicate index " + idx[i] + " at ids[" + i + "]");
        int dd = (int) s.dim(1);
        double[] y = table.floats().clone(), r = rows.floats();
        for (int i = 0; i < idx.length; i++) System.arraycopy(r, i * dd, y, (int) idx[i] * dd, dd);
        return make(table.type(), y);
    }

    /**
     * ScatterAdd(updates σ++[D], I64 indices σ, dest [V, D]) → dest. Order: out starts +0.0
     * everywhere; for each position i of σ in row-major order, for d in increasing order,
     * out[idx[i], d] = r(out[idx[i], d] + updates[i ++ [d]]). Duplicates accumulate in that order;
     * unselected rows stay +0.0. Every index is checked against [0, V) first:
     * {@code scatter_add index out of bounds: indices[…] = v, not in [0, V)}.
     */
    public static Tensor scatterAdd(Tensor updates, Tensor indices, TensorType dest) {
        requireHost("scatter_add", dest);
        requireIndices("scatter_add", indices);
        Shape ds = dest.shape();
        check(ds.rank() == 2, "scatter_add: dest must be rank 2 [V, D], not " + ds);
        check(updates.dtype() == dest.dtype(), "scatter_add: updates " + updates.dtype() + " for dest " + dest.dtype());
        int dd = (int) ds.dim(1);
        check(updates.shape().equals(indices.shape().concat(dd)),
                "scatter_add: updates " + updates.shape() + " must be indices " + indices.shape() + " ++ [" + dd + "]");
        checkAll("scatter_add", indices, ds.dim(0));
        int n = volume("scatter_add", ds);
        long[] idx = indices.ints();
        if (!updates.isFloating()) {
            long[] u = updates.ints(), y = new long[n];
            for (int i = 0; i < idx.length; i++)
                for (int d = 0; d < dd; d++) y[(int) idx[i] * dd + d] += u[i * dd + d];
            return make(dest, y);
        }
        DType dt = dest.dtype();
        double[] u = updates.floats(), y = new double[n];
        for (int i = 0; i < idx.length; i++) {
            int row = (int) idx[i] * dd;
            for (int d = 0; d < dd; d++) y[row + d] = round(dt, y[row + d] + u[i * dd + d]);
        }
        return make(dest, y);
    }

    /**
     * ScatterAlongAxis(axis, updates α++β, I64 indices α++β, dest α++[C]++β) → dest, a select:
     * out[a ++ [c] ++ b] = updates[a ++ b] if indices[a ++ b] == c, else +0.0 (no arithmetic).
     * Every index is checked against [0, C) first:
     * {@code scatter_along_axis index out of bounds: indices[…] = v, not in [0, C)}.
     */
    public static Tensor scatterAlongAxis(int axis, Tensor updates, Tensor indices, TensorType dest) {
        requireHost("scatter_along_axis", dest);
        requireIndices("scatter_along_axis", indices);
        Shape ds = dest.shape();
        requireAxis("scatter_along_axis", axis, ds.rank());
        check(updates.dtype() == dest.dtype(),
                "scatter_along_axis: updates " + updates.dtype() + " for dest " + dest.dtype());
        check(updates.shape().equals(ds.drop(axis)) && indices.shape().equals(ds.drop(axis)),
                "scatter_along_axis: updates " + updates.shape() + " and indices " + indices.shape()
                        + " must be dest " + ds + " without axis " + axis);
        int outer = prod(ds, 0, axis), c = (int) ds.dim(axis), inner = prod(ds, axis + 1, ds.rank());
        checkAll("scatter_along_axis", indices, c);
        int n = volume("scatter_along_axis", ds);
        long[] idx = indices.ints();
        if (!updates.isFloating()) {
            long[] u = updates.ints(), y = new long[n];
            for (int o = 0; o < outer; o++)
                for (int i = 0; i < inner; i++) {
                    int f = o * inner + i;
                    y[(int) ((o * (long) c + idx[f]) * inner + i)] = u[f];
                }
            return make(dest, y);
        }
        double[] u = updates.floats(), y = new double[n];
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                int f = o * inner + i;
                y[(int) ((o * (long) c + idx[f]) * inner + i)] = u[f];
            }
        return make(dest, y);
    }
}
