package kina.mlir;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import kina.ir.DType;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.mlir.Mlir.AffineMap;
import kina.mlir.Mlir.BodyFn;
import kina.mlir.Mlir.Ix;
import kina.mlir.Mlir.Operand;
import kina.mlir.Mlir.Reassoc;
import kina.mlir.Mlir.Scalar;
import kina.mlir.Mlir.Val;

/**
 * The row-wise instructions (softmax, the norms, rope, argmax) and the indexing ones of one func.
 * Every instruction that reads by index (gather, take_along_axis, set_rows and the two scatters)
 * first AND-reduces {@code 0 ≤ i < bound} over its indices and {@code cf.assert}s it with the
 * message {@code <op> index out of bounds}. ScatterAdd collapses σ to N and accumulates over a
 * (v, d, n) generic whose n is a reduction iterator (marked {@code kina.scatter}: the schedule runs
 * it as (v, n, d)), or, in the native engine's form ({@link Emitter#emitNative}), a loop over n that
 * adds each update row to its destination row; ScatterAlongAxis selects over the destination.
 */
final class Rows {
    private final Lowering l;
    private final Mlir.Fn f;

    Rows(Lowering l) {
        this.l = l;
        this.f = l.f;
    }

    private String fresh(String stem) { return l.fresh(stem); }

    /** An elementwise map of one tensor into a fresh one of its type. */
    private Val rowsMap(String out, Val x, BodyFn body) { return l.elementwise(out, x.type(), List.of(x), body); }

    /** The first largest along axis, as I64 indices; a NaN counts as the largest and the first one stays. */
    Val argmax(Val x, int axis, TensorType t) {
        int r = x.type().rank();
        TensorType vt = x.type().withShape(x.type().shape().drop(axis));
        Val best = f.filled(vt, Double.NEGATIVE_INFINITY), at = f.filled(t, 0);
        List<Val> vs = f.generic(fresh("argmax"), r, Set.of(axis), List.of(new Operand(x, AffineMap.identity(r))),
                List.of(new Operand(best, AffineMap.drop(r, axis)), new Operand(at, AffineMap.drop(r, axis))), "", (b, a) -> {
                    Scalar accNan = b.cmpf("uno", a.get(1), a.get(1));
                    Scalar vNan = b.cmpf("uno", a.get(0), a.get(0));
                    Scalar gt = b.cmpf("ogt", a.get(0), a.get(1));
                    Scalar better = b.arith("ori", vNan, gt);
                    Scalar take = b.arith("andi", better, b.arith("xori", accNan, b.cst(DType.I1, 1)));
                    Scalar i = b.indexCast(b.index(axis));
                    return List.of(b.select(take, a.get(0), a.get(1)), b.select(take, i, a.get(2)));
                });
        return vs.get(1);
    }

    /** softmax / log_softmax along axis: max, Σ exp(x − max), then the row pass. */
    Val softmax(String out, Val x, int axis, boolean log) {
        DType d = x.type().dtype();
        Val m = l.reduce(fresh("max"), List.of(x), List.of(), axis, d, Double.NEGATIVE_INFINITY,
                (b, a) -> List.of(b.maximumf(a.get(0), a.get(1))));
        Val s = l.reduce(fresh("expsum"), List.of(x), List.of(m), axis, d, 0,
                (b, a) -> List.of(b.accumulate(a.get(2), b.math("exp", b.subf(a.get(0), a.get(1))))));
        if (log) {
            Val ls = rowsMap(fresh("logsum"), s, (b, a) -> List.of(b.math("log", a.getFirst())));
            return l.overRows(out, x.type(), List.of(x), List.of(m, ls), List.of(), axis, (b, a) ->
                    List.of(b.subf(b.subf(a.get(0), a.get(1)), a.get(2))));
        }
        return l.overRows(out, x.type(), List.of(x), List.of(m, s), List.of(), axis, (b, a) ->
                List.of(b.divf(b.math("exp", b.subf(a.get(0), a.get(1))), a.get(2))));
    }

