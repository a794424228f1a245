package kina.ir;

/**
 * A user-facing error: bad source, bad types, a refused gradient, a run-time trap, a bad file.
 * The CLI prints {@link #oneLine()} and exits 1, with no stack trace. Subclasses live in the
 * stage that raises them (SyntaxError, TypeError, EvalError, AdError, …).
 */
public class KinaException extends RuntimeException {
    private final Pos pos;

    public KinaException(Pos pos, String message) {
        super(message);
        this.pos = pos;
    }

    public KinaException(Pos pos, String message, Throwable cause) {
        super(message, cause);
        this.pos = pos;
    }

    /** Where it happened, or null when no source position applies. */
    public Pos pos() { return pos; }

    /** {@code file:line:col: error: message}, or {@code error: message} without a position. */
    public String oneLine() {
        String m = getMessage().replace('\n', ' ');
        return (pos != null && pos != Pos.NONE ? pos + ": " : "") + "error: " + m;
    }
}
