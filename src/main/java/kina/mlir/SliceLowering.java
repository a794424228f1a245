package kina.mlir;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import kina.ir.DType;
import kina.ir.TensorType;
import kina.mlir.Mlir.AffineMap;
import kina.mlir.Mlir.Body;
import kina.mlir.Mlir.Operand;
import kina.mlir.Mlir.Scalar;
import kina.mlir.Mlir.Val;

/**
 * slice, concat and pad of one func: each one {@code linalg.generic} over its result whose body
 * reads its operand with {@code tensor.extract} at the position moved along the axis (an index
 * kept in bounds by a select where the element is padding or comes from the other operand), so
 * no strided copy is made (a {@code memref.copy} between strided views would need MLIR's runtime
 * library). Any dtype; exact.
 */
final class SliceLowering {
    private final Lowering l;

    SliceLowering(Lowering l) { this.l = l; }

    /** A generic over t writing {@code element(body, the loop indices)}. */
    private Val over(String out, TensorType t, java.util.function.BiFunction<Body, List<Scalar>, Scalar> element) {
        int r = t.rank();
        return l.generic(out, r, Set.of(), List.of(), List.of(new Operand(l.dest(out, t), AffineMap.identity(r))), (b, a) -> {
            List<Scalar> at = new ArrayList<>();
            for (int i = 0; i < r; i++) at.add(b.index(i));
            return List.of(element.apply(b, at));
        });
    }

    /** {@code at} with entry {@code axis} replaced by {@code v}. */
    private static List<Scalar> with(List<Scalar> at, int axis, Scalar v) {
        List<Scalar> o = new ArrayList<>(at);
        o.set(axis, v);
        return o;
    }

    /** {@code x.slice(axis=k, start=s, size=n)} of type t: y[… j …] = x[… s + j …]. */
    Val slice(String out, Val x, int axis, long start, TensorType t) {
        return over(out, t, (b, at) -> b.extract(x, with(at, axis, b.add(at.get(axis), b.cst(start)))));
    }

    /** {@code a.concat(b, axis=k)} of type t: a where the axis index is below a's dim, else b at that index minus it. */
    Val concat(String out, Val a, Val c, int axis, TensorType t) {
        long da = a.type().shape().dim(axis);
        if (da == 0 || c.type().shape().dim(axis) == 0) return slice(out, da == 0 ? c : a, axis, 0, t);   // never read an empty operand
        return over(out, t, (b, at) -> {
            Scalar j = at.get(axis), zero = b.cst(0), inA = b.cmpi("ult", j, b.cst(da));
            Scalar fromA = b.extract(a, with(at, axis, b.select(inA, j, zero)));
            Scalar fromB = b.extract(c, with(at, axis, b.select(inA, zero, b.arith("subi", j, b.cst(da)))));
            return b.select(inA, fromA, fromB);
        });
    }

    /** {@code x.pad(axis=k, before=p, after=q)} of type t: x[… j − p …] where p ≤ j &lt; p + dim, else 0. */
    Val pad(String out, Val x, int axis, long before, TensorType t) {
        long dim = x.type().shape().dim(axis);
        DType d = t.dtype();
        if (dim == 0) return l.f.fillInto(out, l.dest(out, t), 0.0);               // all padding: never read x
        return over(out, t, (b, at) -> {
            Scalar j = b.arith("subi", at.get(axis), b.cst(before));          // wraps below 0: then ≥ dim unsigned
            Scalar in = b.cmpi("ult", j, b.cst(dim));
            Scalar v = b.extract(x, with(at, axis, b.select(in, j, b.cst(0))));
            return b.select(in, v, b.cst(d, 0.0));
        });
    }
}
