package kina.ir;

/**
 * A user-facing error: bad source, bad types, a refused gradient, a run-time trap, a bad file.
 * The CLI prints {@link #oneLine()} and exits 1, with no stack trace. Subclasses live in the
 * stage that raises them (SyntaxError, TypeError, EvalError, AdError, …).
 */
public class KinaException extends RuntimeException {
    private final Pos pos;

    public KinaException(Pos pos, String message) {
        super(shorten(message));
        this.pos = pos;
    }

    public KinaException(Pos pos, String message, Throwable cause) {
        super(shorten(message), cause);
        this.pos = pos;
    }

    /** Names and numbers longer than this are shortened in messages, so an error stays one readable line. */
    public static final int MAX_WORD = 64;

    /** {@code message} with each word (letters, digits, '_') longer than {@link #MAX_WORD} cut to its start and its length. */
    static String shorten(String message) {
        if (message == null || message.length() <= MAX_WORD) return message;
        StringBuilder b = new StringBuilder(Math.min(message.length(), 4096));
        int i = 0, n = message.length();
        while (i < n) {
            int j = i;
            while (j < n && (Character.isLetterOrDigit(message.charAt(j)) || message.charAt(j) == '_')) j++;
            if (j - i > MAX_WORD) {
                b.append(message, i, i + MAX_WORD / 2).append("…(").append(j - i).append(" characters)");
                i = j;
            } else if (j > i) {
                b.append(message, i, j);
                i = j;
            } else {
                b.append(message.charAt(i++));
            }
        }
        return b.toString();
    }

    /** Where it happened, or null when no source position applies. */
    public Pos pos() { return pos; }

    /** {@code file:line:col: error: message}, or {@code error: message} without a position. */
    public String oneLine() {
        String m = getMessage().replace('\n', ' ');
        return (pos != null && pos != Pos.NONE ? pos + ": " : "") + "error: " + m;
    }
}
