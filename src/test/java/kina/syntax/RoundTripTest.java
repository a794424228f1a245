package kina.syntax;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Payload;
import kina.ir.Perm;
import kina.ir.Placement;
import kina.ir.Pos;
import kina.ir.Positions;
import kina.ir.Printer;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/**
 * parse ∘ print is the identity on IR (positions aside), and print is a fixpoint, for random
 * programs generated as source (nested expressions, temporaries) and as IR (flat named lets).
 */
class RoundTripTest {

    private static void roundTrips(Program p) {
        String printed = Printer.print(p);
        Program q;
        try {
            q = Parser.parse(p.file(), printed);
        } catch (SyntaxError e) {
            throw new AssertionError(e.oneLine() + " in\n" + printed, e);
        }
        assertThat(Positions.strip(q)).as("parse(print(p)) for\n%s", printed).isEqualTo(Positions.strip(p));
        assertThat(Printer.print(q)).isEqualTo(printed);
    }

    @Property(tries = 400)
    void sourceProgramsReadBackThroughThePrinter(@ForAll long seed) {
        String src = new SourceGen(new Random(seed)).program();
        Program p;
        try {
            p = Parser.parse("g.kina", src);
        } catch (SyntaxError e) {
            throw new AssertionError(e.oneLine() + " in generated source\n" + src, e);
        }
        roundTrips(p);
    }

    @Property(tries = 400)
    void irProgramsReadBackThroughThePrinter(@ForAll long seed) {
        roundTrips(new Program("g.kina", new IrGen(new Random(seed)).block(0, new ArrayList<>(), new ArrayList<>())));
    }

    // ---- shared random pieces -----------------------------------------------------------------

    static TensorType type(Random r) {
        int rank = r.nextInt(4);
        long[] d = new long[rank];
        for (int i = 0; i < rank; i++) d[i] = r.nextInt(10);
        return new TensorType(DType.values()[r.nextInt(DType.values().length)], new Shape(d),
                r.nextInt(4) == 0 ? Placement.DEVICE : Placement.HOST);
    }

    static double number(Random r, DType d) {
        if (d.discrete()) return r.nextInt(5) == 0 ? r.nextLong(-(1L << 53), 1L << 53) : r.nextInt(-100, 100);
        return switch (r.nextInt(10)) {
            case 0 -> -0.0;
            case 1 -> 0.0;
            case 2 -> 1.0;
            case 3 -> r.nextBoolean() ? Double.POSITIVE_INFINITY : Double.NEGATIVE_INFINITY;
            case 4 -> Double.NaN;
            case 5 -> (double) (float) r.nextGaussian();
            case 6 -> r.nextInt(-1000, 1000);
            case 7 -> {
                double x = Double.longBitsToDouble(r.nextLong());
                yield Double.isNaN(x) ? 1e-300 : x;
            }
            case 8 -> Double.MIN_VALUE * r.nextInt(1, 5);
            default -> r.nextGaussian() * Math.pow(10, r.nextInt(-30, 30));
        };
    }

    static double[] payload(Random r, DType d) {
        double[] v = new double[r.nextInt(5)];
        for (int i = 0; i < v.length; i++) v[i] = number(r, d);
        return v;
    }

    // ---- source programs -----------------------------------------------------------------------

    /** Random well-formed kina source: lets, fns, destructuring, handles, nested expressions, comments. */
    static final class SourceGen {
        private final Random r;
        private int fresh;

        SourceGen(Random r) { this.r = r; }

        record Fn(String name, int arity) {}

        String program() { return block(new ArrayList<>(), new ArrayList<>(), 0); }

        private String name() { return (r.nextBoolean() ? "x" : "g_") + fresh++; }

        private String sp() {
            return switch (r.nextInt(12)) {
                case 0 -> "\n   ";
                case 1 -> " // note\n";
                case 2 -> "";
                default -> " ";
            };
        }

