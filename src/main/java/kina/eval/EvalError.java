package kina.eval;

import kina.ir.KinaException;
import kina.ir.Let;
import kina.ir.Pos;

/**
 * A run-time error of the host interpreter or one of its kernels: an index out of bounds, a
 * missing or mistyped input, a refused dtype or placement, an unavailable reverse mode.
 *
 * <p>A kernel throws it unlocated, with only the detail (e.g. {@code scatter_add index out of
 * bounds: indices[0, 3] = 8, not in [0, 8)}); the interpreter then locates it at the let being
 * run ({@link #at(Let)}): the message becomes {@code let x: <detail>} and the position the let's.
 * An error raised inside a called fn is located at the innermost let and is not relocated.
 */
public final class EvalError extends KinaException {
    private final String let;
    private final String detail;

    /** An unlocated error (thrown by kernels and by calls made through the Java API). */
    public EvalError(String detail) {
        super(null, detail);
        this.let = null;
        this.detail = detail;
    }

    private EvalError(Pos pos, String let, String detail, EvalError cause) {
        super(pos, "let " + let + ": " + detail, cause);
        this.let = let;
        this.detail = detail;
    }

    /** This error located at {@code l} (its display name and position); itself if already located. */
    public EvalError at(Let l) {
        return located() ? this : new EvalError(l.pos(), l.displayName(), detail, this);
    }

    /** True once the interpreter has attached a let. */
    public boolean located() { return let != null; }

    /** The display name of the let it was located at, or null. */
    public String let() { return let; }

    /** The message without the {@code let x: } prefix (what the kernel said). */
    public String detail() { return detail; }
}
