package kina.cli;

import kina.eval.Tensor;

/** Prints a tensor as nested brackets; large tensors (more than 256 elements) in summary. */
final class Show {
    private Show() {}

    static final int FULL_LIMIT = 256;

    static String format(Tensor t, boolean full) {
        int n = t.size();
        if (n <= FULL_LIMIT || full) {
            StringBuilder b = new StringBuilder();
            nest(t, 0, 0, b, "");
            return b.toString();
        }
        double min = Double.POSITIVE_INFINITY, max = Double.NEGATIVE_INFINITY, sum = 0;
        int nonFinite = 0;
        for (int i = 0; i < n; i++) {
            double v = t.get(i);
            if (!Double.isFinite(v)) { nonFinite++; continue; }
            min = Math.min(min, v); max = Math.max(max, v); sum += v;
        }
        StringBuilder b = new StringBuilder("  ").append(n).append(" elements; first: [");
        for (int i = 0; i < 8; i++) b.append(i > 0 ? ", " : "").append(num(t, i));
        b.append(", …]; min ").append(min).append(", max ").append(max).append(", mean ").append(sum / Math.max(1, n - nonFinite));
        if (nonFinite > 0) b.append(", ").append(nonFinite).append(" non-finite");
        return b.append("  (--full prints all)").toString();
    }

    private static void nest(Tensor t, int axis, int offset, StringBuilder b, String indent) {
        long[] dims = t.shape().dims();
        if (dims.length == 0) { b.append(num(t, offset)); return; }
        long stride = 1;
        for (int i = axis + 1; i < dims.length; i++) stride *= dims[i];
        b.append('[');
        for (int i = 0; i < dims[axis]; i++) {
            if (i > 0) b.append(axis == dims.length - 1 ? ", " : ",\n" + indent + " ");
            if (axis == dims.length - 1) b.append(num(t, offset + i));
            else nest(t, axis + 1, (int) (offset + i * stride), b, indent + " ");
        }
        b.append(']');
    }

    private static String num(Tensor t, int i) {
        if (!t.isFloating()) return Long.toString(t.ints()[i]);
        double v = t.floats()[i];
        return t.dtype() == kina.ir.DType.F32 ? Float.toString((float) v) : Double.toString(v);
    }
}
