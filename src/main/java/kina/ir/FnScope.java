package kina.ir;

/**
 * Where a body finds the fns it calls or handles: the lexical scope, innermost binding first (a fn
 * body may name the fns bound before it, in its block and the enclosing ones). transform_ad reads
 * it off the program's blocks, the oracle off its closures, {@link Flatten} off the blocks it walks.
 */
@FunctionalInterface
public interface FnScope {

    /** A fn in scope: its name, its checked definition, and the scope its own body sees. */
    record Target(String name, Rhs.Fn fn, FnScope scope) {}

    /** The fn bound to {@code f}, or null when none is. */
    Target lookup(Var f);

    /** No fns: a body that calls or handles nothing. */
    FnScope NONE = f -> null;

    /** The fns bound by lets [0, upto) of {@code b}, the latest first, then those of {@code outer}. */
    static FnScope of(Block b, int upto, FnScope outer) {
        return f -> {
            for (int i = upto - 1; i >= 0; i--) {
                Let l = b.lets().get(i);
                if (!l.binders().contains(f)) continue;
                return l.rhs() instanceof Rhs.Fn fn ? new Target(f.name(), fn, of(b, i, outer)) : null;
            }
            return outer.lookup(f);
        };
    }

    /** This scope with {@code f} bound to {@code fn} in front (its body sees this scope). */
    default FnScope with(Var f, Rhs.Fn fn) {
        FnScope before = this;
        Target t = new Target(f.name(), fn, before);
        return g -> g.equals(f) ? t : before.lookup(g);
    }
}
