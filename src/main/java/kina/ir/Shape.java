package kina.ir;

import java.util.Arrays;

/**
 * A static shape: a list of non-negative dims, row-major. Equality is structural.
 * The array is copied in and out, so a Shape is a value.
 */
public record Shape(long... dims) {
    public Shape {
        dims = dims.clone();
        for (long d : dims) if (d < 0) throw new IllegalArgumentException("negative dim " + d + " in " + Arrays.toString(dims));
    }

    public static Shape of(long... dims) { return new Shape(dims); }

    public static Shape scalarLike(int rank) {
        long[] d = new long[rank];
        Arrays.fill(d, 1);
        return new Shape(d);
    }

    @Override public long[] dims() { return dims.clone(); }

    public int rank() { return dims.length; }

    public long dim(int i) { return dims[i]; }

    /** The number of elements, Π dims (1 for rank 0); throws ArithmeticException on overflow. */
    public long vol() {
        long v = 1;
        for (long d : dims) v = Math.multiplyExact(v, d);
        return v;
    }

    /** Row-major strides, in elements. */
    public long[] strides() {
        long[] s = new long[dims.length];
        long acc = 1;
        for (int i = dims.length - 1; i >= 0; i--) { s[i] = acc; acc *= dims[i]; }
        return s;
    }

    /** This shape with the dim at {@code axis} removed. */
    public Shape drop(int axis) {
        long[] d = new long[dims.length - 1];
        for (int i = 0, j = 0; i < dims.length; i++) if (i != axis) d[j++] = dims[i];
        return new Shape(d);
    }

    /** This shape with {@code dim} inserted at {@code axis}. */
    public Shape insert(int axis, long dim) {
        long[] d = new long[dims.length + 1];
        for (int i = 0, j = 0; i < d.length; i++) d[i] = (i == axis) ? dim : dims[j++];
        return new Shape(d);
    }

    /** This shape with the dim at {@code axis} replaced by {@code dim}. */
    public Shape with(int axis, long dim) {
        long[] d = dims.clone();
        d[axis] = dim;
        return new Shape(d);
    }

    /** This shape followed by {@code more}. */
    public Shape concat(long... more) {
        long[] d = Arrays.copyOf(dims, dims.length + more.length);
        System.arraycopy(more, 0, d, dims.length, more.length);
        return new Shape(d);
    }

    /** The first {@code n} dims. */
    public Shape prefix(int n) { return new Shape(Arrays.copyOf(dims, n)); }

    @Override public boolean equals(Object o) { return o instanceof Shape s && Arrays.equals(dims, s.dims); }

    @Override public int hashCode() { return Arrays.hashCode(dims); }

    /** Prints as the surface writes it: {@code [1, 4, 8]}. */
    @Override public String toString() {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < dims.length; i++) { if (i > 0) b.append(", "); b.append(dims[i]); }
        return b.append(']').toString();
    }
}
