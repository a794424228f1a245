package kina.eval;

import java.util.List;
import kina.ir.Rhs;

/** A run-time value of the interpreter: a tensor, a flat tuple, or a function. */
public sealed interface Value permits Tensor, Value.Tuple, Value.Closure {

    /** A flat tuple of values (the reverseMode ABI, or a tuple expression). */
    record Tuple(List<Value> elems) implements Value {
        public Tuple { elems = List.copyOf(elems); }
    }

    /**
     * A fn value. Fn bodies are closed (kina.check), so a closure needs only the fns visible where
     * it was defined, for calls made from its body.
     */
    record Closure(String name, Rhs.Fn fn, java.util.Map<String, Closure> fns) implements Value {}
}
