package kina.mlir;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import kina.ir.DType;
import kina.ir.Payload;
import kina.ir.Perm;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * A small typed builder for MLIR's textual form (LLVM/MLIR 19 syntax), the one place that spells
 * ops: tensor values ({@link Val}, with their kina type), scalars inside a {@code linalg.generic}
 * ({@link Scalar}, an element type or {@code index}), indexing maps ({@link AffineMap}), and one
 * function body at a time ({@link Fn}) with its generics' regions ({@link Body}). Every op's type
 * suffix is derived from its operands, so no caller writes a type by hand.
 */
final class Mlir {
    private Mlir() {}

    // ---- types and literals ---------------------------------------------------------------------

    /** {@code tensor<2x3xf32>}, {@code tensor<f32>} for rank 0. */
    static String ty(TensorType t) { return "tensor<" + dims(t.shape()) + el(t.dtype()) + ">"; }

    /** {@code memref<2x3xf32>}. */
    static String memref(TensorType t) { return "memref<" + dims(t.shape()) + el(t.dtype()) + ">"; }

    private static String dims(Shape s) {
        StringBuilder b = new StringBuilder();
        for (long d : s.dims()) b.append(d).append('x');
        return b.toString();
    }

    /** The MLIR element type; F8E4M3 is the finite-only OCP format (f8E4M3FN). */
    static String el(DType d) {
        return switch (d) {
            case F32 -> "f32";
            case F64 -> "f64";
            case BF16 -> "bf16";
            case F16 -> "f16";
            case F8E4M3 -> "f8E4M3FN";
            case F8E5M2 -> "f8E5M2";
            case I64 -> "i64";
            case I1 -> "i1";
        };
    }

    /** One type, or several in parentheses (a multi-result signature). */
    static String results(List<TensorType> types) {
        return types.size() == 1 ? ty(types.getFirst()) : "(" + String.join(", ", types.stream().map(Mlir::ty).toList()) + ")";
    }

    /**
     * A literal of dtype d: floats in decimal that parse back to the same value (F32: the float's
     * shortest digits), non-finite values as bit patterns; integers as integers; I1 as true/false.
     */
    static String lit(DType d, double v) {
        return switch (d) {
            case I64 -> Long.toString((long) v);
            case I1 -> v != 0 ? "true" : "false";
            case F32 -> Float.isFinite((float) v) ? Float.toString((float) v) : String.format("0x%08X", Float.floatToRawIntBits((float) v));
            case F64 -> Double.isFinite(v) ? Double.toString(v) : String.format("0x%016X", Double.doubleToRawLongBits(v));
            case BF16, F16, F8E5M2, F8E4M3 -> Double.isFinite(v) ? Double.toString(v) : special(d, v);
        };
    }

    /** {@code arith.constant v : T} (an I1 constant is {@code true} or {@code false}, its type implied). */
    static String constant(DType d, double v) {
        return "arith.constant " + lit(d, v) + (d == DType.I1 ? "" : " : " + el(d));
    }

    private static String special(DType d, double v) {
        boolean nan = Double.isNaN(v), neg = v < 0;
        return switch (d) {
            case BF16 -> nan ? "0x7FC0" : neg ? "0xFF80" : "0x7F80";
            case F16 -> nan ? "0x7E00" : neg ? "0xFC00" : "0x7C00";
            case F8E5M2 -> nan ? "0x7E" : neg ? "0xFC" : "0x7C";
            case F8E4M3 -> {
                if (nan) yield "0x7F";
                throw new MlirError("F8E4M3 has no infinity: " + v + " cannot be a literal");
            }
            case F32, F64, I64, I1 -> throw new IllegalStateException(d + " is not special");
        };
    }

    // ---- values ---------------------------------------------------------------------------------

    /** A tensor SSA value with its kina type. */
    record Val(String ssa, TensorType type) {
        String ty() { return Mlir.ty(type); }
    }

    /** A scalar's type inside a region: an element type, or {@code index}. */
    sealed interface STy permits Elem, Index {
        String text();
    }

    /** An element type. */
    record Elem(DType dtype) implements STy {
        public String text() { return el(dtype); }
    }

    /** MLIR's {@code index}. */
    enum Index implements STy {
        INDEX;
        public String text() { return "index"; }
    }