        private String block(List<String> names, List<Fn> fns, int depth) {
            StringBuilder sb = new StringBuilder();
            int n = r.nextInt(depth == 0 ? 6 : 4);
            for (int k = 0; k < n; k++) {
                switch (r.nextInt(depth < 2 ? 5 : 4)) {
                    case 0 -> { // destructuring
                        List<String> bs = new ArrayList<>();
                        int m = 2 + r.nextInt(3);
                        for (int i = 0; i < m; i++) bs.add(name());
                        String rhs;
                        if (!fns.isEmpty() && r.nextBoolean()) {
                            Fn f = fns.get(r.nextInt(fns.size()));
                            rhs = "handle " + f.name() + args(names, fns, f.arity(), 2);
                            if (r.nextBoolean()) rhs += sp();
                            rhs += r.nextInt(3) == 0 ? " with forwardMode" + args(names, fns, r.nextInt(3), 2) : " with reverseMode";
                        } else {
                            List<String> es = new ArrayList<>();
                            for (int i = 0; i < m; i++) es.add(expr(names, fns, 2, true));
                            rhs = "(" + String.join("," + sp(), es) + ")";
                        }
                        sb.append("let (").append(String.join(", ", bs)).append(") =").append(sp()).append(rhs).append(" in\n");
                        names.addAll(bs);
                    }
                    case 4 -> { // fn
                        String f = name();
                        sb.append("let ").append(f).append(" = ").append(fn(fns, depth)).append(" in\n");
                        fns.add(new Fn(f, lastArity));
                    }
                    default -> {
                        String x = name();
                        sb.append("let ").append(x).append(" =").append(sp()).append(expr(names, fns, 3, false)).append(" in\n");
                        names.add(x);
                    }
                }
            }
            sb.append(expr(names, fns, 3, true)).append('\n');
            return sb.toString();
        }

        private int lastArity;

        private String fn(List<Fn> outerFns, int depth) {
            int arity = r.nextInt(4);
            List<String> params = new ArrayList<>();
            StringBuilder sb = new StringBuilder("fn(");
            for (int i = 0; i < arity; i++) {
                String p = name();
                params.add(p);
                sb.append(i > 0 ? ", " : "").append(p).append(": ").append(type(r));
            }
            sb.append(") -> ");
            if (r.nextBoolean()) sb.append(type(r));
            else {
                int m = 1 + r.nextInt(3);
                sb.append("(");
                for (int i = 0; i < m; i++) sb.append(i > 0 ? ", " : "").append(type(r));
                sb.append(")");
            }
            sb.append(" {\n").append(block(params, new ArrayList<>(outerFns), depth + 1)).append("}");
            lastArity = arity;
            return sb.toString();
        }

        private String args(List<String> names, List<Fn> fns, int n, int depth) {
            List<String> as = new ArrayList<>();
            for (int i = 0; i < n; i++) as.add(expr(names, fns, depth, true));
            return "(" + String.join(", ", as) + ")";
        }

        private String num(DType d) {
            double v = number(r, d);
            if (Double.isNaN(v)) return "nan";
            if (Double.isInfinite(v)) return v > 0 ? "inf" : "-inf";
            if (v == Math.rint(v) && Math.abs(v) < 1e15 && r.nextBoolean())
                return (Double.doubleToRawLongBits(v) == Double.doubleToRawLongBits(-0.0) ? "-" : "") + (long) v;
            String s = Double.toString(v);
            return r.nextBoolean() ? s.replace("E", "e") : s;
        }