    /** 1 / sqrt(s / n + eps), one per row. */
    private Val inverseRms(String stem, Val s, long n, double eps) {
        DType d = s.type().dtype();
        return rowsMap(fresh(stem), s, (b, a) -> List.of(b.divf(b.cst(d, 1),
                b.math("sqrt", b.add(b.divf(a.getFirst(), b.cst(d, n)), b.cst(d, eps))))));
    }

    Val rmsnorm(String out, Val x, Optional<Val> w, Optional<Val> res, double eps) {
        DType d = x.type().dtype();
        int last = x.type().rank() - 1;
        long dd = x.type().shape().dim(last);
        Val u = res.isPresent() ? l.elementwise(fresh("u"), x.type(), List.of(x, res.get()), (b, a) -> List.of(b.add(a.get(0), a.get(1)))) : x;
        Val ss = l.reduce(fresh("sumsq"), List.of(u), List.of(), last, d, 0, (b, a) -> List.of(b.accumulate(a.get(1), b.mul(a.get(0), a.get(0)))));
        Val q = inverseRms("rms", ss, dd, eps);
        return l.overRows(out, x.type(), List.of(u), List.of(q), w.map(List::of).orElse(List.of()), last, (b, a) -> {
            Scalar y = b.mul(a.get(0), a.get(1));
            return List.of(w.isPresent() ? b.mul(y, a.get(2)) : y);
        });
    }

    Val layernorm(String out, Val x, Optional<Val> w, Optional<Val> bias, double eps) {
        DType d = x.type().dtype();
        int last = x.type().rank() - 1;
        long dd = x.type().shape().dim(last);
        Val s = l.reduce(fresh("sum"), List.of(x), List.of(), last, d, 0, (b, a) -> List.of(b.accumulate(a.get(1), a.get(0))));
        Val mu = rowsMap(fresh("mean"), s, (b, a) -> List.of(b.divf(a.getFirst(), b.cst(d, dd))));
        Val vs = l.reduce(fresh("sumsq"), List.of(x), List.of(mu), last, d, 0, (b, a) -> {
            Scalar dl = b.subf(a.get(0), a.get(1));
            return List.of(b.accumulate(a.get(2), b.mul(dl, dl)));
        });
        Val q = inverseRms("inv", vs, dd, eps);
        List<Val> lanes = new ArrayList<>();
        w.ifPresent(lanes::add);
        bias.ifPresent(lanes::add);
        return l.overRows(out, x.type(), List.of(x), List.of(mu, q), lanes, last, (b, a) -> {
            Scalar y = b.mul(b.subf(a.get(0), a.get(1)), a.get(2));
            if (w.isPresent()) y = b.mul(y, a.get(3));
            if (bias.isPresent()) y = b.add(y, a.get(w.isPresent() ? 4 : 3));
            return List.of(y);
        });
    }

    Val l2norm(String out, Val x, double eps) {
        DType d = x.type().dtype();
        int last = x.type().rank() - 1;
        Val ss = l.reduce(fresh("sumsq"), List.of(x), List.of(), last, d, 0, (b, a) -> List.of(b.accumulate(a.get(1), b.mul(a.get(0), a.get(0)))));
        Val n = rowsMap(fresh("norm"), ss, (b, a) -> List.of(b.math("sqrt", b.add(a.getFirst(), b.cst(d, eps)))));
        return l.overRows(out, x.type(), List.of(x), List.of(n), List.of(), last, (b, a) -> List.of(b.divf(a.get(0), a.get(1))));
    }