    /** An offset into a tensor: an index value, or a constant. */
    sealed interface Ix permits Scalar, Ix.Const {
        String text();

        /** A constant offset. */
        record Const(long value) implements Ix {
            public String text() { return Long.toString(value); }
        }

        static Ix of(long v) { return new Const(v); }
    }

    /** A scalar SSA value. */
    record Scalar(String ssa, STy type) implements Ix {
        public String text() { return ssa; }

        boolean floating() { return type instanceof Elem(var d) && d.floating(); }
    }

    /**
     * The results of an indexing map over loops d0…: {@code dims[i]} is the loop dim read at result
     * i, or {@link #ZERO} for the constant 0 (a broadcast axis of size 1); no results for a rank-0 operand.
     */
    record AffineMap(int... dims) {
        static final int ZERO = -1;

        /** d0, …, d(r−1). */
        static AffineMap identity(int r) { return range(0, r); }

        /** d(from), …, d(to−1). */
        static AffineMap range(int from, int to) {
            int[] d = new int[to - from];
            for (int i = 0; i < d.length; i++) d[i] = from + i;
            return new AffineMap(d);
        }

        /** The identity of rank r without dim {@code axis}. */
        static AffineMap drop(int r, int axis) {
            int[] d = new int[r - 1];
            for (int i = 0, k = 0; i < r; i++) if (i != axis) d[k++] = i;
            return new AffineMap(d);
        }

        String results() {
            List<String> s = new ArrayList<>();
            for (int d : dims) s.add(d == ZERO ? "0" : "d" + d);
            return String.join(", ", s);
        }
    }

    /** An operand of a linalg.generic with its indexing map. */
    record Operand(Val v, AffineMap map) {}

    /** Writes a generic's body: block arguments in (ins, then outs), yielded values out. */
    @FunctionalInterface interface BodyFn { List<Scalar> yield(Body b, List<Scalar> args); }

    /** A reassociation of dims, e.g. {@code [[0, 1], [2]]}. */
    record Reassoc(List<List<Integer>> groups) {
        Reassoc { groups = groups.stream().map(List::copyOf).toList(); }

        /** One group of dims [from, to). */
        static Reassoc all(int from, int to) {
            List<Integer> g = new ArrayList<>();
            for (int i = from; i < to; i++) g.add(i);
            return new Reassoc(List.of(g));
        }

        String text() {
            StringBuilder b = new StringBuilder("[");
            for (int k = 0; k < groups.size(); k++) {
                if (k > 0) b.append(", ");
                b.append('[');
                for (int m = 0; m < groups.get(k).size(); m++) { if (m > 0) b.append(", "); b.append(groups.get(k).get(m)); }
                b.append(']');
            }
            return b.append(']').toString();
        }
    }

    private static final String IND = "  ";

    /** The elements from which a generic runs on several threads (128 KB of F32): below, the fork costs more than it saves. */
    static final long PARALLEL = 1 << 15;

    /** Whether p maps every axis to itself. */
    static boolean identity(Perm p) {
        for (int i = 0; i < p.rank(); i++) if (p.at(i) != i) return false;
        return true;
    }

    // ---- one function body ----------------------------------------------------------------------

    /** The body of one func.func: its ops' text, and the counter its fresh names {@code %stem.N} come from. */
    static final class Fn {
        final StringBuilder text = new StringBuilder();
        private int counter;

        String fresh(String stem) { return "%" + stem + "." + (counter++); }

        private void line(String s) { text.append(IND).append(s).append('\n'); }

        /** {@code out = arith.constant dense<…> : T}: the payload as nested brackets, one level per dim. */
        Val literal(String out, TensorType t, Payload p) {
            line(out + " = arith.constant dense<" + nested(t, p, 0, 0) + "> : " + ty(t));
            return new Val(out, t);
        }

        private static String nested(TensorType t, Payload p, int dim, int at) {
            Shape s = t.shape();
            if (dim == s.rank()) return lit(t.dtype(), p.at(at));
            StringBuilder b = new StringBuilder("[");
            long stride = 1;
            for (int i = dim + 1; i < s.rank(); i++) stride *= s.dim(i);
            for (long i = 0; i < s.dim(dim); i++) {
                if (i > 0) b.append(", ");
                b.append(nested(t, p, dim + 1, (int) (at + i * stride)));
            }
            return b.append(']').toString();
        }

