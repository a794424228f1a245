package kina.mlir;

import kina.ir.KinaException;
import kina.ir.Pos;

/**
 * A refused lowering or native build: an instruction or placement the host lowering cannot
 * express (named, with its let), a missing tool, a failed build, or a native run that cannot check
 * its indices. One line; the CLI prints it and exits 1.
 */
public final class MlirError extends KinaException {
    public MlirError(Pos pos, String message) { super(pos, message); }

    public MlirError(String message) { super(null, message); }
}
