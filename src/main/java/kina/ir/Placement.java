package kina.ir;

/** Where a tensor lives: {@code @host} is executed; {@code @device} is typed and emitted only. */
public enum Placement {
    HOST("host"), DEVICE("device");

    private final String spelling;

    Placement(String spelling) { this.spelling = spelling; }

    public String spelling() { return spelling; }

    public static Placement parse(String s) {
        for (Placement p : values()) if (p.spelling.equals(s)) return p;
        return null;
    }

    @Override public String toString() { return "@" + spelling; }
}