        /** {@code tensor.empty() : T} under a fresh name. */
        Val empty(TensorType t) {
            String e = fresh("empty");
            line(e + " = tensor.empty() : " + ty(t));
            return new Val(e, t);
        }

        /** {@code out = linalg.fill} of v into a fresh empty tensor of type t. */
        Val fill(String out, TensorType t, double v) {
            String c = fresh("c");
            line(c + " = " + constant(t.dtype(), v));
            Val e = empty(t);
            line(out + " = linalg.fill ins(" + c + " : " + el(t.dtype()) + ") outs(" + e.ssa() + " : " + ty(t) + ") -> " + ty(t));
            return new Val(out, t);
        }

        /** {@code out = linalg.fill} of v into {@code dest}. */
        Val fillInto(String out, Val dest, double v) {
            String c = fresh("c");
            line(c + " = " + constant(dest.type().dtype(), v));
            line(out + " = linalg.fill ins(" + c + " : " + el(dest.type().dtype()) + ") outs(" + dest.ssa() + " : " + dest.ty() + ") -> " + dest.ty());
            return new Val(out, dest.type());
        }

        /** A tensor of type t filled with v (a fresh name). */
        Val filled(TensorType t, double v) { return fill(fresh("init"), t, v); }

        /**
         * {@code out = linalg.generic} over {@code loops} dims (reduction dims in {@code red}), with
         * the given ins and outs, more attributes ({@code attrs}: {@code ", name"}…, for the
         * schedule to match), and the body; its results, one per out.
         */
        List<Val> generic(String out, int loops, Set<Integer> red, List<Operand> ins, List<Operand> outs, String attrs, BodyFn body) {
            if (parallel(loops, red, ins, outs)) attrs = attrs + ", kina.parallel";
            String dims = AffineMap.identity(loops).results();
            List<String> maps = new ArrayList<>(), iters = new ArrayList<>();
            for (Operand o : ins) maps.add("affine_map<(" + dims + ") -> (" + o.map().results() + ")>");
            for (Operand o : outs) maps.add("affine_map<(" + dims + ") -> (" + o.map().results() + ")>");
            for (int i = 0; i < loops; i++) iters.add(red.contains(i) ? "\"reduction\"" : "\"parallel\"");
            StringBuilder s = new StringBuilder();
            s.append(outs.size() == 1 ? out : out + ":" + outs.size()).append(" = linalg.generic {indexing_maps = [")
                    .append(String.join(", ", maps)).append("], iterator_types = [").append(String.join(", ", iters)).append("]")
                    .append(attrs).append("}");
            if (!ins.isEmpty()) s.append(" ins(").append(operands(ins)).append(')');
            s.append(" outs(").append(operands(outs)).append(") {");
            line(s.toString());
            List<Scalar> args = new ArrayList<>();
            List<String> decl = new ArrayList<>();
            for (Operand o : ins) args.add(new Scalar(fresh("in"), new Elem(o.v().type().dtype())));
            for (Operand o : outs) args.add(new Scalar(fresh("out"), new Elem(o.v().type().dtype())));
            for (Scalar a : args) decl.add(a.ssa() + ": " + a.type().text());
            text.append(IND).append("^bb0(").append(String.join(", ", decl)).append("):\n");
            Body b = new Body(this);
            List<Scalar> ys = body.yield(b, args);
            text.append(b.sb);
            text.append(IND).append("  linalg.yield ").append(String.join(", ", ys.stream().map(Scalar::ssa).toList())).append(" : ")
                    .append(String.join(", ", outs.stream().map(o -> el(o.v().type().dtype())).toList())).append('\n');
            List<TensorType> types = outs.stream().map(o -> o.v().type()).toList();
            text.append(IND).append("} -> ").append(results(types)).append('\n');
            List<Val> vs = new ArrayList<>();
            for (int i = 0; i < outs.size(); i++) vs.add(new Val(outs.size() == 1 ? out : out + "#" + i, types.get(i)));
            return vs;
        }

