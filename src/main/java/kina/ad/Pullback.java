package kina.ad;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * What a VJP rule answers: one optional cotangent per operand (empty for a data operand such as
 * indices, which never receive a cotangent), or a refusal by name.
 */
public sealed interface Pullback<T> {

    /** One entry per operand, in operand order. */
    record Cotangents<T>(List<Optional<T>> perOperand) implements Pullback<T> {
        public Cotangents { perOperand = List.copyOf(perOperand); }
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

    static <T> Pullback<T> refuse(Refusal r) { return new Refused<>(r); }
}
