package kina.model;

import kina.ir.KinaException;

/** A model configuration that cannot be used: one line, {@code config <where>: <problem>}. */
public final class ConfigError extends KinaException {
    private final String problem;

    public ConfigError(String where, String problem) {
        super(null, "config " + where + ": " + problem);
        this.problem = problem;
    }

    public ConfigError(String where, String problem, Throwable cause) {
        super(null, "config " + where + ": " + problem, cause);
        this.problem = problem;
    }

    /** The message without its {@code config <where>: } prefix. */
    public String problem() { return problem; }
}
