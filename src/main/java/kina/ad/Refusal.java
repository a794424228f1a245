package kina.ad;

/**
 * A named "no" from the AD pass (DESIGN §5, STYLE §(b)5): never a silent zero. Compared by value
 * in tests, turned into an {@link AdError} at the API edge.
 */
public sealed interface Refusal {
    /** What the user reads after {@code let x: }. */
    String message();

    /** The op is piecewise constant: its derivative is zero almost everywhere and undefined at steps. */
    record NoGradient(String op, String why) implements Refusal {
        public String message() { return op + ": no gradient (" + why + ")"; }
    }

    /** The rule for this op is not written. */
    record NotDerived(String op) implements Refusal {
        public String message() { return op + ": not derived (transform_ad has no VJP rule for " + op + ")"; }
    }

    /** A gradient was asked of a value the rule does not differentiate (discrete, or a table operand). */
    record NotDifferentiated(String value, String op) implements Refusal {
        public String message() { return "not differentiated: " + value + " (" + op + ")"; }
    }

    /** The seeds' device texts, e.g. {@code scatter_add: checked device lowering is not available}. */
    record Unavailable(String text) implements Refusal {
        public String message() { return text; }
    }

    /** The differentiated body breaks a pass rule (Section 10 §3 / Section 14 §3). */
    record NotAnAdSpine(String why) implements Refusal {
        public String message() { return why; }
    }
}
