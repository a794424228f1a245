package kina.check;

import java.util.ArrayList;
import java.util.List;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Placement;
import kina.ir.Pos;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/** A tiny builder of IR for the checker's tests; each let gets the next line of "t.kina". */
final class Ir {
    private final List<Let> lets = new ArrayList<>();
    private int line = 0;

    static Var v(String n) { return Var.of(n); }

    static TensorType f32(long... dims) { return TensorType.host(DType.F32, dims); }

    static TensorType i64(long... dims) { return TensorType.host(DType.I64, dims); }

    static TensorType t(DType d, long... dims) { return TensorType.host(d, dims); }

    static TensorType dev(TensorType t) { return new TensorType(t.dtype(), t.shape(), Placement.DEVICE); }

    static Shape sh(long... dims) { return Shape.of(dims); }

    Pos next() { return new Pos("t.kina", ++line, 1); }

    Ir let(String name, Rhs rhs) { lets.add(Let.of(v(name), rhs, next())); return this; }

    Ir input(String name, TensorType t) { return let(name, new Instr.Input(t)); }

    /** A temporary {@code name} that is part of the user let {@code owner}. */
    Ir temp(String name, String owner, Rhs rhs) {
        lets.add(new Let(List.of(v(name)), false, rhs, next(), owner, null));
        return this;
    }

    Ir destructure(Rhs rhs, String... names) {
        lets.add(new Let(java.util.Arrays.stream(names).map(Var::of).toList(), true, rhs, next(), null, null));
        return this;
    }

    Block block(String result) { return new Block(lets, v(result), new Pos("t.kina", ++line, 1)); }

    Program program(String result) { return new Program("t.kina", block(result)); }

    static Rhs.Param param(String name, TensorType t) { return new Rhs.Param(v(name), t, new Pos("t.kina", 0, 5)); }

    static Rhs.Fn fn(List<Rhs.Param> params, Type result, Block body) { return new Rhs.Fn(params, result, body); }

    static Rhs.Call call(String f, String... args) { return new Rhs.Call(v(f), java.util.Arrays.stream(args).map(Var::of).toList()); }

    static Rhs.Handle handle(String f, String... args) { return new Rhs.Handle(v(f), java.util.Arrays.stream(args).map(Var::of).toList()); }

    static Rhs.Tuple tuple(String... elems) { return new Rhs.Tuple(java.util.Arrays.stream(elems).map(Var::of).toList()); }

    static Type.Tuple tupleType(Type... ts) { return new Type.Tuple(List.of(ts)); }
}
