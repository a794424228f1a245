package kina.cli;

import java.util.Locale;
import kina.ir.KinaException;

/**
 * Range checks of option values. Each bad value is one line naming the option, the value given and
 * the allowed range, e.g. {@code --steps -5: must be a whole number >= 1 (optimizer steps)}.
 * Written as "not in range" so that NaN, which fails every comparison, is refused too.
 */
final class OptionRange {
    private OptionRange() {}

    /** The text the user gave for {@code option} (as typed, not as parsed), or {@code (default)}. */
    static String typed(picocli.CommandLine.Model.CommandSpec spec, String option) {
        var m = spec.commandLine().getParseResult().matchedOption(option);
        return m == null ? "(default)" : String.join(",", m.stringValues());
    }

    /** {@code value >= min}; {@code what} says what the option is. */
    static void atLeast(String option, long value, long min, String what) {
        if (value < min) throw bad(option, value, "must be a whole number >= " + min, what);
    }

    /** {@code lo <= value <= hi}. */
    static void within(String option, long value, long lo, long hi, String what) {
        if (value < lo || value > hi) throw bad(option, value, "must be a whole number in " + lo + ".." + hi, what);
    }

    /** A finite number {@code > 0}; {@code shown} is the value as the user typed it. */
    static void positive(String option, double value, String shown, String what) {
        if (!(value > 0 && value < Double.POSITIVE_INFINITY)) throw bad(option, shown, "must be a finite number > 0", what);
    }

    /** A finite number {@code >= 0}. */
    static void nonNegative(String option, double value, String shown, String what) {
        if (!(value >= 0 && value < Double.POSITIVE_INFINITY)) throw bad(option, shown, "must be a finite number >= 0", what);
    }

    /** A number in [lo, hi). */
    static void halfOpen(String option, double value, String shown, double lo, double hi, String what) {
        if (!(value >= lo && value < hi)) throw bad(option, shown, "must be in [" + num(lo) + ", " + num(hi) + ")", what);
    }

    private static KinaException bad(String option, Object value, String range, String what) {
        return new KinaException(null, option + " " + value + ": " + range + (what.isEmpty() ? "" : " (" + what + ")"));
    }

    private static String num(double d) {
        return d == Math.rint(d) && Math.abs(d) < 1e15 ? String.valueOf((long) d) : String.format(Locale.ROOT, "%s", d);
    }
}
