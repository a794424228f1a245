package kina.io;

import java.nio.file.Path;
import kina.ir.KinaException;

/**
 * A file that cannot be read or written: missing, empty, over the size cap ({@link FileCap}), not
 * the format, truncated, an unsupported dtype or layout, a dtype / shape other than the program
 * declares, or a write the file system refuses. One line, {@code <file>: <problem>}; no source
 * position.
 */
public final class FileFormatError extends KinaException {
    private final transient Path file;
    private final String problem;

    /** {@code file: problem}. */
    public FileFormatError(Path file, String problem) {
        super(null, file + ": " + problem);
        this.file = file;
        this.problem = problem;
    }

    /** {@code file: problem}, caused by {@code cause} (shown with --debug). */
    public FileFormatError(Path file, String problem, Throwable cause) {
        super(null, file + ": " + problem, cause);
        this.file = file;
        this.problem = problem;
    }

    /** The file the error is about. */
    public Path file() { return file; }

    /** The problem, without the file's name. */
    public String problem() { return problem; }
}
