package kina.kernels;

/** Test access to {@link FusedCode}'s size threshold from other packages' tests (plans that compile every group). */
public final class FusedCodeKnobs {
    private FusedCodeKnobs() {}

    /** The fewest elements a group needs to be compiled. */
    public static int minElements() { return FusedCode.minElements; }

    /** Sets the fewest elements a group needs to be compiled (0: every F32 group whose leaves allow it). */
    public static void minElements(int n) { FusedCode.minElements = n; }
}
