package kina.ad;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import kina.check.Checker;
import kina.check.TypeError;
import kina.check.TypeRules;
import kina.ir.Block;
import kina.ir.Instr;
import kina.ir.Instrs;
import kina.ir.Let;
import kina.ir.Pos;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Syntax;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/**
 * Builds a typed kina program from Java: the recording reading of {@link Ops} made for users.
 * Every typed method of Ops ({@code b.add(x, y)}, {@code b.rmsnorm(…)}, …) binds its instruction
 * to a new let, typed at once by {@link TypeRules}, so a mistake fails there with one line naming
 * the op, its operands and the types. A value stays a temporary (printed inline, as the parser
 * would have read it) until {@link #let(String, Var)} names it; the temporaries made since the
 * previous named let belong to the next one, as the parser's do.
 *
 * <pre>{@code
 * ProgramBuilder b = new ProgramBuilder("<affine>");
 * TensorType xt = TensorType.host(DType.F32, 2, 3), wt = TensorType.host(DType.F32, 3, 4);
 * Var f = b.fn("f", List.of(new Param("x", xt), new Param("w", wt)),
 *         ps -> b.let("y", b.sum(b.exp(b.matmul(ps.get(0), ps.get(1))), 1, true)));
 * Var x = b.input("x", xt), w = b.input("w", wt);
 * List<Var> r = b.let(List.of("y", "g_x", "g_w"), b.handle(f, x, w));
 * Program p = b.build(b.tuple(r));
 * // let f = fn(x: tensor<F32, [2, 3], @host>, w: tensor<F32, [3, 4], @host>) -> tensor<F32, [2, 1], @host> {
 * //   let y = (x @ w).exp().sum(axis=1, keepdims=true) in
 * //   y
 * // } in
 * // let x = tensor<F32, [2, 3], @host> in
 * // let w = tensor<F32, [3, 4], @host> in
 * // let (y, g_x, g_w) = handle f(x, w) with reverseMode in
 * // (y, g_x, g_w)
 * }</pre>
 *
 * <p>Besides the instructions: named inputs ({@link #input(String, TensorType)}), literals
 * ({@link Ops#literal}), fns with typed parameters ({@link #fn}), calls, {@code handle … with
 * reverseMode} ({@link #handle}), tuples and destructuring lets ({@link #let(List, Var)}). A fn
 * body is closed, as the checker wants: inside it only its parameters, its own values and (as call
 * targets) fns bound before it can be used. {@link #build} returns the program checked by
 * {@link Checker#check}. Errors are {@link TypeError}s without a source position.
 */
public final class ProgramBuilder implements Ops<Var> {

    /** A typed parameter of a fn made by {@link #fn}. */
    public record Param(String name, TensorType type) {}

    private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    /** One let being built; {@code id} is the Var handed out for it before it has a final name. */
    private static final class Entry {
        final Var id;
        final Rhs rhs;
        final Type type;
        List<Var> binders;          // the final name(s); null while unnamed
        boolean destructure;
        String owner;               // the user let a temporary belongs to

        Entry(Var id, Rhs rhs, Type type) {
            this.id = id;
            this.rhs = rhs;
            this.type = type;
        }

        boolean named() { return binders != null && owner == null; }
    }

    /** What a Var in scope stands for: a let being built, or (entry null) a parameter or a destructured element. */
    private record Binding(Type type, Entry entry) {}

    /** A block being built: the program's top level or a fn body. */
    private static final class Frame {
        final Frame parent;
        final String resultOwner;
        final List<Entry> lets = new ArrayList<>();
        final Map<Var, Binding> scope = new HashMap<>();
        int pending;                // lets before this index have a final name or number

        Frame(Frame parent, String resultOwner) {
            this.parent = parent;
            this.resultOwner = resultOwner;
        }
    }

    private final String file;
    private final Map<Var, Entry> byId = new HashMap<>();
    private Frame frame = new Frame(null, "result");
    private int temps, ids;
    private boolean built;

    /** @param file how the program names itself in messages ({@link Program#file()}), e.g. {@code <storylm tiny loss>} */
    public ProgramBuilder(String file) { this.file = file; }

    // ---- the reading ------------------------------------------------------------------------

    /** The type of tensor {@code x}; an error for a tuple, a fn, or a value not in this scope. */
    @Override public TensorType type(Var x) {
        Binding b = local(x, "type");
        if (b.type() instanceof TensorType t) return t;
        throw fail("type: " + show(x) + " is " + kind(b.type()) + ", not a tensor");
    }

