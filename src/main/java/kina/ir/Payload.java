package kina.ir;

import java.util.Arrays;

/**
 * The literal values of {@code tensor<…> payload { … }}, row-major. Stored as doubles (I64 values
 * must be integers of magnitude ≤ 2^53); compared by value.
 */
public record Payload(double... values) {
    public Payload { values = values.clone(); }

    @Override public double[] values() { return values.clone(); }

    public int size() { return values.length; }

    public double at(int i) { return values[i]; }

    @Override public boolean equals(Object o) {
        if (!(o instanceof Payload p) || p.values.length != values.length) return false;
        for (int i = 0; i < values.length; i++)
            if (Double.doubleToRawLongBits(values[i]) != Double.doubleToRawLongBits(p.values[i])) return false;
        return true;
    }

    @Override public int hashCode() { return Arrays.hashCode(values); }

    @Override public String toString() { return Arrays.toString(values); }
}