        /**
         * Whether a generic is worth running on several threads ({@code kina.parallel}: the
         * schedule splits its first loop into a parallel loop): that loop is parallel and written
         * at a position of the first result, of extent ≥ 2, and an operand has {@link #PARALLEL}
         * elements or more. Only parallel loops are split, so its values do not depend on the
         * number of threads.
         */
        private static boolean parallel(int loops, Set<Integer> red, List<Operand> ins, List<Operand> outs) {
            if (loops == 0 || red.contains(0)) return false;
            Operand o = outs.getFirst();
            int at = -1;
            for (int i = 0; i < o.map().dims().length; i++) if (o.map().dims()[i] == 0) at = i;
            if (at < 0 || o.v().type().shape().dim(at) < 2) return false;
            long most = 0;
            for (Operand x : ins) most = Math.max(most, x.v().type().shape().vol());
            for (Operand x : outs) most = Math.max(most, x.v().type().shape().vol());
            return most >= PARALLEL;
        }

        private static String operands(List<Operand> os) {
            return String.join(", ", os.stream().map(o -> o.v().ssa()).toList()) + " : "
                    + String.join(", ", os.stream().map(o -> o.v().ty()).toList());
        }

        /** {@code out = linalg.transpose} of x into a fresh empty tensor. */
        Val transpose(String out, Val x, Perm perm) {
            TensorType t = x.type().withShape(perm.apply(x.type().shape()));
            return transposeInto(out, x, perm, empty(t));
        }

        /** x with its axes permuted under a fresh name, or x itself for the identity. */
        Val transpose(Val x, Perm perm) {
            if (identity(perm)) return x;
            Val e = empty(x.type().withShape(perm.apply(x.type().shape())));
            return transposeInto(fresh("transpose"), x, perm, e);
        }

        private Val transposeInto(String out, Val x, Perm perm, Val e) {
            line(out + " = linalg.transpose ins(" + x.ssa() + " : " + x.ty() + ") outs(" + e.ssa() + " : " + e.ty() + ") permutation = " + perm);
            return new Val(out, e.type());
        }

        Val collapse(String out, Val x, Reassoc r, TensorType to) {
            line(out + " = tensor.collapse_shape " + x.ssa() + " " + r.text() + " : " + x.ty() + " into " + ty(to));
            return new Val(out, to);
        }

        Val expand(String out, Val x, Reassoc r, TensorType to) {
            line(out + " = tensor.expand_shape " + x.ssa() + " " + r.text() + " output_shape " + to.shape() + " : " + x.ty() + " into " + ty(to));
            return new Val(out, to);
        }

        /** {@code tensor.extract} of a rank-0 tensor, under a fresh name. */
        Scalar extract(Val t, String stem) {
            String v = fresh(stem);
            line(v + " = tensor.extract " + t.ssa() + "[] : " + t.ty());
            return new Scalar(v, new Elem(t.type().dtype()));
        }

        /** An {@code index} constant under a fresh name. */
        Scalar index(long v) {
            String c = fresh("c");
            line(c + " = arith.constant " + v + " : index");
            return new Scalar(c, Index.INDEX);
        }

        /** {@code tensor.extract t[at…]} under a fresh name. */
        Scalar extract(Val t, List<Scalar> at, String stem) {
            String v = fresh(stem);
            line(v + " = tensor.extract " + t.ssa() + "[" + String.join(", ", at.stream().map(Scalar::ssa).toList()) + "] : " + t.ty());
            return new Scalar(v, new Elem(t.type().dtype()));
        }

        /** An i64 as an index, under a fresh name. */
        Scalar toIndex(Scalar x) {
            String v = fresh("i");
            line(v + " = arith.index_cast " + x.ssa() + " : " + x.type().text() + " to index");
            return new Scalar(v, Index.INDEX);
        }

        /**
         * {@code out = scf.for %iv = lo to hi step 1 iter_args(%acc = init)} whose body {@code body}
         * writes from the induction variable and the carried value, answering the value it yields.
         */
        Val loop(String out, Scalar lo, Scalar hi, Val init, java.util.function.BiFunction<Scalar, Val, Val> body) {
            Scalar one = index(1);
            Scalar iv = new Scalar(fresh("iv"), Index.INDEX);
            Val acc = new Val(fresh("acc"), init.type());
            line(out + " = scf.for " + iv.ssa() + " = " + lo.ssa() + " to " + hi.ssa() + " step " + one.ssa() + " iter_args(" + acc.ssa()
                    + " = " + init.ssa() + ") -> (" + init.ty() + ") {");
            Val y = body.apply(iv, acc);
            line("  scf.yield " + y.ssa() + " : " + y.ty());
            line("}");
            return new Val(out, init.type());
        }

