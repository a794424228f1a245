package kina.syntax;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Payload;
import kina.ir.Perm;
import kina.ir.Placement;
import kina.ir.Pos;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.Syntax;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;
import kina.syntax.Lexer.Kind;
import kina.syntax.Lexer.Token;

/**
 * The kina parser (the grammar: docs/language.md), producing the let-chain IR in A-normal form: every nested
 * sub-expression that is not a bare identifier is bound to a temporary {@code %N} (one counter per
 * program, post-order), placed just before the let that uses it, with {@code owner} the display
 * name of the enclosing user let ({@code "result"} for the program's result expression; a fn
 * body's result expression belongs to the let that binds the fn).
 *
 * <p>It checks grammar only; scoping and types are kina.check's. Errors are {@link SyntaxError}s
 * at the offending token: {@code expected ')' but found 'in'}.
 */
public final class Parser {

    private static String internalAsMethod(String name) {
        return name + " is IR-internal (made by transform_ad): write it %" + name + "(…), operands inside the parentheses";
    }

    // ---- operands: an expression parsed but not yet bound ----------------------------------

    /** A parsed expression: a bare name, or an Rhs still to be bound (to a user let or a temporary). */
    private sealed interface Operand {
        Pos pos();
    }

    private record Name(Var var, Pos pos) implements Operand {}

    private record Pending(Rhs rhs, Pos pos) implements Operand {}

    /**
     * The deepest nesting the parser accepts: of parentheses, fn literals, handle and call
     * arguments and unary minus (the parser's recursion), and of an expression's sub-expressions
     * (a method chain counts each call), which the checker, transform_ad and the printer walk
     * recursively. Deeper source is a SyntaxError naming the limit, never a stack overflow.
     */
    public static final int MAX_DEPTH = 256;

    // ---- state ---------------------------------------------------------------------------------

    private final List<Token> toks;
    private int at;
    private int temps;
    private List<Let> out;
    private String owner;
    private int depth;                                       // the parser's recursion, see MAX_DEPTH
    private final Map<Var, Integer> nesting = new HashMap<>();   // a temporary → how deep its expression nests

    private Parser(List<Token> toks) { this.toks = toks; }

    /** Parses a whole program; {@code file} names it in positions. Throws SyntaxError. */
    public static Program parse(String file, String source) {
        Parser p = new Parser(Lexer.lex(file, source));
        Block body = p.block("result");
        p.expectEnd();
        return new Program(file, body);
    }

    // ---- blocks and lets -----------------------------------------------------------------------

    /** {@code (let pat = expr in)* expr}; temporaries of the result expression are owned by {@code resultOwner}. */
    private Block block(String resultOwner) {
        List<Let> savedOut = out;
        String savedOwner = owner;
        out = new ArrayList<>();
        while (peek().is("let")) {
            Token letTok = next();
            List<Var> binders = new ArrayList<>();
            boolean destructure = peek().is("(");
            if (destructure) {
                next();
                binders.add(new Var(ident("a name").text()));
                while (accept(",")) binders.add(new Var(ident("a name").text()));
                expect(")");
            } else {
                binders.add(new Var(ident("a name or '(' after 'let'").text()));
            }
            expect("=");
            owner = destructure ? binders.toString() : binders.getFirst().name();
            Operand e = expr();
            if (e instanceof Name(Var y, Pos p)) {
                String pat = destructure ? binders.stream().map(Var::name).collect(Collectors.joining(", ", "(", ")"))
                        : binders.getFirst().name();
                throw new SyntaxError(p, "let " + pat + " = " + y + " only renames " + y + "; use " + y + " directly");
            }
            expect("in");
            out.add(new Let(binders, destructure, ((Pending) e).rhs(), letTok.pos(), null, null));
        }
        owner = resultOwner;
        Pos resultPos = peek().pos();
        Var result = bind(expr());
        Block b = new Block(out, result, resultPos);
        out = savedOut;
        owner = savedOwner;
        return b;
    }

