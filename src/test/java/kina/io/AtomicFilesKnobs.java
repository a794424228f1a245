package kina.io;

/** Test access to {@link AtomicFiles}' sink from other packages' tests (saves that fail part way). */
public final class AtomicFilesKnobs {
    private AtomicFilesKnobs() {}

    /** Every atomic write goes through {@code s} until {@link #whole()}. */
    public static void sink(AtomicFiles.Sink s) { AtomicFiles.sink = s; }

    /** Back to the sink that writes every byte. */
    public static void whole() { AtomicFiles.sink = AtomicFiles.WHOLE; }
}