    /**
     * Half-split rotation: in head h, for i &lt; R/2, y_i = a·c − b·s and y_{i+R/2} = b·c + a·s with
     * a = x_i, b = x_{i+R/2}, (c, s) row start + t, column i of the tables; the rest copied.
     */
    Val rope(String out, Val x, Val cos, Val sin, int heads, int rotary, int start) {
        int r = x.type().rank();
        long w = x.type().shape().dim(r - 1), hd = w / heads, rot = rotary == 0 ? hd : rotary, half = rot / 2;
        return l.elementwise(out, x.type(), List.of(x), (b, a) -> {
            Scalar self = a.getFirst();
            Scalar t = b.index(r - 2), c = b.index(r - 1);
            Scalar i = b.arith("remui", c, b.cst(hd));
            Scalar lo = b.cmpi("ult", i, b.cst(half));
            Scalar in = b.cmpi("ult", i, b.cst(rot));
            Scalar j = b.select(lo, i, b.arith("subi", i, b.cst(half)));
            j = b.select(in, j, b.cst(0));
            Scalar partner = b.select(lo, b.arith("addi", c, b.cst(half)), b.arith("subi", c, b.cst(half)));
            partner = b.select(in, partner, c);
            Scalar row = b.arith("addi", t, b.cst(start));
            List<Scalar> at = new ArrayList<>();
            for (int k = 0; k < r - 1; k++) at.add(b.index(k));
            at.add(partner);
            Scalar other = b.extract(x, at);
            Scalar cs = b.extract(cos, List.of(row, j));
            Scalar sn = b.extract(sin, List.of(row, j));
            Scalar first = b.subf(b.mul(self, cs), b.mul(other, sn));
            Scalar second = b.add(b.mul(self, cs), b.mul(other, sn));
            Scalar rotated = b.select(lo, first, second);
            return List.of(b.select(in, rotated, self));
        });
    }

    // ---- indexing: a bounds check first, then the read or write

    /** AND-reduces 0 ≤ i &lt; bound over {@code idx} and asserts it: {@code <op> index out of bounds}. */
    private void checked(Val idx, long bound, String op) {
        int r = idx.type().rank();
        Set<Integer> all = new HashSet<>();
        for (int i = 0; i < r; i++) all.add(i);
        TensorType flag = new TensorType(DType.I1, Shape.of(), idx.type().placement());
        Val ok = l.generic(fresh("inbounds"), r, all, List.of(new Operand(idx, AffineMap.identity(r))),
                List.of(new Operand(f.filled(flag, 1), new AffineMap())), (b, a) -> {
                    Scalar ge = b.cmpi("sge", a.get(0), b.cst(DType.I64, 0));
                    Scalar lt = b.cmpi("slt", a.get(0), b.cst(DType.I64, bound));
                    return List.of(b.arith("andi", a.get(1), b.arith("andi", ge, lt)));
                });
        f.check(f.extract(ok, "ok"), op + " index out of bounds");
    }

    Val gather(String out, Val values, Val idx, TensorType t) {
        checked(idx, values.type().shape().dim(0), "gather");
        int r = t.rank();
        return l.generic(out, r, Set.of(), List.of(new Operand(idx, AffineMap.range(0, r - 1))),
                List.of(new Operand(f.empty(t), AffineMap.identity(r))), (b, a) -> {
                    Scalar row = b.indexCast(a.get(0));
                    return List.of(b.extract(values, List.of(row, b.index(r - 1))));
                });
    }

    Val takeAlongAxis(String out, Val values, Val idx, int axis, TensorType t) {
        checked(idx, values.type().shape().dim(axis), "take_along_axis");
        int r = t.rank();
        return l.generic(out, r, Set.of(), List.of(new Operand(idx, AffineMap.identity(r))),
                List.of(new Operand(f.empty(t), AffineMap.identity(r))), (b, a) -> {
                    List<Scalar> at = new ArrayList<>();
                    for (int k = 0; k <= r; k++) at.add(k < axis ? b.index(k) : k == axis ? b.indexCast(a.get(0)) : b.index(k - 1));
                    return List.of(b.extract(values, at));
                });
    }

    /** table with row ids[k] replaced by rows[k]: over (v, d, k), k a reduction that selects. */
    Val setRows(String out, Val table, Val ids, Val rowVals) {
        checked(ids, table.type().shape().dim(0), "set_rows");
        return l.generic(out, 3, Set.of(2), List.of(new Operand(ids, new AffineMap(2)), new Operand(rowVals, new AffineMap(2, 1))),
                List.of(new Operand(table, new AffineMap(0, 1))), (b, a) -> {
                    Scalar v = b.indexCast(b.index(0));
                    Scalar hit = b.cmpi("eq", a.get(0), v);
                    return List.of(b.select(hit, a.get(1), a.get(2)));
                });
    }