    /** The Var of an operand: a bare name as is, an expression as a new temporary let. */
    private Var bind(Operand o) {
        return switch (o) {
            case Name n -> n.var();
            case Pending(Rhs rhs, Pos pos) -> {
                Var t = new Var("%" + temps++);
                int d = 1;
                for (Var v : rhs.reads()) d = Math.max(d, 1 + nesting.getOrDefault(v, 0));
                if (d > MAX_DEPTH)
                    throw new SyntaxError(pos, "expression nested more than " + MAX_DEPTH + " levels deep; bind parts of it with let");
                nesting.put(t, d);
                out.add(new Let(List.of(t), false, rhs, pos, owner, null));
                yield t;
            }
        };
    }

    /** The instruction of form {@code f} from its arguments; a form that refuses them is a SyntaxError at {@code at}. */
    private static Instr build(Syntax.Form f, Syntax.Args args, Token at) {
        try {
            return f.build().apply(args);
        } catch (IllegalArgumentException e) {
            throw new SyntaxError(at.pos(), (f.internal() ? "%" : "") + f.name() + ": " + e.getMessage());
        }
    }

    // ---- expressions ---------------------------------------------------------------------------

    /** {@code fn … | handle … | sum}; a let chain is only a whole program or fn body. */
    private Operand expr() {
        Token t = peek();
        if (t.is("let"))
            throw new SyntaxError(t.pos(), "a let chain can only be a whole program or fn body; bind its lets before this expression");
        enter(t);
        try {
            if (t.is("fn")) return fn();
            if (t.is("handle")) return handle();
            return sum();
        } finally {
            depth--;
        }
    }

    /** One level deeper in the parser's recursion; a SyntaxError at {@code t} past {@link #MAX_DEPTH}. */
    private void enter(Token t) {
        if (++depth > MAX_DEPTH) {
            depth = 0;
            throw new SyntaxError(t.pos(), "source nested more than " + MAX_DEPTH
                    + " levels deep (parentheses, fn literals, arguments or unary minus); bind parts of it with let");
        }
    }

    private Operand fn() {
        Pos pos = next().pos();
        expect("(");
        List<Rhs.Param> params = new ArrayList<>();
        if (!peek().is(")")) {
            do {
                Token name = ident("a parameter name");
                expect(":");
                params.add(new Rhs.Param(new Var(name.text()), tensorType(), name.pos()));
            } while (accept(","));
        }
        expect(")");
        expect("->");
        Type result;
        if (accept("(")) {
            List<Type> elems = new ArrayList<>();
            do elems.add(tensorType()); while (accept(","));
            expect(")");
            result = new Type.Tuple(elems);
        } else {
            result = tensorType();
        }
        expect("{");
        Block body = block(owner);
        expect("}");
        return new Pending(new Rhs.Fn(params, result, body), pos);
    }

    /** {@code handle f(args) with reverseMode} or {@code … with forwardMode(tangents)}. */
    private Operand handle() {
        Pos pos = next().pos();
        Var f = new Var(ident("the name of a fn after 'handle'").text());
        List<Var> args = args();
        expect("with");
        if (accept("reverseMode")) return new Pending(new Rhs.Handle(f, args, new Rhs.Mode.ReverseMode()), pos);
        if (accept("forwardMode")) return new Pending(new Rhs.Handle(f, args, new Rhs.Mode.ForwardMode(args())), pos);
        throw expected("'reverseMode' or 'forwardMode(tangents…)'", peek());
    }

    /** {@code ( expr, … )} after a callee, each argument bound. */
    private List<Var> args() {
        expect("(");
        List<Var> args = new ArrayList<>();
        if (!peek().is(")")) {
            do args.add(bind(expr())); while (accept(","));
        }
        expect(")");
        return args;
    }

    private Operand sum() {
        Operand left = prod();
        while (peek().is("+") || peek().is("-")) {
            String op = next().text();
            Var a = bind(left);
            Var b = bind(prod());
            left = new Pending(op.equals("+") ? new Instr.Add(a, b) : new Instr.Sub(a, b), left.pos());
        }
        return left;
    }

