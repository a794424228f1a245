package kina.check;

import kina.ir.KinaException;
import kina.ir.Let;
import kina.ir.Pos;

/**
 * A program that breaks a type or scoping rule. The message reads
 * {@code let <name>: <op>: <what>}, with the types involved, e.g.
 * {@code let c: matmul: inner dims differ: tensor<F32, [2, 3], @host> @ tensor<F32, [4, 5], @host> (K = 3 vs 4)};
 * the position is the let's. A temporary let (a nested sub-expression) is reported under the user
 * let it belongs to.
 */
public final class TypeError extends KinaException {

    public TypeError(Pos pos, String message) { super(pos, message); }

    /** {@code let <name>: <op>: <what>} at the let's position. */
    public static TypeError at(Let let, String op, String what) {
        return new TypeError(let.pos(), "let " + name(let) + ": " + op + ": " + what);
    }

    /** The name a message uses for {@code let}: its owner for a temporary, {@code (a, b)} for a pattern. */
    static String name(Let let) {
        if (let.owner() != null) return let.owner();
        if (!let.destructure()) return let.var().name();
        StringBuilder b = new StringBuilder("(");
        for (int i = 0; i < let.binders().size(); i++) b.append(i > 0 ? ", " : "").append(let.binders().get(i).name());
        return b.append(')').toString();
    }
}