    /** Binds {@code ins}, its operands read through {@code operand}, to a new let typed by {@link TypeRules}; answers its value. */
    @Override public Var apply(Instr ins, Function<Var, Var> operand) {
        open();
        Instr bound = Instrs.mapOperands(ins, operand::apply);
        Map<Var, TensorType> types = new HashMap<>();
        for (Var v : bound.operands()) {
            Binding b = local(v, bound.op());
            if (!(b.type() instanceof TensorType t))
                throw fail(describe(bound) + ": " + show(v) + " is " + kind(b.type()) + ", not a tensor");
            types.put(v, t);
        }
        try {
            return add(bound, TypeRules.infer(bound, types::get));
        } catch (TypeRules.Mismatch m) {
            throw fail(describe(bound) + ": " + m.getMessage());
        }
    }

    // ---- names --------------------------------------------------------------------------------

    /** {@code let name = tensor<…> in}: an input of type {@code t}, supplied at run time by name. */
    public Var input(String name, TensorType t) { return let(name, input(t)); }

    /**
     * Names the let that binds {@code value} (a value made since in this block and not named
     * yet): {@code let name = … in}. The temporaries made before it that have no let yet become
     * part of this one. Answers the named Var (the old one still works).
     */
    public Var let(String name, Var value) {
        open();
        Binding b = local(value, "let " + name);
        if (b.entry() == null || b.entry().named())
            throw fail("let " + name + " = " + show(value) + " only renames " + show(value) + "; use " + show(value) + " directly");
        name(name, frame);
        Var v = new Var(name);
        number(frame, v.name(), b.entry());
        b.entry().binders = List.of(v);
        b.entry().owner = null;
        frame.scope.put(v, b);
        return v;
    }

    /** {@code let (a, b, …) = tuple in}: names the elements of a tuple value (a handle, a call of a tuple fn, a tuple). */
    public List<Var> let(List<String> names, Var tuple) {
        open();
        String pat = String.join(", ", names);
        Binding b = local(tuple, "let (" + pat + ")");
        if (b.entry() == null || b.entry().named())
            throw fail("let (" + pat + ") = " + show(tuple) + ": " + show(tuple) + " is already bound; destructure the value itself");
        if (!(b.type() instanceof Type.Tuple(List<Type> elems)))
            throw fail("let (" + pat + "): cannot destructure " + show(tuple) + " of type " + b.type() + ": not a tuple");
        if (elems.size() != names.size())
            throw fail("let (" + pat + "): the pattern binds " + names.size() + " names but " + show(tuple) + " has "
                    + elems.size() + " elements: " + b.type());
        List<Var> vs = new ArrayList<>();
        for (String n : names) {
            if (vs.contains(new Var(n))) throw fail("let (" + pat + "): " + n + " is bound twice in one pattern");
            name(n, frame);
            vs.add(new Var(n));
        }
        number(frame, vs.toString(), b.entry());      // the parser's owner of a pattern's temporaries
        b.entry().binders = List.copyOf(vs);
        b.entry().destructure = true;
        b.entry().owner = null;
        for (int i = 0; i < vs.size(); i++) frame.scope.put(vs.get(i), new Binding(elems.get(i), null));
        return List.copyOf(vs);
    }

    // ---- fns, calls, handles, tuples ----------------------------------------------------------

    /**
     * {@code let name = fn(p: T, …) -> R { body } in}: {@code body} is given the parameters' Vars
     * and builds the fn's body with this same builder, answering its result (a tensor or tuple of
     * the body); R is that result's type. Answers the fn's Var, a call or handle target.
     */
    public Var fn(String name, List<Param> params, Function<List<Var>, Var> body) {
        open();
        name(name, frame);
        Frame outer = frame;
        number(outer, name, null);
        Frame inner = new Frame(outer, name);
        List<Rhs.Param> ps = new ArrayList<>();
        List<TensorType> types = new ArrayList<>();
        List<Var> vars = new ArrayList<>();
        for (Param p : params) {
            if (inner.scope.containsKey(new Var(p.name()))) throw fail("fn " + name + ": parameter " + p.name() + " is bound twice");
            name(p.name(), inner);
            Var v = new Var(p.name());
            inner.scope.put(v, new Binding(p.type(), null));
            ps.add(new Rhs.Param(v, p.type(), Pos.NONE));
            types.add(p.type());
            vars.add(v);
        }
        frame = inner;
        Var result;
        Block block;
        try {
            result = body.apply(List.copyOf(vars));
            if (frame != inner) throw fail("fn " + name + ": its body ended inside another fn's body");
            block = close(inner, result, "fn " + name + ": body result");
        } finally {
            frame = outer;
        }
        Type rt = inner.scope.get(result).type();
        Entry e = entry(new Rhs.Fn(ps, rt, block), new Type.Fn(types, rt));
        Var v = new Var(name);
        e.binders = List.of(v);
        outer.scope.put(v, outer.scope.get(e.id));
        return v;
    }

