package kina.ir;

import java.util.List;

/**
 * The right-hand side of a let: a tensor instruction, a function, a call, a reverseMode or
 * forwardMode handle, or a tuple. Every child is a {@link Var}: nested surface expressions are
 * bound to temporaries by the parser (see {@link Var#temporary()}).
 */
public sealed interface Rhs permits Instr, Rhs.Fn, Rhs.Call, Rhs.Handle, Rhs.Tuple {

    /**
     * The values this right-hand side reads: an instruction's operands, a call's arguments, a
     * handle's arguments then (forwardMode) its tangents, a tuple's elements; none for a fn,
     * whose body is closed (it reads only its parameters and its own lets).
     */
    default List<Var> reads() {
        return switch (this) {
            case Instr i -> i.operands();
            case Call c -> c.args();
            case Handle(var _, var args, Mode.ForwardMode(var tangents)) -> {
                List<Var> all = new java.util.ArrayList<>(args);
                all.addAll(tangents);
                yield List.copyOf(all);
            }
            case Handle h -> h.args();
            case Tuple t -> t.elems();
            case Fn _ -> List.of();
        };
    }

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
     * parameters, {@code (R, g0, …, gk-1)}, or R when k = 0. With
     * {@code forwardMode(t0, …, tk-1)}, one tangent per floating parameter: {@code (R, J·t)}, the
     * value and its directional derivative Σ_i ∂R/∂p_i · t_i.
     */
    record Handle(Var fn, List<Var> args, Mode mode) implements Rhs {
        public Handle {
            args = List.copyOf(args);
            if (mode == null) throw new IllegalArgumentException("a handle needs a mode");
        }

        /** {@code handle f(args) with reverseMode}. */
        public Handle(Var fn, List<Var> args) { this(fn, args, new Mode.ReverseMode()); }
    }

    /** The handler of a {@link Handle}: which derivative it answers. */
    sealed interface Mode {
        /** {@code with reverseMode}: the cotangents of the floating parameters for the seed ones of R. */
        record ReverseMode() implements Mode {}

        /** {@code with forwardMode(t0, …)}: J·t for one tangent per floating parameter, in order. */
        record ForwardMode(List<Var> tangents) implements Mode {
            public ForwardMode { tangents = List.copyOf(tangents); }
        }
    }

    /** {@code (a, b, …)}: a flat tuple of tensors. */
    record Tuple(List<Var> elems) implements Rhs {
        public Tuple { elems = List.copyOf(elems); }
    }
}
