package kina.check;

import kina.check.TypeRules.Mismatch;
import kina.ir.DType;
import kina.ir.TensorType;

/**
 * The type rules of slice, concat and pad (the layout instructions that cut and join along an
 * axis) and of the random family, for {@link TypeRules#infer}: docs/language.md, "Layout" and
 * "Random". Each bound that fails is a {@link Mismatch} naming the axis and the sizes.
 */
final class SliceRules {
    private SliceRules() {}

    /** x σ, 0 ≤ start, size ≥ 0, start + size ≤ σ[axis] → σ with σ[axis] = size. */
    static TensorType slice(String op, TensorType x, int axis, long start, long size) {
        TypeRules.axis(op, x, axis);
        long d = x.shape().dim(axis);
        if (start < 0 || size < 0 || start > d || size > d - start)
            throw new Mismatch(op, "start " + start + " + size " + size + " exceeds axis " + axis + " of size " + d + " in " + x
                    + (start < 0 || size < 0 ? " (start and size must be >= 0)" : ""));
        return x.withShape(x.shape().with(axis, size));
    }

    /** a, b of one dtype, placement and rank, equal off the axis → the axis's dims added. */
    static TensorType concat(String op, TensorType a, TensorType b, int axis) {
        TypeRules.axis(op, a, axis);
        if (b.dtype() != a.dtype() || b.placement() != a.placement() || b.rank() != a.rank()
                || !b.shape().with(axis, a.shape().dim(axis)).equals(a.shape()))
            throw new Mismatch(op, "operands must agree in dtype, placement and every dim but axis " + axis + ": " + a + ", " + b);
        try {
            TensorType t = a.withShape(a.shape().with(axis, Math.addExact(a.shape().dim(axis), b.shape().dim(axis))));
            TypeRules.volume(op, t.shape());
            return t;
        } catch (ArithmeticException e) {
            throw new Mismatch(op, "the joined axis " + axis + " of " + a + " and " + b + " overflows");
        }
    }

    /** x σ, before, after ≥ 0 → σ with σ[axis] + before + after. */
    static TensorType pad(String op, TensorType x, int axis, long before, long after) {
        TypeRules.axis(op, x, axis);
        if (before < 0 || after < 0)
            throw new Mismatch(op, "before " + before + " and after " + after + " must be >= 0 (axis " + axis + " of " + x + ")");
        try {
            TensorType t = x.withShape(x.shape().with(axis, Math.addExact(x.shape().dim(axis), Math.addExact(before, after))));
            TypeRules.volume(op, t.shape());
            return t;
        } catch (ArithmeticException e) {
            throw new Mismatch(op, "the padded axis " + axis + " of " + x + " overflows");
        }
    }

    /** The key I64 [1] or [2] of a random instruction, of t's placement; t F32 or F64 → t. */
    static TensorType random(String op, TensorType key, TensorType t) {
        if (key.dtype() != DType.I64 || key.rank() != 1 || key.shape().dim(0) < 1 || key.shape().dim(0) > 2)
            throw new Mismatch(op, "the key must be I64 [1] or [2] (key, stream), got " + key);
        if (t.dtype() != DType.F32 && t.dtype() != DType.F64) throw new Mismatch(op, "makes F32 or F64, not " + t);
        if (key.placement() != t.placement()) throw new Mismatch(op, "placements differ: key " + key + ", " + t);
        TypeRules.volume(op, t.shape());
        return t;
    }

    /** x F32 or F64, the key as {@link #random}, 0 ≤ p &lt; 1 → x's type. */
    static TensorType dropout(String op, TensorType x, TensorType key, double p) {
        if (!(p >= 0 && p < 1)) throw new Mismatch(op, "p must be in [0, 1), got " + TypeRules.fmt(p));
        if (x.dtype() != DType.F32 && x.dtype() != DType.F64) throw new Mismatch(op, "x must be F32 or F64, got " + x);
        return random(op, key, x);
    }
}