    /** {@code f(args…)}: a call of fn {@code f}; its value has the fn's result type. */
    public Var call(Var f, List<Var> args) {
        Type.Fn ft = target(f, "call", args);
        return entryVar(new Rhs.Call(f, List.copyOf(args)), ft.result());
    }

    /** {@link #call(Var, List)} with the arguments listed. */
    public Var call(Var f, Var... args) { return call(f, List.of(args)); }

    /** {@code handle f(args…) with reverseMode}: (R, g0, …, gk-1) over f's k floating parameters, R alone when k = 0. */
    public Var handle(Var f, List<Var> args) {
        Type.Fn ft = target(f, "handle", args);
        Type t = Checker.reverseMode(ft);
        if (t == null) throw fail("handle " + f + ": reverseMode needs " + f + " to return one tensor, but it returns " + ft.result());
        return entryVar(new Rhs.Handle(f, List.copyOf(args)), t);
    }

    /** {@link #handle(Var, List)} with the arguments listed. */
    public Var handle(Var f, Var... args) { return handle(f, List.of(args)); }

    /** {@code (a, b, …)}: a flat tuple of two or more tensors, e.g. a program's result. */
    public Var tuple(List<Var> elems) {
        open();
        if (elems.size() < 2) throw fail("tuple of " + elems.size() + " element(s): a tuple has two or more (a single value is its own result)");
        List<Type> ts = new ArrayList<>();
        for (Var v : elems) {
            Binding b = local(v, "tuple");
            if (!(b.type() instanceof TensorType t)) throw fail("tuple: " + show(v) + " is " + kind(b.type()) + ", not a tensor");
            ts.add(t);
        }
        return entryVar(new Rhs.Tuple(List.copyOf(elems)), new Type.Tuple(ts));
    }

    /** {@link #tuple(List)} with the elements listed. */
    public Var tuple(Var... elems) { return tuple(List.of(elems)); }

    /** The program whose result is {@code result} (a tensor or tuple of the top level), checked by {@link Checker#check}. */
    public Program build(Var result) {
        open();
        if (frame.parent != null) throw fail("build: still inside the body of fn " + frame.resultOwner);
        Block body = close(frame, result, "result");
        built = true;
        return Checker.check(new Program(file, body));
    }

    // ---- internals ----------------------------------------------------------------------------

    private void open() {
        if (built) throw new IllegalStateException(file + ": this builder has built its program; start a new one");
    }

    private TypeError fail(String what) { return new TypeError(Pos.NONE, file + ": " + what); }

    /** The binding of {@code v} in the current block; an error naming {@code where} when it is not in scope. */
    private Binding local(Var v, String where) {
        if (v == null) throw fail(where + ": a null value");
        Binding b = frame.scope.get(v);
        if (b != null) return b;
        for (Frame f = frame.parent; f != null; f = f.parent)
            if (f.scope.containsKey(v))
                throw fail(where + ": fn bodies are closed: " + show(v) + " belongs to an enclosing block; pass it as a parameter");
        throw fail(where + ": " + show(v) + " is not a value of this block" + (byId.containsKey(v) ? " (it belongs to another fn's body)" : ""));
    }

    /** Checks that {@code n} can name a new value of {@code f}. */
    private void name(String n, Frame f) {
        if (n == null || !NAME.matcher(n).matches()) throw fail("'" + n + "' is not a name (letters, digits, _; not starting with a digit)");
        if (Syntax.KEYWORDS.contains(n)) throw fail("'" + n + "' is a keyword of the language and cannot name a value");
        if (f.scope.containsKey(new Var(n))) throw fail(n + " is bound twice in one block");
    }

    /** Gives the unnamed lets of {@code f} made since its last name their temporary numbers, owned by {@code owner}; {@code except} is being named. */
    private void number(Frame f, String owner, Entry except) {
        for (int i = f.pending; i < f.lets.size(); i++) {
            Entry e = f.lets.get(i);
            if (e == except || e.binders != null) continue;
            e.binders = List.of(new Var("%" + temps++));
            e.owner = owner;
        }
        f.pending = f.lets.size();
    }

