package kina.io;

import kina.ir.KinaException;

/**
 * A model file or directory (GGUF, the Hugging Face layout) that cannot be read, or that holds a
 * model kina cannot represent. One line, {@code <where>: <problem>}, naming the field, tensor or
 * token and its value; no source position.
 */
public final class ModelFileError extends KinaException {
    private final String problem;

    public ModelFileError(String where, String problem) {
        super(null, where + ": " + problem);
        this.problem = problem;
    }

    public ModelFileError(String where, String problem, Throwable cause) {
        super(null, where + ": " + problem, cause);
        this.problem = problem;
    }

    /** The message without the place. */
    public String problem() { return problem; }
}
