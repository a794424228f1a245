package kina.mlir;

/**
 * The transform-dialect schedule that tiles and vectorizes a module's contractions before
 * bufferization; null when the module gets none.
 */
final class Schedule {
    private Schedule() {}

    /** The schedule for {@code m}, or null. */
    static String text(Emitter.Module m) { return null; }
}
