package kina.ir;

/**
 * Element types of kina tensors. Floating dtypes carry cotangents; I64 and I1 are
 * discrete: no cotangent ever flows into them (docs/language.md, "Discrete values get no cotangent").
 *
 * <p>The host interpreter runs F32, F64 and I64 (and I1 for masks); BF16, F16 and the F8 formats
 * are typed and printed, and refused by name at run time and by the MLIR lowering.
 */
public enum DType {
    F32("F32", true), F64("F64", true), BF16("BF16", true), F16("F16", true),
    F8E4M3("F8E4M3", true), F8E5M2("F8E5M2", true), I64("I64", false), I1("I1", false);

    private final String spelling;
    private final boolean floating;

    DType(String spelling, boolean floating) {
        this.spelling = spelling;
        this.floating = floating;
    }

    /** True for the dtypes that receive cotangents. */
    public boolean floating() { return floating; }

    /** True for I64 and I1. */
    public boolean discrete() { return !floating; }

    /** True for the dtypes whose buffers the host interpreter keeps: F32, F64, I64, I1. */
    public boolean hostRunnable() { return this == F32 || this == F64 || this == I64 || this == I1; }

    /** The surface spelling, e.g. {@code F32}. */
    public String spelling() { return spelling; }

    /** The dtype spelled {@code s} in source, or null. */
    public static DType parse(String s) {
        for (DType d : values()) if (d.spelling.equals(s)) return d;
        return null;
    }

    @Override public String toString() { return spelling; }
}