        private String leaf(List<String> names, boolean allowName) {
            int k = r.nextInt(allowName && !names.isEmpty() ? 8 : 4);
            TensorType t = type(r);
            return switch (k) {
                case 0 -> t.toString();
                case 1 -> {
                    StringBuilder sb = new StringBuilder(t + " payload {");
                    int n = r.nextInt(5);
                    for (int i = 0; i < n; i++) sb.append(i > 0 ? "," + sp() : " ").append(num(t.dtype()));
                    yield sb.append(" }").toString();
                }
                case 2 -> switch (r.nextInt(3)) {
                    case 0 -> "ones(" + t + ")";
                    case 1 -> "zeros(" + t + ")";
                    default -> "fill(" + t + ", " + num(t.dtype()) + ")";
                };
                case 3 -> "fill(" + t + "," + sp() + num(DType.F32) + ")";
                default -> {
                    String n = names.get(r.nextInt(names.size()));
                    yield r.nextInt(8) == 0 ? "(" + n + ")" : n;
                }
            };
        }

        private String ints(boolean nonNegative) {
            int n = r.nextInt(4);
            List<String> xs = new ArrayList<>();
            for (int i = 0; i < n; i++) xs.add(String.valueOf(nonNegative ? r.nextInt(10) : r.nextInt(-3, 5)));
            return "[" + String.join(", ", xs) + "]";
        }

        private String expr(List<String> names, List<Fn> fns, int depth, boolean allowName) {
            if (depth <= 0) return leaf(names, allowName);
            String e = switch (r.nextInt(allowName ? 9 : 8)) {
                case 0 -> "-" + paren(expr(names, fns, depth - 1, true));
                case 1 -> paren(expr(names, fns, depth - 1, true)) + sp()
                        + List.of("+", "-", "*", "/", "@").get(r.nextInt(5)) + sp() + paren(expr(names, fns, depth - 1, true));
                case 2, 3 -> paren(expr(names, fns, depth - 1, true)) + "." + method(names, fns, depth);
                case 4 -> fns.isEmpty() ? leaf(names, allowName)
                        : fns.get(r.nextInt(fns.size())).name() + args(names, fns, fns.get(r.nextInt(fns.size())).arity(), depth - 1);
                case 5 -> {
                    int m = 2 + r.nextInt(2);
                    List<String> es = new ArrayList<>();
                    for (int i = 0; i < m; i++) es.add(expr(names, fns, depth - 1, true));
                    yield "(" + String.join(", ", es) + ")";
                }
                case 6 -> {
                    if (fns.isEmpty()) yield leaf(names, allowName);
                    Fn f = fns.get(r.nextInt(fns.size()));
                    yield "(handle " + f.name() + args(names, fns, f.arity(), depth - 1) + " with reverseMode)";
                }
                case 7 -> r.nextInt(3) == 0 ? "(" + fn(fns, 2) + ")" : leaf(names, allowName);
                default -> leaf(names, allowName);
            };
            return e;
        }

        /** Parenthesised at random; always when the operand is not obviously an atom. */
        private String paren(String e) { return "(" + e + ")"; }

        private String method(List<String> names, List<Fn> fns, int depth) {
            return switch (r.nextInt(10)) {
                case 0 -> "exp()";
                case 1 -> "log()";
                case 2 -> "reshape(" + ints(true) + ")";
                case 3 -> "transpose(" + ints(false) + ")";
                case 4 -> "broadcast(" + ints(true) + ")";
                case 5 -> switch (r.nextInt(3)) {
                    case 0 -> "sum(axis=" + r.nextInt(-1, 4) + ")";
                    case 1 -> "sum(axis=" + r.nextInt(4) + ", keepdims=" + r.nextBoolean() + ")";
                    default -> "sum(keepdims=" + r.nextBoolean() + "," + sp() + "axis=" + r.nextInt(4) + ")";
                };
                case 6 -> "softmax(axis=" + r.nextInt(4) + ")";
                case 7 -> "log_softmax(axis=" + r.nextInt(4) + ")";
                case 8 -> "take_along_axis(" + expr(names, fns, depth - 1, true) + ", axis=" + r.nextInt(4) + ")";
                default -> "gather(" + expr(names, fns, depth - 1, true) + ")";
            };
        }
    }

    // ---- IR programs ---------------------------------------------------------------------------

