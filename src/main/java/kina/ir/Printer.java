package kina.ir;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Prints IR as kina surface syntax that the parser reads back (DESIGN §2.1; STYLE §(b)6).
 * Temporaries ({@link Var#temporary()}) are written inline at their single use, with the
 * parentheses precedence needs; a fn body is indented two spaces per level, one let per line
 * ({@code let x = e in}), the result on its own line. Floats print with {@link Double#toString}
 * (round trips exactly; {@code inf}, {@code -inf}, {@code nan} for the non-finite), I64 and I1
 * payloads as integers. ScatterAdd / ScatterAlongAxis print in a marked internal form
 * ({@code %scatter_add(u, ids, T)}) that the parser refuses.
 */
public final class Printer {
    private Printer() {}

    // precedence levels, loosest first: a printed form of level p may stand where level ≥ need is wanted
    private static final int EXPR = 0, SUM = 1, PROD = 2, UNARY = 3, POST = 4, ATOM = 5;

    private record Printed(String text, int prec) {}

    /** The whole program, ending with a newline. */
    public static String print(Program p) { return print(p.body()); }

    /** A block at the top level, ending with a newline. */
    public static String print(Block b) { return block(b, 0); }

    /** One instruction with its operands by name (temporaries appear as {@code %N}); for messages. */
    public static String rhs(Instr i) { return instr(i, (v, need) -> v.name()).text(); }

    @FunctionalInterface private interface Operands { String at(Var v, int need); }

    private static String block(Block b, int indent) {
        Map<Var, Rhs> temps = new HashMap<>();
        for (Let l : b.lets()) if (!l.destructure() && l.var().temporary()) temps.put(l.var(), l.rhs());
        String pad = "  ".repeat(indent);
        Operands[] ops = new Operands[1];
        ops[0] = (v, need) -> {
            Rhs r = temps.get(v);
            if (r == null) return v.name();
            Printed p = rhs(r, ops[0], indent);
            return p.prec() >= need ? p.text() : "(" + p.text() + ")";
        };
        StringBuilder sb = new StringBuilder();
        for (Let l : b.lets()) {
            if (!l.destructure() && l.var().temporary()) continue;
            String pat = l.destructure()
                    ? l.binders().stream().map(Var::name).collect(Collectors.joining(", ", "(", ")"))
                    : l.var().name();
            sb.append(pad).append("let ").append(pat).append(" = ").append(rhs(l.rhs(), ops[0], indent).text()).append(" in\n");
        }
        sb.append(pad).append(ops[0].at(b.result(), EXPR)).append('\n');
        return sb.toString();
    }

    private static Printed rhs(Rhs r, Operands o, int indent) {
        return switch (r) {
            case Instr i -> instr(i, o);
            case Rhs.Fn(List<Rhs.Param> params, Type result, Block body) -> new Printed(
                    params.stream().map(p -> p.name().name() + ": " + p.type())
                            .collect(Collectors.joining(", ", "fn(", ") -> "))
                            + resultType(result) + " {\n" + block(body, indent + 1) + "  ".repeat(indent) + "}",
                    EXPR);
            case Rhs.Call(Var fn, List<Var> args) -> new Printed(fn.name() + list(args, o), ATOM);
            case Rhs.Handle(Var fn, List<Var> args) ->
                    new Printed("handle " + fn.name() + list(args, o) + " with reverseMode", EXPR);
            case Rhs.Tuple(List<Var> elems) -> {
                if (elems.size() < 2)
                    throw new IllegalArgumentException("a tuple of " + elems.size() + " elements has no surface form");
                yield new Printed(list(elems, o), ATOM);
            }
        };
    }

    private static String list(List<Var> vs, Operands o) {
        return vs.stream().map(v -> o.at(v, EXPR)).collect(Collectors.joining(", ", "(", ")"));
    }

    private static String resultType(Type t) {
        return switch (t) {
            case TensorType tt -> tt.toString();
            case Type.Tuple(List<Type> elems) -> elems.stream().map(Printer::resultType).collect(Collectors.joining(", ", "(", ")"));
            case Type.Fn f -> throw new IllegalArgumentException("a fn cannot return a fn: " + f);
        };
    }

    /** The printer's column of DESIGN §3: every instruction, no default. */
    private static Printed instr(Instr i, Operands o) {
        return switch (i) {
            case Instr.Input(TensorType t) -> new Printed(t.toString(), ATOM);
            case Instr.Literal(TensorType t, Payload p) -> new Printed(t + " payload { " + payload(t.dtype(), p) + " }", ATOM);
            case Instr.Fill(TensorType t, double v) -> new Printed(
                    Double.doubleToRawLongBits(v) == Double.doubleToRawLongBits(1.0) ? "ones(" + t + ")"
                            : Double.doubleToRawLongBits(v) == 0L ? "zeros(" + t + ")"
                            : "fill(" + t + ", " + number(v) + ")", ATOM);
            case Instr.Neg(Var x) -> new Printed("-" + o.at(x, UNARY), UNARY);
            case Instr.Exp(Var x) -> method(o, x, "exp()");
            case Instr.Log(Var x) -> method(o, x, "log()");
            case Instr.Sqrt(Var x) -> method(o, x, "sqrt()");
            case Instr.Rsqrt(Var x) -> method(o, x, "rsqrt()");
            case Instr.Tanh(Var x) -> method(o, x, "tanh()");
            case Instr.Sigmoid(Var x) -> method(o, x, "sigmoid()");
            case Instr.Reciprocal(Var x) -> method(o, x, "reciprocal()");
            case Instr.Silu(Var x) -> method(o, x, "silu()");
            case Instr.Gelu(Var x) -> method(o, x, "gelu()");
            case Instr.Relu(Var x) -> method(o, x, "relu()");
            case Instr.Softcap(Var x, double cap) -> method(o, x, "softcap(cap=" + number(cap) + ")");
            case Instr.ArgMax(Var x, int axis) -> method(o, x, "argmax(axis=" + axis + ")");
            case Instr.Clamp(Var x, long lo, long hi) -> method(o, x, "clamp(lo=" + lo + ", hi=" + hi + ")");
            case Instr.Requant(Var x, int shift) -> method(o, x, "requant(shift=" + shift + ")");
            case Instr.Add(Var a, Var b) -> binary(o, a, " + ", b, SUM);
            case Instr.Sub(Var a, Var b) -> binary(o, a, " - ", b, SUM);
            case Instr.Mul(Var a, Var b) -> binary(o, a, " * ", b, PROD);
            case Instr.Div(Var a, Var b) -> binary(o, a, " / ", b, PROD);
            case Instr.Maximum(Var a, Var b) -> method(o, a, "maximum(" + o.at(b, EXPR) + ")");
            case Instr.Greater(Var a, Var b) -> method(o, a, "greater(" + o.at(b, EXPR) + ")");
            case Instr.Select(Var m, Var a, Var b) -> method(o, m, "select(" + o.at(a, EXPR) + ", " + o.at(b, EXPR) + ")");
            case Instr.Swiglu(Var g, Var u) -> method(o, g, "swiglu(" + o.at(u, EXPR) + ")");
            case Instr.Matmul(Var a, Var b) -> binary(o, a, " @ ", b, PROD);
            case Instr.Reshape(Var x, Shape to) -> method(o, x, "reshape(" + to + ")");
            case Instr.Transpose(Var x, Perm perm) -> method(o, x, "transpose(" + perm + ")");
            case Instr.Broadcast(Var x, Shape to) -> method(o, x, "broadcast(" + to + ")");
            case Instr.Sum(Var x, int axis, boolean keep) -> method(o, x, "sum(axis=" + axis + ", keepdims=" + keep + ")");
            case Instr.LogSoftmax(Var x, int axis) -> method(o, x, "log_softmax(axis=" + axis + ")");
            case Instr.Softmax(Var x, int axis) -> method(o, x, "softmax(axis=" + axis + ")");
            case Instr.RmsNorm(Var x, Optional<Var> w, Optional<Var> r, double eps) ->
                    method(o, x, "rmsnorm(" + opts(o, w, r) + "eps=" + number(eps) + ")");
            case Instr.LayerNorm(Var x, Optional<Var> w, Optional<Var> b, double eps) ->
                    method(o, x, "layernorm(" + opts(o, w, b) + "eps=" + number(eps) + ")");
            case Instr.L2Norm(Var x, double eps) -> method(o, x, "l2norm(eps=" + number(eps) + ")");
            case Instr.Rope(Var x, Var c, Var sn, int heads, int rotary, int start) -> method(o, x, "rope("
                    + o.at(c, EXPR) + ", " + o.at(sn, EXPR) + ", heads=" + heads
                    + (rotary != 0 ? ", rotary=" + rotary : "") + (start != 0 ? ", start=" + start : "") + ")");
            case Instr.Attention(Var q, Var k, Var v, Optional<Var> sinks, Instr.AttnOpts opts) -> method(o, q, "attention("
                    + o.at(k, EXPR) + ", " + o.at(v, EXPR) + ", " + opts(o, sinks) + attn(opts) + ")");
            case Instr.TakeAlongAxis(Var v, Var ids, int axis) ->
                    method(o, v, "take_along_axis(" + o.at(ids, EXPR) + ", axis=" + axis + ")");
            case Instr.Gather(Var v, Var ids) -> method(o, v, "gather(" + o.at(ids, EXPR) + ")");
            case Instr.SetRows(Var t, Var ids, Var rows) ->
                    method(o, t, "set_rows(" + o.at(ids, EXPR) + ", " + o.at(rows, EXPR) + ")");
            case Instr.ScatterAdd(Var u, Var ids, TensorType dest) ->
                    new Printed("%scatter_add(" + o.at(u, EXPR) + ", " + o.at(ids, EXPR) + ", " + dest + ")", ATOM);
            case Instr.ScatterAlongAxis(int axis, Var u, Var ids, TensorType dest) -> new Printed(
                    "%scatter_along_axis(" + o.at(u, EXPR) + ", " + o.at(ids, EXPR) + ", axis=" + axis + ", " + dest + ")", ATOM);
            case Instr.AttentionProbs(Var q, Var k, Optional<Var> sinks, Instr.AttnOpts opts, boolean col) -> new Printed(
                    "%attention_probs(" + o.at(q, EXPR) + ", " + o.at(k, EXPR) + ", " + opts(o, sinks) + attn(opts)
                            + ", sink_column=" + col + ")", ATOM);
            case Instr.AttentionProduct(Var a, Var b, Instr.AttnOpts opts, var form) -> new Printed(
                    "%" + form.op() + "(" + o.at(a, EXPR) + ", " + o.at(b, EXPR) + ", " + attn(opts) + ")", ATOM);
        };
    }

    /** The present optional operands, each followed by {@code ", "}. */
    @SafeVarargs
    private static String opts(Operands o, Optional<Var>... vs) {
        StringBuilder sb = new StringBuilder();
        for (Optional<Var> v : vs) v.ifPresent(x -> sb.append(o.at(x, EXPR)).append(", "));
        return sb.toString();
    }

    /** The keyword arguments of attention: heads and kv_heads, then those that differ from their default. */
    private static String attn(Instr.AttnOpts a) {
        return "heads=" + a.heads() + ", kv_heads=" + a.kvHeads()
                + (Double.isNaN(a.scale()) ? "" : ", scale=" + number(a.scale()))
                + (a.softcap() != 0 ? ", softcap=" + number(a.softcap()) : "")
                + (a.window() != 0 ? ", window=" + a.window() : "")
                + (a.chunk() != 0 ? ", chunk=" + a.chunk() : "")
                + (a.start() != 0 ? ", start=" + a.start() : "");
    }

    private static Printed method(Operands o, Var receiver, String call) {
        return new Printed(o.at(receiver, POST) + "." + call, POST);
    }

    /** Left-associative: the left operand may be of the same level, the right one must bind tighter. */
    private static Printed binary(Operands o, Var a, String op, Var b, int level) {
        return new Printed(o.at(a, level) + op + o.at(b, level + 1), level);
    }

    private static String payload(DType d, Payload p) {
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < p.size(); k++) {
            if (k > 0) sb.append(", ");
            double v = p.at(k);
            boolean integral = d.discrete() && v == Math.rint(v) && Math.abs(v) <= 0x1p53;
            if (integral && Double.doubleToRawLongBits(v) == Double.doubleToRawLongBits(-0.0)) sb.append("-0");
            else if (integral) sb.append((long) v);
            else sb.append(number(v));
        }
        return sb.toString();
    }

    /** A float that reads back to the same bits (NaN payload bits aside). */
    private static String number(double v) {
        if (Double.isNaN(v)) return "nan";
        if (Double.isInfinite(v)) return v > 0 ? "inf" : "-inf";
        return Double.toString(v);
    }
}