        /** {@code tensor.extract_slice t[offsets] [sizes] [1, …]} of type {@code to} (rank-reduced where to says so). */
        Val extractSlice(Val t, List<Ix> offsets, List<Long> sizes, TensorType to) {
            String v = fresh("slice");
            line(v + " = tensor.extract_slice " + t.ssa() + slice(offsets, sizes) + " : " + t.ty() + " to " + ty(to));
            return new Val(v, to);
        }

        /** {@code tensor.insert_slice src into dest[offsets] [sizes] [1, …]}. */
        Val insertSlice(Val src, Val dest, List<Ix> offsets, List<Long> sizes) {
            String v = fresh("inserted");
            line(v + " = tensor.insert_slice " + src.ssa() + " into " + dest.ssa() + slice(offsets, sizes) + " : " + src.ty() + " into " + dest.ty());
            return new Val(v, dest.type());
        }

        private static String slice(List<Ix> offsets, List<Long> sizes) {
            List<String> ones = new ArrayList<>();
            for (int i = 0; i < sizes.size(); i++) ones.add("1");
            return "[" + String.join(", ", offsets.stream().map(Ix::text).toList()) + "] [" + String.join(", ", sizes.stream().map(String::valueOf).toList())
                    + "] [" + String.join(", ", ones) + "]";
        }

        /** {@code cf.assert cond, "message"}. */
        void check(Scalar cond, String message) { line("cf.assert " + cond.ssa() + ", \"" + message + "\""); }

        /**
         * {@code out = func.call @symbol(args)}: its results, of {@code types}; {@code parens} prints
         * the result types in parentheses even when there is one (a part's signature).
         */
        List<Val> call(String out, String symbol, List<Val> args, List<TensorType> types, boolean parens) {
            String res = types.isEmpty() ? "" : (types.size() == 1 ? out : out + ":" + types.size()) + " = ";
            line(res + "func.call @" + symbol + "(" + String.join(", ", args.stream().map(Val::ssa).toList()) + ") : ("
                    + String.join(", ", args.stream().map(Val::ty).toList()) + ") -> " + signature(types, parens));
            List<Val> vs = new ArrayList<>();
            for (int i = 0; i < types.size(); i++) vs.add(new Val(types.size() == 1 ? out : out + "#" + i, types.get(i)));
            return vs;
        }

        private static String signature(List<TensorType> types, boolean parens) {
            return parens ? "(" + String.join(", ", types.stream().map(Mlir::ty).toList()) + ")" : results(types);
        }

        /** {@code out = OP ins(a, b) outs(init) -> T}: a named linalg op (a contraction). */
        Val named(String out, String op, Val a, Val b, Val init) {
            line(out + " = " + op + " ins(" + a.ssa() + ", " + b.ssa() + " : " + a.ty() + ", " + b.ty() + ") outs(" + init.ssa() + " : "
                    + init.ty() + ") -> " + init.ty());
            return new Val(out, init.type());
        }

        /**
         * This body as {@code func.func private @symbol(params) -> results attrs} returning {@code res};
         * {@code parens} as in {@link #call}.
         */
        String func(String symbol, List<Val> params, List<Val> res, String attrs, boolean parens) {
            List<TensorType> types = res.stream().map(Val::type).toList();
            StringBuilder sb = new StringBuilder();
            sb.append("func.func private @").append(symbol).append('(')
                    .append(String.join(", ", params.stream().map(v -> v.ssa() + ": " + v.ty()).toList())).append(") -> ")
                    .append(signature(types, parens)).append(attrs).append(" {\n").append(text);
            sb.append("  return ").append(String.join(", ", res.stream().map(Val::ssa).toList()))
                    .append(res.isEmpty() ? "" : " : " + String.join(", ", types.stream().map(Mlir::ty).toList())).append("\n}\n");
            return sb.toString();
        }
    }

    // ---- a generic's region -----------------------------------------------------------------------

    /** A generic's body: scalar ops with fresh names from the function's counter. */
    static final class Body {
        private final Fn f;
        final StringBuilder sb = new StringBuilder();

