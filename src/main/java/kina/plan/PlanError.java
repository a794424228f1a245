package kina.plan;

import kina.ir.KinaException;
import kina.ir.Let;

/** What the plan cannot compile, refused by name (one line), located at the let when there is one. */
public final class PlanError extends KinaException {
    public PlanError(Let at, String detail) {
        super(at == null ? null : at.pos(), at == null ? "plan: " + detail : "let " + at.displayName() + ": plan: " + detail);
    }
}
