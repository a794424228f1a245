package kina.eval;

import java.util.Arrays;
import kina.ir.DType;
import kina.ir.Placement;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * A host tensor: a type and a row-major buffer. Floating tensors (F32, F64) keep their elements in
 * a {@code double[]}; an F32 tensor holds only values exactly representable as float, and every
 * F32 kernel rounds each operation's result to float, so F32 arithmetic here is IEEE single
 * precision bit for bit (a double holds a float product exactly, and a single rounding of an exact
 * sum, difference, product or quotient of two floats to float is the float operation). Discrete
 * tensors (I64, I1) keep a {@code long[]} (I1: 0 or 1).
 *
 * <p>Tensors are immutable by convention: kernels never write into an operand's buffer, and the
 * arrays returned by {@link #floats()} / {@link #ints()} must not be modified.
 */
public final class Tensor implements Value {
    private final TensorType type;
    private final double[] floats;
    private final long[] ints;

    private Tensor(TensorType type, double[] floats, long[] ints) {
        this.type = type;
        this.floats = floats;
        this.ints = ints;
    }

    /**
     * A floating tensor over {@code data} (taken, not copied). For F32 the values are rounded to
     * float here. Throws IllegalArgumentException when the dtype is not F32/F64 or the length is
     * not the shape's volume.
     */
    public static Tensor ofFloats(TensorType type, double[] data) {
        if (type.dtype() != DType.F32 && type.dtype() != DType.F64)
            throw new IllegalArgumentException("host runs floating tensors as F32 or F64, not " + type.dtype());
        checkLength(type, data.length);
        if (type.dtype() == DType.F32) for (int i = 0; i < data.length; i++) data[i] = (float) data[i];
        return new Tensor(type, data, null);
    }

    /** A discrete tensor (I64 or I1) over {@code data} (taken, not copied). */
    public static Tensor ofInts(TensorType type, long[] data) {
        if (type.dtype() != DType.I64 && type.dtype() != DType.I1)
            throw new IllegalArgumentException("host runs discrete tensors as I64 or I1, not " + type.dtype());
        checkLength(type, data.length);
        return new Tensor(type, null, data);
    }

    /** A host tensor of shape {@code dims}: a convenience for tests. */
    public static Tensor of(DType dtype, long[] dims, double... data) {
        TensorType t = new TensorType(dtype, new Shape(dims), Placement.HOST);
        if (dtype.floating()) return ofFloats(t, data.clone());
        long[] l = new long[data.length];
        for (int i = 0; i < data.length; i++) l[i] = (long) data[i];
        return ofInts(t, l);
    }

    private static void checkLength(TensorType type, int n) {
        long vol = type.shape().vol();
        if (vol != n) throw new IllegalArgumentException("buffer of " + n + " elements for " + type + " (volume " + vol + ")");
    }

    public TensorType type() { return type; }

    public DType dtype() { return type.dtype(); }

    public Shape shape() { return type.shape(); }

    public boolean isFloating() { return floats != null; }

    /** The floating buffer (do not modify); throws for a discrete tensor. */
    public double[] floats() {
        if (floats == null) throw new IllegalStateException("not a floating tensor: " + type);
        return floats;
    }

    /** The discrete buffer (do not modify); throws for a floating tensor. */
    public long[] ints() {
        if (ints == null) throw new IllegalStateException("not a discrete tensor: " + type);
        return ints;
    }

    public int size() { return floats != null ? floats.length : ints.length; }

    /** Element i (row-major) as a double. */
    public double get(int i) { return floats != null ? floats[i] : ints[i]; }

    /** True when both have the same type and the same raw bits in every element. */
    public boolean bitEquals(Tensor o) {
        if (!type.equals(o.type)) return false;
        if (floats != null) {
            if (o.floats == null) return false;
            for (int i = 0; i < floats.length; i++)
                if (Double.doubleToRawLongBits(floats[i]) != Double.doubleToRawLongBits(o.floats[i])) return false;
            return true;
        }
        return Arrays.equals(ints, o.ints);
    }

    @Override public String toString() {
        String body = floats != null ? Arrays.toString(floats) : Arrays.toString(ints);
        return type + " " + body;
    }
}
