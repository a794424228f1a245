package kina.eval;

import java.nio.file.Path;
import kina.ir.KinaException;

/**
 * A tensor file that cannot be read or written: missing, empty, not the format, truncated, an
 * unsupported dtype or layout, or a dtype / shape other than the program declares. One line,
 * {@code <file>: <problem>}; no source position.
 */
public final class FileFormatError extends KinaException {
    public FileFormatError(Path file, String problem) {
        super(null, file + ": " + problem);
    }

    public FileFormatError(Path file, String problem, Throwable cause) {
        super(null, file + ": " + problem, cause);
    }
}
