package kina.kernels;

import kina.ir.KinaException;

/**
 * Whether this JVM has the incubator Vector API ({@code jdk.incubator.vector}), which the kernels
 * (sgemm, kina's vector exp, the plan's fused loops) are written in. It is resolved only when the
 * JVM is started with {@code --add-modules jdk.incubator.vector}; without it the first kernel would
 * fail with a {@code NoClassDefFoundError}, so whatever runs a program asks here first.
 */
public final class VectorApi {
    private VectorApi() {}

    private static final boolean PRESENT = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();

    /** The one line that says what is missing and how to add it. */
    public static final String MISSING = "this JVM was started without the incubator Vector API that kina's kernels use: "
            + "add --add-modules jdk.incubator.vector to the java command (for the native engine also --enable-native-access=ALL-UNNAMED)";

    /** True when the module is in the boot layer. */
    public static boolean present() { return PRESENT; }

    /** Returns when the Vector API is there. @throws KinaException {@link #MISSING} when it is not */
    public static void require() {
        if (!PRESENT) throw new KinaException(null, MISSING);
    }
}
