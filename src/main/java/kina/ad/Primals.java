package kina.ad;

import kina.ir.TensorType;
import kina.ir.Var;

/** The forward values a rule may read, in the reading's own representation. */
public interface Primals<T> {
    /** The primal value bound to {@code v} (a buffer, or the Var itself when recording). */
    T of(Var v);

    /** The type of {@code v}. */
    TensorType type(Var v);
}