    /** Random IR with only user lets (no temporaries): every instruction but the internal scatters. */
    static final class IrGen {
        private final Random r;
        private int fresh;

        IrGen(Random r) { this.r = r; }

        private Var name() { return new Var("v" + fresh++); }

        private Var pick(List<Var> vs) { return vs.isEmpty() ? new Var("free" + r.nextInt(3)) : vs.get(r.nextInt(vs.size())); }

        Block block(int depth, List<Var> scope, List<Var> fns) {
            List<Let> lets = new ArrayList<>();
            int n = 1 + r.nextInt(6);
            for (int k = 0; k < n; k++) {
                int kind = r.nextInt(depth < 2 ? 6 : 5);
                if (kind == 5) {
                    int arity = r.nextInt(3);
                    List<Rhs.Param> ps = new ArrayList<>();
                    for (int i = 0; i < arity; i++) ps.add(new Rhs.Param(name(), type(r), Pos.NONE));
                    Type res = r.nextBoolean() ? type(r) : new Type.Tuple(List.of(type(r), type(r)));
                    Var f = name();
                    lets.add(Let.of(f, new Rhs.Fn(ps, res, block(depth + 1, new ArrayList<>(ps.stream().map(Rhs.Param::name).toList()), new ArrayList<>(fns))), Pos.NONE));
                    fns.add(f);
                } else if (kind == 4) {
                    List<Var> bs = List.of(name(), name());
                    Rhs rhs = fns.isEmpty() || r.nextBoolean() ? new Rhs.Tuple(List.of(pick(scope), pick(scope)))
                            : new Rhs.Handle(pick(fns), List.of(pick(scope)), r.nextBoolean() ? new Rhs.Mode.ReverseMode()
                                    : new Rhs.Mode.ForwardMode(List.of(pick(scope))));
                    lets.add(new Let(bs, true, rhs, Pos.NONE, null, null));
                    scope.addAll(bs);
                } else {
                    Var x = name();
                    Rhs rhs = kind == 3 && !fns.isEmpty() ? new Rhs.Call(pick(fns), List.of(pick(scope), pick(scope)))
                            : instr(scope);
                    lets.add(Let.of(x, rhs, Pos.NONE));
                    scope.add(x);
                }
            }
            return new Block(lets, pick(scope), Pos.NONE);
        }

        private Instr instr(List<Var> s) {
            TensorType t = type(r);
            int axis = r.nextInt(-1, 4);
            return switch (r.nextInt(20)) {
                case 0 -> new Instr.Input(t);
                case 1 -> new Instr.Literal(t, new Payload(payload(r, t.dtype())));
                case 2 -> new Instr.Fill(t, number(r, DType.F64));
                case 3 -> new Instr.Neg(pick(s));
                case 4 -> new Instr.Exp(pick(s));
                case 5 -> new Instr.Log(pick(s));
                case 6 -> new Instr.Add(pick(s), pick(s));
                case 7 -> new Instr.Sub(pick(s), pick(s));
                case 8 -> new Instr.Mul(pick(s), pick(s));
                case 9 -> new Instr.Div(pick(s), pick(s));
                case 10 -> new Instr.Matmul(pick(s), pick(s));
                case 11 -> new Instr.Reshape(pick(s), t.shape());
                case 12 -> new Instr.Transpose(pick(s), new Perm(r.ints(r.nextInt(4), -2, 5).toArray()));
                case 13 -> new Instr.Broadcast(pick(s), t.shape());
                case 14 -> new Instr.Sum(pick(s), axis, r.nextBoolean());
                case 15 -> new Instr.LogSoftmax(pick(s), axis);
                case 16 -> new Instr.Softmax(pick(s), axis);
                case 17 -> new Instr.TakeAlongAxis(pick(s), pick(s), axis);
                case 18 -> new Instr.Gather(pick(s), pick(s));
                default -> new Instr.Input(t);
            };
        }
    }
}
