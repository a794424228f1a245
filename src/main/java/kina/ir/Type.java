package kina.ir;

import java.util.List;
import java.util.stream.Collectors;

/** The types of kina values: tensors, flat tuples of tensors (the reverseMode ABI), functions. */
public sealed interface Type permits TensorType, Type.Tuple, Type.Fn {

    /** A flat tuple, e.g. {@code (R, g0, …, gk-1)} of a reverseMode handle. */
    record Tuple(List<Type> elems) implements Type {
        public Tuple { elems = List.copyOf(elems); }

        @Override public String toString() {
            return elems.stream().map(Object::toString).collect(Collectors.joining(", ", "(", ")"));
        }
    }

    /** The type of a {@code fn}: parameter types and the result type. */
    record Fn(List<TensorType> params, Type result) implements Type {
        public Fn { params = List.copyOf(params); }

        @Override public String toString() {
            return params.stream().map(Object::toString).collect(Collectors.joining(", ", "fn(", ") -> ")) + result;
        }
    }
}