    private Operand prod() {
        Operand left = unary();
        while (peek().is("*") || peek().is("/") || peek().is("@")) {
            String op = next().text();
            Var a = bind(left);
            Var b = bind(unary());
            Instr i = switch (op) {
                case "*" -> new Instr.Mul(a, b);
                case "/" -> new Instr.Div(a, b);
                default -> new Instr.Matmul(a, b);
            };
            left = new Pending(i, left.pos());
        }
        return left;
    }

    private Operand unary() {
        if (peek().is("-")) {
            Token minus = next();
            enter(minus);
            try {
                return new Pending(new Instr.Neg(bind(unary())), minus.pos());
            } finally {
                depth--;
            }
        }
        return post();
    }

    private Operand post() {
        Operand x = atom();
        while (accept(".")) {
            Token name = peek();
            if (name.kind() != Kind.IDENT) throw expected("a method name after '.'", name);
            next();
            Syntax.Form m = Syntax.method(name.text());
            if (m == null && Syntax.internal(name.text()) != null) throw new SyntaxError(name.pos(), internalAsMethod(name.text()));
            if (m == null)
                throw new SyntaxError(name.pos(), "unknown method '" + name.text() + "'; known methods: "
                        + String.join(", ", Syntax.methodNames()));
            Var receiver = bind(x);
            x = new Pending(build(m, formArgs(m, receiver), name), x.pos());
        }
        return x;
    }

    /**
     * {@code ( positionals…, kw=v, … )} of form m (after a method's receiver, which leads the
     * positionals); defaults filled, missing or unknown keywords refused.
     */
    private Syntax.Args formArgs(Syntax.Form m, Var receiver) {
        expect("(");
        List<Object> pos = new ArrayList<>();
        if (receiver != null) pos.add(receiver);
        List<Syntax.Arg> kinds = m.inParentheses();
        boolean any = false;
        for (int k = 0; k < kinds.size(); k++) {
            Syntax.Arg kind = kinds.get(k);
            if (kind == Syntax.Arg.OPT_TENSOR) {          // present unless ')' or a keyword comes next
                int look = any ? at + 1 : at;
                boolean present = (any ? peek().is(",") : !peek().is(")"))
                        && !(toks.get(look).kind() == Kind.IDENT && look + 1 < toks.size() && toks.get(look + 1).is("="));
                if (!present) {
                    for (; k < kinds.size(); k++) pos.add(null);
                    break;
                }
            }
            if (any && kind != Syntax.Arg.TENSORS) expect(",");
            pos.add(switch (kind) {
                case TENSOR, OPT_TENSOR -> bind(expr());
                case TENSORS -> {                                // zero or more, up to a keyword, a fn or ')'
                    List<Var> vs = new ArrayList<>();
                    boolean more = any ? peek().is(",") && !keywordOrFn(at + 1) : !peek().is(")") && !keywordOrFn(at);
                    if (more && any) next();
                    while (more) {
                        vs.add(bind(expr()));
                        more = peek().is(",") && !keywordOrFn(at + 1);
                        if (more) next();
                    }
                    yield List.copyOf(vs);
                }
                case SHAPE -> new Shape(dims());
                case PERM -> new Perm(ints());
                case TYPE -> tensorType();
                case FN -> {
                    if (!peek().is("fn")) throw expected("a fn literal", peek());
                    yield ((Pending) fn()).rhs();
                }
            });
            any |= !(kind == Syntax.Arg.TENSORS && ((List<?>) pos.getLast()).isEmpty());
        }
        Map<String, Object> kw = new HashMap<>();
        if (m.keywords().isEmpty()) {
            expect(")");
        } else {
            String known = m.keywords().stream().map(k -> k.name() + "=").collect(Collectors.joining(", "));
            boolean first = !any;
            while (!peek().is(")")) {
                if (!first && !accept(",")) throw expected("',' or ')'", peek());
                first = false;
                Token name = peek();
                if (name.kind() != Kind.IDENT || !toks.get(at + 1).is("="))
                    throw expected("a keyword argument of " + m.name() + " (" + known + ")", name);
                next();
                next();
                Syntax.Kw spec = m.keywords().stream().filter(k -> k.name().equals(name.text())).findFirst().orElseThrow(
                        () -> new SyntaxError(name.pos(), "unknown keyword argument '" + name.text() + "' of "
                                + m.name() + "; it takes " + known));
                if (kw.containsKey(spec.name()))
                    throw new SyntaxError(name.pos(), "keyword argument '" + spec.name() + "' given twice");
                kw.put(spec.name(), switch (spec.kind()) {
                    case INT -> integer();
                    case BOOL -> bool();
                    case NUMBER -> number();
                });
            }
            Token close = peek();
            for (Syntax.Kw k : m.keywords()) {
                if (kw.containsKey(k.name())) continue;
                if (k.dflt() == null)
                    throw new SyntaxError(close.pos(), "missing keyword argument '" + k.name() + "' of " + m.name()
                            + " (write " + m.name() + "(…, " + k.name() + "=…))");
                kw.put(k.name(), k.dflt());
            }
            expect(")");
        }
        return new Syntax.Args(pos, kw);
    }

