package kina.model;

import kina.ir.KinaException;
import kina.ir.Program;
import kina.mlir.Native;
import kina.plan.Plan;

/** What runs the step and validation programs; the plan and the interpreter give the same bits. */
public enum Engine {
    /** The compiled plan (kina.plan), compiled once per run: the default. */
    PLAN,
    /** The host interpreter, let by let. */
    INTERPRETER,
    /**
     * The program as the plan rewrites it (its fusions) lowered to MLIR and built into a shared
     * object (kina.mlir.Native; cached by content), called once per step: results within
     * rounding of the others, not the same bits.
     */
    NATIVE;

    /** {@code plan}, {@code interpreter} or {@code native}; a KinaException naming them otherwise. */
    public static Engine parse(String s) {
        return switch (s) {
            case "plan" -> PLAN;
            case "interpreter" -> INTERPRETER;
            case "native" -> NATIVE;
            default -> throw new KinaException(null, "--engine " + s + ": unknown (plan, interpreter or native)");
        };
    }

    /** Compiles {@code p} for this engine: a function from inputs to the flattened result, which may carry state. */
    public Runner compile(Program p) {
        return switch (this) {
            case PLAN -> new Runner.PlanRunner(Plan.compile(p));
            case INTERPRETER -> new Runner.InterpreterRunner(p);
            case NATIVE -> new Runner.NativeRunner(Native.compile(Plan.compile(p).program()));
        };
    }
}
