package kina.mlir;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import kina.eval.EvalError;
import kina.eval.Tensor;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Payload;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Var;

/**
 * The index checks a native call needs before it runs. A compiled module asserts its bounds with
 * {@code cf.assert}, which aborts the whole process, so every index an instruction reads must be
 * known good before the call: each indexing instruction's indices are traced back through layout
 * instructions (reshape, transpose, broadcast keep the values) and fn parameters (to every call's
 * arguments) to program inputs, which are checked on every call, or to literals and fills, checked
 * once here. Indices computed otherwise (argmax, clamp, a call's result) cannot be checked before the
 * call: the native engine refuses such a program by name.
 */
final class IndexChecks {

    /** Input {@code input} is read as indices below {@code bound} by {@code op} at let {@code at}. */
    record Check(String input, long bound, String op, Let at) {}

    private final List<Check> checks = new ArrayList<>();
    private final Map<Rhs.Fn, List<Site>> callers = new IdentityHashMap<>();

    /** A call of a fn: the caller's block and the arguments. */
    private record Site(Block block, List<Var> args, Rhs.Fn in) {}

    private IndexChecks() {}

    /**
     * The checks of a transformed program.
     *
     * @throws MlirError for indices that are neither inputs nor constants, or a constant out of bounds
     */
    static List<Check> of(Program p) {
        IndexChecks c = new IndexChecks();
        c.callSites(p.body(), new HashMap<>(), null);
        c.walk(p.body(), null);
        return List.copyOf(c.checks);
    }

    private void callSites(Block b, Map<Var, Rhs.Fn> outer, Rhs.Fn in) {
        Map<Var, Rhs.Fn> scope = new HashMap<>(outer);
        for (Let l : b.lets()) {
            if (l.rhs() instanceof Rhs.Fn fn) {
                callSites(fn.body(), scope, fn);
                scope.put(l.var(), fn);
            } else if (l.rhs() instanceof Rhs.Call c && scope.get(c.fn()) != null) {
                callers.computeIfAbsent(scope.get(c.fn()), k -> new ArrayList<>()).add(new Site(b, c.args(), in));
            }
        }
    }

    private void walk(Block b, Rhs.Fn in) {
        for (Let l : b.lets()) {
            switch (l.rhs()) {
                case Rhs.Fn fn -> walk(fn.body(), fn);
                case Instr.Gather(var v, var i) -> trace(i, b, in, bound(b, in, v, 0), l);
                case Instr.TakeAlongAxis(var v, var i, var axis) -> trace(i, b, in, bound(b, in, v, axis), l);
                case Instr.SetRows(var t, var i, var ignored) -> trace(i, b, in, bound(b, in, t, 0), l);
                case Instr.ScatterAdd(var ignored, var i, var dest) -> trace(i, b, in, dest.shape().dim(0), l);
                case Instr.ScatterAlongAxis(var axis, var ignored, var i, var dest) -> trace(i, b, in, dest.shape().dim(axis), l);
                case Instr _, Rhs.Call _, Rhs.Handle _, Rhs.Tuple _ -> { }
            }
        }
    }

    /** The size of axis {@code axis} of v (a let of b or a parameter of fn {@code in}). */
    private static long bound(Block b, Rhs.Fn in, Var v, int axis) {
        Let l = b.binding(v);
        if (l != null) return l.tensorType().shape().dim(axis);
        for (Rhs.Param p : in.params()) if (p.name().equals(v)) return p.type().shape().dim(axis);
        throw new IllegalStateException(v + " is unbound");
    }

    /** Follows indices {@code v} of block b (in fn {@code in}, null at the top) to their sources. */
    private void trace(Var v, Block b, Rhs.Fn in, long bound, Let at) {
        Let l = b.binding(v);
        if (l == null) {
            if (in == null) throw refuse(at, v + " is not bound");
            int k = paramIndex(in, v);
            List<Site> sites = callers.getOrDefault(in, List.of());
            for (Site s : sites) trace(s.args().get(k), s.block(), s.in(), bound, at);
            return;
        }
        // Layout instructions keep the values; any other source is computed and cannot be checked first.
        Rhs r = l.rhs();
        if (r instanceof Instr.Input) checks.add(new Check(v.name(), bound, op(at), at));
        else if (r instanceof Instr.Literal(var t, var payload)) constant(payload, bound, at);
        else if (r instanceof Instr.Fill(var t, var value)) constant(new Payload(value), bound, at);
        else if (r instanceof Instr.Reshape(var x, var to)) trace(x, b, in, bound, at);
        else if (r instanceof Instr.Transpose(var x, var perm)) trace(x, b, in, bound, at);
        else if (r instanceof Instr.Broadcast(var x, var to)) trace(x, b, in, bound, at);
        else throw refuse(at, "they are computed by " + what(l) + " (let " + l.displayName() + ")");
    }

    private static String what(Let l) { return l.rhs() instanceof Instr i ? i.op() : l.rhs() instanceof Rhs.Call c ? "a call of " + c.fn() : "a tuple"; }

    private static int paramIndex(Rhs.Fn fn, Var v) {
        for (int i = 0; i < fn.params().size(); i++) if (fn.params().get(i).name().equals(v)) return i;
        throw new IllegalStateException(v + " is not a parameter");
    }

    private static String op(Let at) { return ((Instr) at.rhs()).op(); }

    private static void constant(Payload p, long bound, Let at) {
        for (int i = 0; i < p.size(); i++) {
            double v = p.at(i);
            if (v < 0 || v >= bound)
                throw new MlirError(at.pos(), "let " + at.displayName() + ": " + op(at) + " index out of bounds: the constant "
                        + (long) v + " is not in [0, " + bound + ")");
        }
    }

    private static MlirError refuse(Let at, String why) {
        return new MlirError(at.pos(), "let " + at.displayName() + ": the native engine cannot check the indices of " + op(at)
                + " before the call: " + why + "; it checks inputs and constants only (run it with --engine interpreter or plan)");
    }

    /**
     * Throws the interpreter's kind of error for the first index out of bounds among the inputs:
     * {@code let x: gather index out of bounds: input ids[0, 2] = 9, not in [0, 8)}.
     */
    static void verify(List<Check> checks, Map<String, Tensor> inputs) {
        for (Check c : checks) {
            Tensor t = inputs.get(c.input());
            if (t == null || t.dtype() != DType.I64) continue;          // the input check reports it
            long[] v = t.ints();
            for (int i = 0; i < v.length; i++)
                if (v[i] < 0 || v[i] >= c.bound())
                    throw new EvalError(c.op() + " index out of bounds: input " + c.input() + kina.eval.Kernels.position(t.shape(), i) + " = " + v[i]
                            + ", not in [0, " + c.bound() + ")").at(c.at());
        }
    }
}
