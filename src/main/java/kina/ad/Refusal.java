package kina.ad;

/**
 * A named "no" from the AD pass, never a silent zero (docs/language.md lists them). Compared by value
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

    /** No checked lowering for the operands' placement: {@code scatter_add: checked device lowering is not available}. */
    record Unavailable(String text) implements Refusal {
        public String message() { return text; }
    }

    /**
     * The differentiated body breaks a rule of the pass: a nested expression that receives a
     * cotangent, a result that is not a Var, an instruction of several results.
     */
    record NotAnAdSpine(String why) implements Refusal {
        public String message() { return why; }
    }
}
