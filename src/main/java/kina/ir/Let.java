package kina.ir;

import java.util.List;

/**
 * One binding of a let-chain: {@code let x = rhs in} or, destructuring a tuple,
 * {@code let (a, b, …) = rhs in}.
 *
 * @param binders   the bound names; more than one, or {@code destructure}, for a tuple pattern
 * @param destructure true when written {@code let ( … ) =}
 * @param rhs       the bound expression (children are Vars)
 * @param pos       where the let (or, for a temporary, the sub-expression) starts
 * @param owner     the user let a temporary belongs to (its name, or {@code "result"}); null for a
 *                  let the user wrote
 * @param type      the type found by kina.check; null before checking
 */
public record Let(List<Var> binders, boolean destructure, Rhs rhs, Pos pos, String owner, Type type) {
    public Let {
        binders = List.copyOf(binders);
        if (binders.isEmpty()) throw new IllegalArgumentException("let binds nothing");
        if (!destructure && binders.size() != 1) throw new IllegalArgumentException("plain let binds one name");
    }

    /** A plain user let {@code let v = rhs in}, untyped. */
    public static Let of(Var v, Rhs rhs, Pos pos) { return new Let(List.of(v), false, rhs, pos, null, null); }

    /** A plain let with a known type (e.g. emitted by transform_ad). */
    public static Let typed(Var v, Rhs rhs, Type type) { return new Let(List.of(v), false, rhs, Pos.NONE, null, type); }

    /** The single bound name of a plain let. */
    public Var var() {
        if (destructure) throw new IllegalStateException("destructuring let has no single var");
        return binders.getFirst();
    }

    /** The values the let reads: {@link Rhs#reads()} of its right-hand side. */
    public List<Var> reads() { return rhs.reads(); }

    /** The name used in error messages: the user let this belongs to. */
    public String displayName() {
        if (owner != null) return owner;
        return destructure ? binders.toString() : binders.getFirst().name();
    }

    public boolean temporary() { return owner != null; }

    public Let withType(Type t) { return new Let(binders, destructure, rhs, pos, owner, t); }

    public Let withRhs(Rhs r) { return new Let(binders, destructure, r, pos, owner, type); }

    /** The tensor type of a plain let; throws if unchecked or not a tensor. */
    public TensorType tensorType() {
        if (type instanceof TensorType t) return t;
        throw new IllegalStateException("let " + displayName() + " has no tensor type (" + type + ")");
    }
}
