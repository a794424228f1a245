package kina.ad;

import kina.ir.KinaException;
import kina.ir.Pos;

/** A refused transform, raised at the API edge: names the let and the rule. */
public final class AdError extends KinaException {
    private final Refusal refusal;
    private final String let;

    public AdError(Refusal refusal, String let, Pos pos) {
        super(pos, "reverseMode: let " + let + ": " + refusal.message());
        this.refusal = refusal;
        this.let = let;
    }

    public Refusal refusal() { return refusal; }

    /** The name of the let where the transform stopped. */
    public String let() { return let; }
}
