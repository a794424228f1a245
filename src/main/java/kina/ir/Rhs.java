package kina.ir;

import java.util.List;

/**
 * The right-hand side of a let: a tensor instruction, a function, a call, a reverseMode handle,
 * or a tuple. Every child is a {@link Var}: nested surface expressions are bound to temporaries
 * by the parser (see {@link Var#temporary()}).
 */
public sealed interface Rhs permits Instr, Rhs.Fn, Rhs.Call, Rhs.Handle, Rhs.Tuple {

    /** A typed parameter of a fn. */
    record Param(Var name, TensorType type, Pos pos) {}

    /**
     * {@code fn(p: T, …) -> R { body }}. A fn body is closed: it may refer to its parameters,
     * its own lets, and (only as call targets) fns bound before it.
     */
    record Fn(List<Param> params, Type result, Block body) implements Rhs {
        public Fn { params = List.copyOf(params); }
    }

    /** {@code f(a, b, …)}: calls a fn bound by a let. */
    record Call(Var fn, List<Var> args) implements Rhs {
        public Call { args = List.copyOf(args); }
    }

    /**
     * {@code handle f(a, b, …) with reverseMode}: the value of f and the cotangents of its floating
     * parameters, {@code (R, g0, …, gk-1)}, or R when k = 0 (Section 14 §3).
     */
    record Handle(Var fn, List<Var> args) implements Rhs {
        public Handle { args = List.copyOf(args); }
    }

    /** {@code (a, b, …)}: a flat tuple of tensors. */
    record Tuple(List<Var> elems) implements Rhs {
        public Tuple { elems = List.copyOf(elems); }
    }
}
