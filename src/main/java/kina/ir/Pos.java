package kina.ir;

/** A source position, 1-based line and column; {@link #NONE} for generated nodes. */
public record Pos(String file, int line, int col) {
    public static final Pos NONE = new Pos("<generated>", 0, 0);

    @Override public String toString() { return file + ":" + line + ":" + col; }
}
