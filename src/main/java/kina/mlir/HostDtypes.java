package kina.mlir;

import kina.ir.Block;
import kina.ir.Let;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Type;

/**
 * The dtypes the host lowering keeps: F32, F64, I64 and I1, the buffers the native engine passes
 * through the FFM API. BF16, F16 and the F8 formats type-check and print, but the lowering refuses
 * them by name, at the first let or parameter of one, before anything is emitted or built.
 */
final class HostDtypes {
    private HostDtypes() {}

    /** Returns when every let and fn parameter of {@code b} (fn bodies included) has a kept dtype. @throws MlirError naming the first that has not */
    static void require(Block b) {
        for (Let l : b.lets()) {
            if (l.rhs() instanceof Rhs.Fn fn) {
                for (Rhs.Param p : fn.params()) refuse(p.type(), "parameter " + p.name(), l);
                require(fn.body());
            } else {
                refuse(l.type(), "let " + l.displayName(), l);
            }
        }
    }

    private static void refuse(Type t, String what, Let at) {
        switch (t) {
            case null -> { }
            case TensorType tt -> {
                if (!tt.dtype().hostRunnable())
                    throw new MlirError(at.pos(), what + ": the native engine runs F32, F64, I64 and I1 tensors, not " + tt.dtype()
                            + " (write the program in F32 or F64)");
            }
            case Type.Tuple tu -> { for (Type e : tu.elems()) refuse(e, what, at); }
            case Type.Fn _ -> { }
        }
    }
}
