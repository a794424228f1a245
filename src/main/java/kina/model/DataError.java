package kina.model;

import kina.ir.KinaException;

/**
 * A training text that cannot be used: missing, empty, binary, not UTF-8, too large, or too short
 * for the sequence length. One line, {@code <source>: <problem>}; no source position.
 */
public final class DataError extends KinaException {
    public DataError(String source, String problem) {
        super(null, source + ": " + problem);
    }

    public DataError(String source, String problem, Throwable cause) {
        super(null, source + ": " + problem, cause);
    }
}
