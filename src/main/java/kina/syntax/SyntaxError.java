package kina.syntax;

import kina.ir.KinaException;
import kina.ir.Pos;

/**
 * A source text that is not kina: a bad character, an unexpected token ({@code expected ')' but
 * found 'in'}), an unknown method or keyword argument, a negative dim, an IR-internal form.
 * The Pos is the offending token's {@code file:line:col}, 1-based.
 */
public final class SyntaxError extends KinaException {
    public SyntaxError(Pos pos, String message) { super(pos, message); }
}
