package kina.ad;

import kina.ir.Block;
import kina.ir.Flatten;
import kina.ir.FnScope;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Rhs;

/**
 * The body of a fn to differentiate, flattened ({@link Flatten}) to a let-chain of instructions,
 * which is what the reverse scan walks (nested reverse mode): calls are inlined, and a nested
 * {@code handle h(a, …) with reverseMode} is replaced by the body of h's reverse-mode fn (h's lets
 * and the backward lets transform_ad records for them), so a gradient is differentiated again
 * like any other instructions; a {@code forwardMode} handle likewise by the body of h's
 * forward-mode fn. Both readings flatten the same way, so the oracle and the recorded gradient
 * walk the same lets. A body with nothing to flatten comes back as it is.
 */
public final class Inline {
    private Inline() {}

    /**
     * {@code fn}'s body flattened; the same parameters and result type.
     *
     * @param name  the fn's name, for messages
     * @param scope the fns its body may call or handle
     * @throws AdError when a call's target is not a fn in scope, or two inlined inputs of one name clash
     */
    public static Rhs.Fn flatten(String name, Rhs.Fn fn, FnScope scope) {
        if (flat(fn.body())) return fn;
        Flatten.Flat f = Flatten.block(name, fn.body(), fn.params(), scope, new Flatten.Stage() {
            @Override public Rhs.Fn handle(Let at, Rhs.Handle h, FnScope.Target t) {
                return switch (h.mode()) {
                    case Rhs.Mode.ReverseMode _ -> TransformAd.reverseFn(t.name(), t.fn(), t.scope(), false);
                    case Rhs.Mode.ForwardMode _ -> TransformAd.forwardFn(t.name(), t.fn(), t.scope());
                };
            }

            @Override public RuntimeException refuse(Let at, String message) {
                return at == null ? new IllegalStateException("fn " + name + ": " + message)
                        : new AdError(new Refusal.NotAnAdSpine(message), at.displayName(), at.pos());
            }
        });
        if (f.result().size() != 1)
            throw new IllegalStateException("fn " + name + " returns " + f.result().size() + " values; reverse mode needs one tensor");
        return new Rhs.Fn(fn.params(), fn.result(), new Block(f.lets(), f.result().getFirst(), fn.body().resultPos()));
    }

    /** True when every let is an instruction or a fn (which the scan skips): nothing to flatten. */
    private static boolean flat(Block b) {
        for (Let l : b.lets()) if (!(l.rhs() instanceof Instr || l.rhs() instanceof Rhs.Fn)) return false;
        return true;
    }
}
