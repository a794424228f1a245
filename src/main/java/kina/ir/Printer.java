package kina.ir;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * Prints IR as kina surface syntax that the parser reads back (docs/language.md).
 * Temporaries ({@link Var#temporary()}) are written inline at their single use, with the
 * parentheses precedence needs; a fn body is indented two spaces per level, one let per line
 * ({@code let x = e in}), the result on its own line. Floats print with {@link Double#toString}
 * (round trips exactly; {@code inf}, {@code -inf}, {@code nan} for the non-finite), I64 and I1
 * payloads as integers. IR-internal instructions print in a marked form
 * ({@code %scatter_add(u, ids, T)}), which the parser reads back.
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
    public static String rhs(Instr i) { return instr(i, (v, need) -> v.name(), 0).text(); }

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
            case Instr i -> instr(i, o, indent);
            case Rhs.Fn(List<Rhs.Param> params, Type result, Block body) -> new Printed(
                    params.stream().map(p -> p.name().name() + ": " + p.type())
                            .collect(Collectors.joining(", ", "fn(", ") -> "))
                            + resultType(result) + " {\n" + block(body, indent + 1) + "  ".repeat(indent) + "}",
                    EXPR);
            case Rhs.Call(Var fn, List<Var> args) -> new Printed(fn.name() + list(args, o), ATOM);
            case Rhs.Handle(Var fn, List<Var> args, Rhs.Mode mode) -> new Printed("handle " + fn.name() + list(args, o) + " with "
                    + switch (mode) {
                        case Rhs.Mode.ReverseMode _ -> "reverseMode";
                        case Rhs.Mode.ForwardMode(List<Var> tangents) -> "forwardMode" + list(tangents, o);
                    }, EXPR);
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

    /**
     * An instruction: the grammar's operators, inputs, literals and fills here, every other
     * instruction by its entry in the {@link Syntax} table (the parser reads the same table).
     */
    private static Printed instr(Instr i, Operands o, int indent) {
        if (i instanceof Instr.Input(TensorType t)) return new Printed(t.toString(), ATOM);
        if (i instanceof Instr.Literal(TensorType t, Payload p)) return new Printed(t + " payload { " + payload(t.dtype(), p) + " }", ATOM);
        if (i instanceof Instr.Fill(TensorType t, double v)) return new Printed(
                Double.doubleToRawLongBits(v) == Double.doubleToRawLongBits(1.0) ? "ones(" + t + ")"
                        : Double.doubleToRawLongBits(v) == 0L ? "zeros(" + t + ")"
                        : "fill(" + t + ", " + number(v) + ")", ATOM);
        if (i instanceof Instr.Neg(Var x)) return new Printed("-" + o.at(x, UNARY), UNARY);
        if (i instanceof Instr.Add(Var a, Var b)) return binary(o, a, " + ", b, SUM);
        if (i instanceof Instr.Sub(Var a, Var b)) return binary(o, a, " - ", b, SUM);
        if (i instanceof Instr.Mul(Var a, Var b)) return binary(o, a, " * ", b, PROD);
        if (i instanceof Instr.Div(Var a, Var b)) return binary(o, a, " / ", b, PROD);
        if (i instanceof Instr.Matmul(Var a, Var b)) return binary(o, a, " @ ", b, PROD);
        Syntax.Form f = Syntax.of(i);
        if (f == null) throw new IllegalStateException(i.op() + " has no surface form in the Syntax table");
        Syntax.Args a = f.parts().apply(i);
        List<String> inside = new ArrayList<>();
        List<Syntax.Arg> kinds = f.positional();
        for (int k = f.internal() ? 0 : 1; k < kinds.size(); k++) {
            Object v = a.pos().get(k);
            switch (kinds.get(k)) {
                case TENSOR, OPT_TENSOR -> { if (v != null) inside.add(o.at((Var) v, EXPR)); }
                case TENSORS -> { for (Var x : a.vars(k)) inside.add(o.at(x, EXPR)); }
                case SHAPE, PERM, TYPE -> inside.add(v.toString());
                case FN -> inside.add(rhs((Rhs.Fn) v, o, indent).text());
            }
        }
        for (Syntax.Kw kw : f.keywords()) {
            Object v = a.kw().get(kw.name());
            if (kw.dflt() != null && !kw.shown() && Objects.equals(v, kw.dflt())) continue;
            inside.add(kw.name() + "=" + (kw.kind() == Syntax.KwKind.NUMBER ? number((Double) v) : String.valueOf(v)));
        }
        String call = f.name() + "(" + String.join(", ", inside) + ")";
        return f.internal() ? new Printed("%" + call, ATOM) : new Printed(o.at(a.var(0), POST) + "." + call, POST);
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
