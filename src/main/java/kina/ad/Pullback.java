package kina.ad;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * What a VJP rule answers: one optional cotangent per operand (empty for a data operand such as
 * indices, which never receive a cotangent), or a refusal by name.
 */
public sealed interface Pullback<T> {

    /**
     * One entry per operand, in operand order. {@code notDifferentiated} lists the operands (by
     * index; their entry is empty) that the rule does not differentiate although they may be
     * floating, such as rope's cos and sin tables: the scan refuses by name when such an operand is,
     * or depends on, a floating parameter of the differentiated fn.
     */
    record Cotangents<T>(List<Optional<T>> perOperand, Set<Integer> notDifferentiated) implements Pullback<T> {
        public Cotangents {
            perOperand = List.copyOf(perOperand);
            notDifferentiated = Set.copyOf(notDifferentiated);
        }

        public Cotangents(List<Optional<T>> perOperand) { this(perOperand, Set.of()); }
    }

    /** The rule refuses: no gradient, not derived, unavailable. */
    record Refused<T>(Refusal why) implements Pullback<T> {}

    /** Every operand receives the given cotangent, in order. */
    @SafeVarargs
    static <T> Pullback<T> flow(T... cts) {
        return new Cotangents<>(Arrays.stream(cts).map(Optional::of).toList());
    }

    /** The first operand receives {@code ct}; the second (indices) receives nothing. */
    static <T> Pullback<T> valuesOnly(T ct) {
        List<Optional<T>> l = new ArrayList<>();
        l.add(Optional.of(ct));
        l.add(Optional.empty());
        return new Cotangents<>(l);
    }

    /**
     * Cotangents for the given operands, in order ({@code null}: none), with the operands at
     * {@code notDifferentiated} marked as not differentiated.
     */
    static <T> Pullback<T> partial(List<T> cts, Set<Integer> notDifferentiated) {
        List<Optional<T>> l = new ArrayList<>();
        for (T c : cts) l.add(Optional.ofNullable(c));
        return new Cotangents<>(l, notDifferentiated);
    }

    static <T> Pullback<T> refuse(Refusal r) { return new Refused<>(r); }
}