    /** Bounds, σ flattened to N, a zero [V, D], out[v, d] += (ids[n] == v) ? upd[n, d] : 0. */
    Val scatterAdd(String out, Val upd, Val idx, TensorType dest) {
        checked(idx, dest.shape().dim(0), "scatter_add");
        int s = idx.type().rank();
        long n = idx.type().shape().vol(), dd = dest.shape().dim(1);
        Val flatIdx = idx, flatUpd = upd;
        if (s >= 2) {
            flatIdx = f.collapse(fresh("collapse"), idx, Reassoc.all(0, s), idx.type().withShape(Shape.of(n)));
            flatUpd = f.collapse(fresh("collapse"), upd, new Reassoc(List.of(Reassoc.all(0, s).groups().getFirst(), List.of(s))),
                    upd.type().withShape(Shape.of(n, dd)));
        }
        if (l.module.rowScatter && s >= 1) return scatterRows(out, flatUpd, flatIdx, dest);
        DType d = dest.dtype();
        l.module.scatters = true;
        // kina.scatter: the schedule interchanges the loops to (v, n, d), so the innermost runs along d
        return f.generic(out, 3, Set.of(2), List.of(new Operand(flatIdx, new AffineMap(2)), new Operand(flatUpd, new AffineMap(2, 1))),
                List.of(new Operand(f.filled(dest, 0), new AffineMap(0, 1))), ", kina.scatter", (b, a) -> {
                    Scalar v = b.indexCast(b.index(0));
                    Scalar hit = b.cmpi("eq", a.get(0), v);
                    Scalar add = b.select(hit, a.get(1), b.cst(d, 0));
                    return List.of(b.add(a.get(2), add));
                }).getFirst();
    }

    /**
     * The same sums as a loop over n (increasing): row ids[n] of a zero destination += updates[n],
     * each row update one pass over D, in place: O(N·D) where the (v, d, n) generic is O(V·N·D).
     */
    private Val scatterRows(String out, Val upd, Val idx, TensorType dest) {
        long n = idx.type().shape().dim(0), dd = dest.shape().dim(1);
        TensorType row = dest.withShape(Shape.of(dd));
        AffineMap id = AffineMap.identity(1);
        return f.loop(out, f.index(0), f.index(n), f.filled(dest, 0), (iv, acc) -> {
            Scalar i = f.toIndex(f.extract(idx, List.of(iv), "id"));
            Val r = f.extractSlice(acc, List.of(i, Ix.of(0)), List.of(1L, dd), row);
            Val u = f.extractSlice(upd, List.of(iv, Ix.of(0)), List.of(1L, dd), row);
            Val sum = l.generic(fresh("row"), 1, Set.of(), List.of(new Operand(u, id)), List.of(new Operand(r, id)),
                    (b, a) -> List.of(b.add(a.get(1), a.get(0))));
            return f.insertSlice(sum, acc, List.of(i, Ix.of(0)), List.of(1L, dd));
        });
    }

    /** Bounds, then over dest σ: (indices == index axis) ? update : 0. */
    Val scatterAlongAxis(String out, int axis, Val upd, Val idx, TensorType dest) {
        checked(idx, dest.shape().dim(axis), "scatter_along_axis");
        int r = dest.rank();
        DType d = dest.dtype();
        return l.generic(out, r, Set.of(), List.of(new Operand(upd, AffineMap.drop(r, axis)), new Operand(idx, AffineMap.drop(r, axis))),
                List.of(new Operand(f.empty(dest), AffineMap.identity(r))), (b, a) -> {
                    Scalar c = b.indexCast(b.index(axis));
                    Scalar hit = b.cmpi("eq", a.get(1), c);
                    return List.of(b.select(hit, a.get(0), b.cst(d, 0)));
                });
    }
}
