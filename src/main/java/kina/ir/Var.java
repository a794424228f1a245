package kina.ir;

/**
 * A named value. Names are unique within one scope (a fn body with its parameters, or the top
 * level). Names starting with {@code %} are parser temporaries of nested expressions: the printer
 * writes them back inline, so they never appear in printed source.
 */
public record Var(String name) {
    public Var {
        if (name == null || name.isEmpty()) throw new IllegalArgumentException("empty var name");
    }

    public static Var of(String name) { return new Var(name); }

    /** True for a parser temporary (a nested sub-expression). */
    public boolean temporary() { return name.startsWith("%"); }

    @Override public String toString() { return name; }
}
