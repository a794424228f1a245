package kina.ir;

import java.util.Arrays;

/**
 * An axis permutation for transpose: output axis i is input axis {@code perm[i]}.
 * Validity (a permutation of 0..r-1) is a type rule, checked by kina.check, so a Perm may hold
 * any ints; {@link #inverse()} requires a valid one.
 */
public record Perm(int... axes) {
    public Perm { axes = axes.clone(); }

    public static Perm of(int... axes) { return new Perm(axes); }

    /** The identity on the first r-2 axes that swaps the last two (matmul's VJP transposes with it). */
    public static Perm lastTwo(int rank) {
        int[] p = new int[rank];
        for (int i = 0; i < rank; i++) p[i] = i;
        p[rank - 1] = rank - 2;
        p[rank - 2] = rank - 1;
        return new Perm(p);
    }

    @Override public int[] axes() { return axes.clone(); }

    public int rank() { return axes.length; }

    public int at(int i) { return axes[i]; }

    /** True when the axes are a permutation of 0..rank-1. */
    public boolean valid() {
        boolean[] seen = new boolean[axes.length];
        for (int a : axes) {
            if (a < 0 || a >= axes.length || seen[a]) return false;
            seen[a] = true;
        }
        return true;
    }

    /** π⁻¹ with π⁻¹[π[i]] = i. */
    public Perm inverse() {
        int[] inv = new int[axes.length];
        for (int i = 0; i < axes.length; i++) inv[axes[i]] = i;
        return new Perm(inv);
    }

    /** The shape {@code s} permuted: out[i] = s[perm[i]]. */
    public Shape apply(Shape s) {
        long[] d = new long[axes.length];
        for (int i = 0; i < axes.length; i++) d[i] = s.dim(axes[i]);
        return new Shape(d);
    }

    @Override public boolean equals(Object o) { return o instanceof Perm p && Arrays.equals(axes, p.axes); }

    @Override public int hashCode() { return Arrays.hashCode(axes); }

    @Override public String toString() {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < axes.length; i++) { if (i > 0) b.append(", "); b.append(axes[i]); }
        return b.append(']').toString();
    }
}
