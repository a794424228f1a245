package kina.ad;

import static kina.ad.Pullback.flow;
import static kina.ad.Pullback.refuse;
import static kina.ad.Pullback.valuesOnly;

import kina.ir.Instr;
import kina.ir.Instr.*;
import kina.ir.Perm;
import kina.ir.Placement;
import kina.ir.Shape;

/**
 * Every VJP rule of kina, in one switch over {@link Instr}, families in Instr's order.
 * {@code g} is the cotangent of the output {@code y}; each case answers one cotangent per operand
 * (DESIGN §3, seeds Sections 10 and 14, spec-notes §4). Rules are pure: the reverse scan seeds,
 * skips and accumulates. Every instruction a rule emits has a rule here (closure under adjoints).
 */
public final class Vjp {
    private Vjp() {}

    public static <T> Pullback<T> of(Instr ins, Primals<T> p, T y, T g, Ops<T> o) {
        return switch (ins) {
            // constants: no operands
            case Input _, Literal _, Fill _ -> flow();
            // unary
            case Neg _ -> flow(o.neg(g));                                   // §10 §4: g_a = −g
            case Exp _ -> flow(o.mul(g, y));                                // reads its output
            case Log(var x) -> flow(o.div(g, p.of(x)));
            // binary
            case Add _ -> flow(g, g);
            case Sub _ -> flow(g, o.neg(g));
            case Mul(var a, var b) -> flow(o.mul(g, p.of(b)), o.mul(g, p.of(a)));
            case Div(var a, var b) -> {                                     // y = a / b
                T ga = o.div(g, p.of(b));
                T gb = o.neg(o.div(o.mul(g, y), p.of(b)));                  // −g·a/b² = −(g·y)/b
                yield flow(ga, gb);
            }
            // contraction (§14 §5): g_a = g @ bᵀ, g_b = aᵀ @ g with transpose_last_two
            case Matmul(var a, var b) -> {
                Perm t = Perm.lastTwo(p.type(a).rank());
                T ga = o.matmul(g, o.transpose(p.of(b), t));
                T gb = o.matmul(o.transpose(p.of(a), t), g);
                yield flow(ga, gb);
            }
            // shape
            case Reshape(var x, _) -> flow(o.reshape(g, p.type(x).shape()));   // §14 §4
            case Transpose(_, var perm) -> flow(o.transpose(g, perm.inverse()));
            case Broadcast(var x, _) -> flow(sumTo(o, g, p.type(x).shape()));
            // reduction
            case Sum(var x, var axis, var keepDims) -> {
                Shape xs = p.type(x).shape();
                T gk = keepDims ? g : o.reshape(g, xs.with(axis, 1));
                yield flow(o.broadcast(gk, xs));
            }
            // fused row-wise
            case LogSoftmax(var x, var axis) -> {                           // §10 §5
                T s = o.exp(y);
                T total = o.broadcast(o.sum(g, axis, true), p.type(x).shape());
                yield flow(o.sub(g, o.mul(total, s)));
            }
            case Softmax(var x, var axis) -> {                              // y ⊙ (g − Σ g⊙y)
                T dot = o.broadcast(o.sum(o.mul(g, y), axis, true), p.type(x).shape());
                yield flow(o.mul(y, o.sub(g, dot)));
            }
            // indexing (§10 §6, §14 §6): indices are data, they get nothing
            case TakeAlongAxis(var values, var ids, var axis) ->
                    device(p.type(values).placement())
                            ? refuse(new Refusal.Unavailable("scatter_along_axis: checked device lowering is not available"))
                            : valuesOnly(o.scatterAlongAxis(axis, g, p.of(ids), p.type(values)));
            case Gather(var values, var ids) ->
                    device(p.type(values).placement())
                            ? refuse(new Refusal.Unavailable("scatter_add: checked device lowering is not available"))
                            : valuesOnly(o.scatterAdd(g, p.of(ids), p.type(values)));
            // IR-internal adjoints: closure (gather ↔ scatter_add, take_along_axis ↔ scatter_along_axis)
            case ScatterAdd(_, var ids, _) -> valuesOnly(o.gather(g, p.of(ids)));
            case ScatterAlongAxis(var axis, _, var ids, _) -> valuesOnly(o.takeAlongAxis(g, p.of(ids), axis));
        };
    }

    /** Σ of g over every axis where {@code to} has 1 and g does not, keepdims, in increasing axis. */
    static <T> T sumTo(Ops<T> o, T g, Shape to) {
        Shape gs = o.type(g).shape();
        T acc = g;
        for (int ax = 0; ax < to.rank(); ax++)
            if (to.dim(ax) == 1 && gs.dim(ax) != 1) acc = o.sum(acc, ax, true);
        return acc;
    }

    private static boolean device(Placement pl) { return pl == Placement.DEVICE; }
}
