package kina.ir;

/**
 * A whole .kina source: one top-level block, and the file it came from (for messages). Its
 * {@link #toString()} is the program as kina source ({@link Printer#print(Program)}).
 */
public record Program(String file, Block body) {
    /** The program as kina source; for IR the printer cannot write (a one-element tuple), the record's fields. */
    @Override public String toString() {
        try {
            return Printer.print(this);
        } catch (RuntimeException e) {
            return "Program[file=" + file + ", body=" + body + "] (not printable as kina: " + e.getMessage() + ")";
        }
    }
}