        Body(Fn f) { this.f = f; }

        private Scalar op(String rhs, STy type) {
            String n = f.fresh("b");
            sb.append(IND).append("  ").append(n).append(" = ").append(rhs).append('\n');
            return new Scalar(n, type);
        }

        private Scalar bin(String op, Scalar x, Scalar y) { return op(op + " " + x.ssa() + ", " + y.ssa() + " : " + x.type().text(), x.type()); }

        private Scalar un(String op, Scalar x) { return op(op + " " + x.ssa() + " : " + x.type().text(), x.type()); }

        Scalar cst(DType d, double v) { return op(constant(d, v), new Elem(d)); }

        /** An index constant. */
        Scalar cst(long v) { return op("arith.constant " + v + " : index", Index.INDEX); }

        /** {@code linalg.index dim}. */
        Scalar index(int dim) { return op("linalg.index " + dim + " : index", Index.INDEX); }

        /** addf or addi by the operands' type. */
        Scalar add(Scalar x, Scalar y) { return bin(x.floating() ? "arith.addf" : "arith.addi", x, y); }

        /** mulf or muli by the operands' type. */
        Scalar mul(Scalar x, Scalar y) { return bin(x.floating() ? "arith.mulf" : "arith.muli", x, y); }

        /**
         * x + y accumulated in a reduction: floats with {@code fastmath<reassoc>}, which lets LLVM
         * vectorize the reduction (partial sums in vector lanes, combined at the end: a fixed order
         * for a given build, not the sequential one).
         */
        Scalar accumulate(Scalar x, Scalar y) {
            if (!x.floating()) return add(x, y);
            return op("arith.addf " + x.ssa() + ", " + y.ssa() + " fastmath<reassoc> : " + x.type().text(), x.type());
        }

        Scalar subf(Scalar x, Scalar y) { return bin("arith.subf", x, y); }

        Scalar divf(Scalar x, Scalar y) { return bin("arith.divf", x, y); }

        Scalar maximumf(Scalar x, Scalar y) { return bin("arith.maximumf", x, y); }

        Scalar negf(Scalar x) { return un("arith.negf", x); }

        /** A {@code math} op on one operand: exp, log, sqrt, tanh. */
        Scalar math(String name, Scalar x) { return un("math." + name, x); }

        /** An integer or index op on two operands: addi, subi, muli, divui, remui, maxsi, minsi, shrsi, andi, ori, xori. */
        Scalar arith(String name, Scalar x, Scalar y) { return bin("arith." + name, x, y); }

        /** {@code arith.cmpf pred} (an i1). */
        Scalar cmpf(String pred, Scalar x, Scalar y) { return cmp("arith.cmpf", pred, x, y); }

        /** {@code arith.cmpi pred} (an i1). */
        Scalar cmpi(String pred, Scalar x, Scalar y) { return cmp("arith.cmpi", pred, x, y); }

        private Scalar cmp(String op, String pred, Scalar x, Scalar y) {
            return op(op + " " + pred + ", " + x.ssa() + ", " + y.ssa() + " : " + x.type().text(), new Elem(DType.I1));
        }

        Scalar select(Scalar c, Scalar x, Scalar y) {
            return op("arith.select " + c.ssa() + ", " + x.ssa() + ", " + y.ssa() + " : " + x.type().text(), x.type());
        }

        /** A conversion {@code arith.OP x : from to T} (sitofp, extf, truncf) to an element type. */
        Scalar convert(String op, Scalar x, DType to) {
            return op("arith." + op + " " + x.ssa() + " : " + x.type().text() + " to " + el(to), new Elem(to));
        }

        /** An index as i64, or an i64 as index. */
        Scalar indexCast(Scalar x) {
            STy to = x.type() == Index.INDEX ? new Elem(DType.I64) : Index.INDEX;
            return op("arith.index_cast " + x.ssa() + " : " + x.type().text() + " to " + to.text(), to);
        }

        /** {@code tensor.extract t[at…]} (a tensor from outside the generic, read at computed indices). */
        Scalar extract(Val t, List<Scalar> at) {
            return op("tensor.extract " + t.ssa() + "[" + String.join(", ", at.stream().map(Scalar::ssa).toList()) + "] : " + t.ty(),
                    new Elem(t.type().dtype()));
        }
    }
}