    /** Whether the token at {@code i} starts a keyword argument ({@code name =}) or a fn literal. */
    private boolean keywordOrFn(int i) {
        return toks.get(i).is("fn") || toks.get(i).kind() == Kind.IDENT && i + 1 < toks.size() && toks.get(i + 1).is("=");
    }

    private Operand atom() {
        Token t = peek();
        switch (t.kind()) {
            case IDENT -> {
                next();
                if (peek().is("(")) return new Pending(new Rhs.Call(new Var(t.text()), args()), t.pos());
                return new Name(new Var(t.text()), t.pos());
            }
            case INTERNAL -> {                              // %name(…): an IR-internal instruction, as the printer writes it
                Syntax.Form f = Syntax.internal(t.text().substring(1));
                if (f == null) {
                    List<String> forms = Syntax.forms().stream().filter(Syntax.Form::internal).map(x -> "%" + x.name()).toList();
                    throw new SyntaxError(t.pos(), "'" + t.text() + "' is not an IR-internal instruction ("
                            + String.join(", ", forms) + "); a temporary's name is never written: write the expression itself");
                }
                next();
                return new Pending(build(f, formArgs(f, null), t), t.pos());
            }
            case KEYWORD -> {
                if (t.is("tensor")) {
                    TensorType type = tensorType();
                    if (!accept("payload")) return new Pending(new Instr.Input(type), t.pos());
                    expect("{");
                    List<Double> vs = new ArrayList<>();
                    if (!peek().is("}")) {
                        do vs.add(number()); while (accept(","));
                    }
                    expect("}");
                    double[] values = new double[vs.size()];
                    for (int k = 0; k < values.length; k++) values[k] = vs.get(k);
                    return new Pending(new Instr.Literal(type, new Payload(values)), t.pos());
                }
                if (t.is("ones") || t.is("zeros") || t.is("fill")) {
                    next();
                    expect("(");
                    TensorType type = tensorType();
                    double v = t.is("ones") ? 1.0 : 0.0;
                    if (t.is("fill")) {
                        expect(",");
                        v = number();
                    }
                    expect(")");
                    return new Pending(new Instr.Fill(type, v), t.pos());
                }
            }
            case PUNCT -> {
                if (t.is("(")) {
                    next();
                    Operand first = expr();
                    if (!peek().is(",")) {
                        expect(")");
                        return first instanceof Pending(Rhs rhs, Pos p) ? new Pending(rhs, t.pos()) : first;
                    }
                    List<Var> elems = new ArrayList<>();
                    elems.add(bind(first));
                    while (accept(",")) elems.add(bind(expr()));
                    expect(")");
                    return new Pending(new Rhs.Tuple(elems), t.pos());
                }
            }
            case NUMBER, EOF -> { }
        }
        if (t.kind() == Kind.NUMBER)
            throw new SyntaxError(t.pos(), "expected an expression but found '" + t.text()
                    + "' (numbers appear only in payloads, fill and keyword arguments; a scalar is a tensor)");
        throw expected("an expression", t);
    }

    // ---- types and static arguments ----------------------------------------------------------