    private Entry entry(Rhs rhs, Type type) {
        Entry e = new Entry(new Var("%~" + ids++), rhs, type);
        frame.lets.add(e);
        Binding b = new Binding(type, e);
        frame.scope.put(e.id, b);
        byId.put(e.id, e);
        return e;
    }

    private Var entryVar(Rhs rhs, Type type) { return entry(rhs, type).id; }

    private Var add(Instr ins, TensorType t) { return entryVar(ins, t); }

    private Type.Fn target(Var f, String op, List<Var> args) {
        open();
        Binding b = null;
        for (Frame fr = frame; fr != null && b == null; fr = fr.parent) b = fr.scope.get(f);
        if (b == null) throw fail(op + " " + f + ": no fn " + f + " is bound here");
        if (!(b.type() instanceof Type.Fn ft)) throw fail(op + " " + show(f) + ": not a fn, it has type " + b.type());
        if (b.entry() == null || !b.entry().named()) throw fail(op + ": " + show(f) + " is not a named fn");
        if (args.size() != ft.params().size())
            throw fail(op + " " + f + ": takes " + ft.params().size() + " arguments, got " + args.size() + " (" + ft + ")");
        for (int i = 0; i < args.size(); i++) {
            Binding a = local(args.get(i), op + " " + f);
            if (!a.type().equals(ft.params().get(i)))
                throw fail(op + " " + f + ": argument " + (i + 1) + " (" + show(args.get(i)) + ") has type " + a.type()
                        + ", the parameter has type " + ft.params().get(i));
        }
        return ft;
    }

    /** Numbers what is left, requires names for inputs, and writes the block with every operand under its final name. */
    private Block close(Frame f, Var result, String where) {
        Binding r = local(result, where);
        if (r.type() instanceof Type.Fn) throw fail(where + ": " + show(result) + " is a fn; a block ends in a tensor or a tuple");
        number(f, f.resultOwner, null);
        List<Let> lets = new ArrayList<>();
        for (Entry e : f.lets) {
            if (e.rhs instanceof Instr.Input(TensorType t) && !e.named())
                throw fail("an input of type " + t + " has no name: give it one with input(name, type) or let(name, value)");
            lets.add(new Let(e.binders, e.destructure, resolve(e.rhs), Pos.NONE, e.owner, null));
        }
        return new Block(lets, resolve(result), Pos.NONE);
    }

    /** The final name of a value handed out by this builder (a parameter or a name stays as it is). */
    private Var resolve(Var v) {
        Entry e = byId.get(v);
        return e == null ? v : e.binders.getFirst();
    }

    private Rhs resolve(Rhs r) {
        return switch (r) {
            case Instr i -> Instrs.mapOperands(i, this::resolve);
            case Rhs.Fn fn -> fn;                          // its body was resolved when it closed
            case Rhs.Call(Var f, List<Var> args) -> new Rhs.Call(f, args.stream().map(this::resolve).toList());
            case Rhs.Handle(Var f, List<Var> args, Rhs.Mode mode) -> new Rhs.Handle(f, args.stream().map(this::resolve).toList(),
                    switch (mode) {
                        case Rhs.Mode.ReverseMode m -> m;
                        case Rhs.Mode.ForwardMode(List<Var> ts) -> new Rhs.Mode.ForwardMode(ts.stream().map(this::resolve).toList());
                    });
            case Rhs.Tuple(List<Var> elems) -> new Rhs.Tuple(elems.stream().map(this::resolve).toList());
        };
    }

    /** How a message names a value: its name, or the op that makes it while it is a temporary. */
    private String show(Var v) {
        Entry e = byId.get(v);
        if (e == null) return v.name();
        if (e.named()) return e.binders.size() == 1 && !e.destructure ? e.binders.getFirst().name() : e.binders.toString();
        return "<" + op(e.rhs) + ">";
    }

    private String describe(Instr ins) {
        return ins.op() + ins.operands().stream().map(this::show).collect(Collectors.joining(", ", "(", ")"));
    }

    private static String op(Rhs r) {
        return switch (r) {
            case Instr i -> i.op();
            case Rhs.Fn _ -> "fn";
            case Rhs.Call c -> "call " + c.fn();
            case Rhs.Handle h -> "handle " + h.fn();
            case Rhs.Tuple _ -> "tuple";
        };
    }

    private static String kind(Type t) {
        return switch (t) {
            case TensorType tt -> "a tensor " + tt;
            case Type.Tuple tt -> "a tuple " + tt + " (destructure it with let(names, value))";
            case Type.Fn _ -> "a fn (use it as a call or handle target)";
        };
    }
}
