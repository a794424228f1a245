package kina.model;

import java.nio.file.Path;
import kina.ir.KinaException;

/**
 * A checkpoint that cannot be read or written: a missing directory or file, a truncated or foreign
 * safetensors file, corrupt JSON, tensors missing or of the wrong shape, a wrong format version.
 * One line, {@code <path>: <problem>}; no source position.
 */
public final class CheckpointError extends KinaException {
    public CheckpointError(Path where, String problem) {
        super(null, where + ": " + problem);
    }

    public CheckpointError(Path where, String problem, Throwable cause) {
        super(null, where + ": " + problem, cause);
    }
}