    /** {@code tensor<DTYPE, [d, …], @placement>}. */
    private TensorType tensorType() {
        expect("tensor");
        expect("<");
        Token d = ident("a dtype");
        DType dtype = DType.parse(d.text());
        if (dtype == null)
            throw new SyntaxError(d.pos(), "unknown dtype '" + d.text() + "'; expected one of "
                    + java.util.Arrays.stream(DType.values()).map(DType::spelling).collect(Collectors.joining(", ")));
        expect(",");
        Shape shape = new Shape(dims());
        expect(",");
        expect("@");
        Token p = ident("a placement (host or device)");
        Placement placement = Placement.parse(p.text());
        if (placement == null)
            throw new SyntaxError(p.pos(), "unknown placement '@" + p.text() + "'; expected @host or @device");
        expect(">");
        return new TensorType(dtype, shape, placement);
    }

    /** A shape {@code [d, …]}: non-negative integers. */
    private long[] dims() {
        expect("[");
        List<Long> ds = new ArrayList<>();
        if (!peek().is("]")) {
            do {
                Token t = peek();
                if (t.is("-")) {
                    Token num = toks.get(at + 1);
                    throw new SyntaxError(t.pos(), "negative dim -" + (num.kind() == Kind.NUMBER ? num.text() : "")
                            + " in a shape; dims must be >= 0");
                }
                ds.add(longInt(next()));
            } while (accept(","));
        }
        expect("]");
        return ds.stream().mapToLong(Long::longValue).toArray();
    }

    /** A permutation {@code [i, …]}: integers (validity is a type rule). */
    private int[] ints() {
        expect("[");
        List<Integer> xs = new ArrayList<>();
        if (!peek().is("]")) {
            do xs.add(integer()); while (accept(","));
        }
        expect("]");
        return xs.stream().mapToInt(Integer::intValue).toArray();
    }

    /** An int, optionally negative. */
    private int integer() {
        boolean neg = accept("-");
        Token t = next();
        long v = longInt(t);
        if (v > Integer.MAX_VALUE) throw new SyntaxError(t.pos(), "integer '" + t.text() + "' is too large");
        return neg ? -(int) v : (int) v;
    }

    private long longInt(Token t) {
        if (t.kind() != Kind.NUMBER) throw expected("an integer", t);
        if (!t.text().chars().allMatch(Character::isDigit)) throw expected("an integer", t);
        try {
            return Long.parseLong(t.text());
        } catch (NumberFormatException e) {
            throw new SyntaxError(t.pos(), "integer '" + t.text() + "' is too large");
        }
    }

    private boolean bool() {
        Token t = next();
        if (t.is("true")) return true;
        if (t.is("false")) return false;
        throw expected("true or false", t);
    }

    /** A number, optionally negative; also {@code inf} and {@code nan}. */
    private double number() {
        boolean neg = accept("-");
        Token t = next();
        double v;
        if (t.kind() == Kind.NUMBER) v = Double.parseDouble(t.text());
        else if (t.kind() == Kind.IDENT && t.text().equals("inf")) v = Double.POSITIVE_INFINITY;
        else if (t.kind() == Kind.IDENT && t.text().equals("nan")) v = Double.NaN;
        else throw expected("a number", t);
        return neg ? -v : v;
    }

    // ---- tokens --------------------------------------------------------------------------------

    private Token peek() { return toks.get(at); }

    private Token next() {
        Token t = toks.get(at);
        if (t.kind() != Kind.EOF) at++;
        return t;
    }

    private boolean accept(String s) {
        if (!peek().is(s)) return false;
        next();
        return true;
    }

    private void expect(String s) {
        if (!accept(s)) throw expected("'" + s + "'", peek());
    }

    private Token ident(String what) {
        Token t = peek();
        if (t.kind() != Kind.IDENT) throw expected(what, t);
        return next();
    }

    private void expectEnd() {
        if (peek().kind() != Kind.EOF) throw expected("end of input", peek());
    }

    private static SyntaxError expected(String what, Token found) {
        return new SyntaxError(found.pos(), "expected " + what + " but found " + found.describe());
    }
}
