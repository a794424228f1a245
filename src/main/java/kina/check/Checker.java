package kina.check;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kina.ir.Block;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Pos;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/**
 * The type checker: scoping, the instruction rules of {@link TypeRules}, fns, calls, reverseMode
 * handles, tuples and destructuring. Returns the program with every {@link Let#type()} filled.
 *
 * <p>Scopes: the top level is one scope; each fn body with its parameters is another. A name is
 * bound at most once per scope and used only after its let. Fn bodies are closed: from an
 * enclosing scope they may name only fns, and only as call / handle targets. A fn-valued name is
 * only ever a call / handle target; a tuple-valued name is only destructured or a block's result.
 */
public final class Checker {
    private Checker() {}

    /** A bound name: its type, where it was bound, and for a fn let the fn (for messages naming its parameters). */
    private record Binding(Type type, Pos pos, Rhs.Fn fn) {
        Binding(Type type, Pos pos) { this(type, pos, null); }
    }

    /** One scope: the top level (parent null) or a fn body with its params. */
    private static final class Scope {
        final Scope parent;
        final Map<Var, Binding> names = new HashMap<>();

        Scope(Scope parent) { this.parent = parent; }
    }

    /** A checked rhs: the rhs (a fn's body comes back typed) and its type. */
    private record Typed(Rhs rhs, Type type) {}

    /** A checked block and the type of its result. */
    private record Checked(Block block, Type result) {}

    /**
     * Checks {@code p} and returns it with every let typed (TensorType; Type.Tuple for tuples,
     * handles and calls of tuple-returning fns; Type.Fn for fn lets).
     *
     * @throws TypeError naming the offending let, its op and the types involved
     */
    public static Program check(Program p) {
        return new Program(p.file(), block(p.body(), new Scope(null), null).block());
    }

    /**
     * The types of a checked fn's params and body lets, in binding order; binders of a
     * destructuring let get the tuple's element types. Lets of nested fns are not included.
     */
    public static Map<Var, Type> scope(Rhs.Fn fn) {
        Map<Var, Type> out = new LinkedHashMap<>();
        for (Rhs.Param p : fn.params()) out.put(p.name(), p.type());
        for (Let l : fn.body().lets()) {
            if (l.type() == null) throw new IllegalStateException("fn not checked: let " + l.displayName() + " has no type");
            if (!l.destructure()) out.put(l.var(), l.type());
            else if (l.type() instanceof Type.Tuple(var elems))
                for (int i = 0; i < l.binders().size(); i++) out.put(l.binders().get(i), elems.get(i));
            else throw new IllegalStateException("destructuring let " + l.displayName() + " has type " + l.type());
        }
        return out;
    }

    // ---- blocks -----------------------------------------------------------------------------

    /** Checks the lets in order, binding each after its rhs; {@code fnLet} is the enclosing fn's let, or null. */
    private static Checked block(Block b, Scope s, Let fnLet) {
        List<Let> typed = new ArrayList<>();
        for (Let let : b.lets()) {
            Typed t = rhs(let, s);
            if (let.destructure()) destructure(let, t.type(), s);
            else bind(s, let.var(), t.type(), let.pos(), let, opName(let.rhs()));
            if (t.rhs() instanceof Rhs.Fn fn && !let.destructure())
                s.names.put(let.var(), new Binding(t.type(), let.pos(), fn));
            typed.add(let.withRhs(t.rhs()).withType(t.type()));
        }
        Type result = result(b, s, fnLet);
        return new Checked(new Block(typed, b.result(), b.resultPos()), result);
    }

    /** A block's result: a tensor or tuple of this scope. */
    private static Type result(Block b, Scope s, Let fnLet) {
        Var v = b.result();
        String where = fnLet == null ? "result: " : "let " + TypeError.name(fnLet) + ": fn: body result: ";
        Binding own = s.names.get(v);
        if (own == null) {
            Binding outer = lookup(s.parent, v);
            if (outer == null) throw new TypeError(b.resultPos(), where + "unbound name " + v);
            if (!(outer.type() instanceof Type.Fn))
                throw new TypeError(b.resultPos(), where + "fn bodies are closed: pass " + v + " as a parameter");
            own = outer;
        }
        if (own.type() instanceof Type.Fn)
            throw new TypeError(b.resultPos(), where + v + " is a fn; a fn may be used only as a call or handle target");
        return own.type();
    }

    private static void destructure(Let let, Type t, Scope s) {
        String op = opName(let.rhs());
        if (!(t instanceof Type.Tuple(var elems)))
            throw TypeError.at(let, op, "cannot destructure " + t + ": not a tuple" + discreteNote(let, s));
        if (elems.size() != let.binders().size())
            throw TypeError.at(let, op, "pattern binds " + let.binders().size() + " names but the tuple has "
                    + elems.size() + " elements: " + t + discreteNote(let, s));
        for (int i = 0; i < elems.size(); i++) {
            Var v = let.binders().get(i);
            for (int j = 0; j < i; j++)
                if (let.binders().get(j).equals(v)) throw TypeError.at(let, op, v + " is bound twice in one pattern");
            bind(s, v, elems.get(i), let.pos(), let, op);
        }
    }

    /**
     * Why a reverseMode handle has fewer elements than the pattern: its discrete parameters get no
     * cotangent. Names them; empty for anything else.
     */
    private static String discreteNote(Let let, Scope s) {
        if (!(let.rhs() instanceof Rhs.Handle(var f, var args, Rhs.Mode.ReverseMode _))) return "";
        Binding b = lookup(s, f);
        if (b == null || b.fn() == null) return "";
        List<String> discrete = new ArrayList<>();
        int floating = 0;
        for (Rhs.Param p : b.fn().params())
            if (p.type().dtype().floating()) floating++;
            else discrete.add(p.name() + " : " + p.type());
        if (discrete.isEmpty()) return "";
        return "; handle " + f + " with reverseMode returns " + (floating == 0 ? "the result alone"
                : "the result and " + floating + " cotangent" + (floating == 1 ? "" : "s")) + ": "
                + (discrete.size() == 1 ? "parameter " : "parameters ") + String.join(", ", discrete) + " of " + f
                + (discrete.size() == 1 ? " is" : " are") + " discrete, and I64 values get no cotangent"
                + (floating == 0 ? " (bind the result alone: let " + let.binders().getFirst() + " = handle …)" : "");
    }

    private static void bind(Scope s, Var v, Type t, Pos pos, Let let, String op) {
        Binding old = s.names.get(v);
        if (old != null)
            throw TypeError.at(let, op, v + " is bound twice in one scope (at " + old.pos() + " and " + pos + ")");
        s.names.put(v, new Binding(t, pos));
    }

    // ---- right-hand sides -------------------------------------------------------------------

    private static Typed rhs(Let let, Scope s) {
        return switch (let.rhs()) {
            case Instr ins -> {
                Map<Var, TensorType> operands = new HashMap<>();
                for (Var v : ins.operands()) operands.put(v, tensor(let, ins.op(), v, s));
                try {
                    Instr norm = TypeRules.normalise(ins, operands::get);       // axis=-1 and the like, as NumPy
                    yield new Typed(norm, TypeRules.result(norm, operands::get));
                } catch (TypeRules.Mismatch m) {
                    throw TypeError.at(let, m.op(), m.getMessage());
                }
            }
            case Rhs.Fn fn -> fn(let, fn, s);
            case Rhs.Call(var f, var args) -> {
                Type.Fn ft = target(let, "call", f, s);
                arguments(let, "call", f, ft, args, s);
                yield new Typed(let.rhs(), ft.result());
            }
            case Rhs.Handle(var f, var args, var mode) -> {
                Type.Fn ft = target(let, "handle", f, s);
                arguments(let, "handle", f, ft, args, s);
                Type r = handle(let, f, ft, mode);
                if (mode instanceof Rhs.Mode.ForwardMode(var tangents)) tangents(let, f, ft, tangents, s);
                yield new Typed(let.rhs(), r);
            }
            case Rhs.Tuple(var elems) -> {
                List<Type> ts = new ArrayList<>();
                for (Var v : elems) ts.add(tensor(let, "tuple", v, s));
                yield new Typed(let.rhs(), new Type.Tuple(ts));
            }
        };
    }

    /** Params are tensors, bound once; the body's type equals the declared result. */
    private static Typed fn(Let let, Rhs.Fn fn, Scope s) {
        Scope inner = new Scope(s);
        List<TensorType> params = new ArrayList<>();
        for (Rhs.Param p : fn.params()) {
            Binding old = inner.names.get(p.name());
            if (old != null)
                throw new TypeError(p.pos(), "let " + TypeError.name(let) + ": fn: parameter " + p.name()
                        + " is bound twice (at " + old.pos() + " and " + p.pos() + ")");
            inner.names.put(p.name(), new Binding(p.type(), p.pos()));
            params.add(p.type());
        }
        Checked body = block(fn.body(), inner, let);
        if (!body.result().equals(fn.result()))
            throw TypeError.at(let, "fn", "body has type " + body.result() + " but the fn declares " + fn.result());
        return new Typed(new Rhs.Fn(fn.params(), fn.result(), body.block()), new Type.Fn(params, fn.result()));
    }

    /**
     * reverseMode: (R, g0, …, gk-1) over the k floating params, R alone when k = 0;
     * forwardMode: (R, J·t), the tangent of R's type.
     */
    private static Type handle(Let let, Var f, Type.Fn ft, Rhs.Mode mode) {
        String name = mode instanceof Rhs.Mode.ForwardMode ? "forwardMode" : "reverseMode";
        if (!(ft.result() instanceof TensorType r))
            throw TypeError.at(let, "handle", name + " needs " + f + " to return one tensor, but it returns " + ft.result());
        return mode instanceof Rhs.Mode.ForwardMode ? new Type.Tuple(List.of(r, r)) : reverseMode(ft);
    }

    /**
     * The type of {@code handle f(…) with reverseMode} for a fn of type {@code ft}: (R, g0, …, gk-1)
     * over its k floating params, R alone when k = 0; null when f does not return
     * one tensor.
     */
    public static Type reverseMode(Type.Fn ft) {
        if (!(ft.result() instanceof TensorType r)) return null;
        List<Type> out = new ArrayList<>();
        out.add(r);
        for (TensorType p : ft.params()) if (p.dtype().floating()) out.add(p);
        return out.size() == 1 ? r : new Type.Tuple(out);
    }

    /** forwardMode's tangents: one per floating parameter of f, in order, each of that parameter's type. */
    private static void tangents(Let let, Var f, Type.Fn ft, List<Var> tangents, Scope s) {
        List<TensorType> floating = ft.params().stream().filter(p -> p.dtype().floating()).toList();
        if (tangents.size() != floating.size())
            throw TypeError.at(let, "handle", "forwardMode needs one tangent per floating parameter of " + f + " ("
                    + floating.size() + (floating.isEmpty() ? "" : ": " + floating) + "), got " + tangents.size()
                    + "; discrete parameters take none");
        for (int i = 0; i < tangents.size(); i++) {
            TensorType t = tensor(let, "handle", tangents.get(i), s);
            if (!t.equals(floating.get(i)))
                throw TypeError.at(let, "handle", "tangent " + (i + 1) + " of " + f + " (" + tangents.get(i) + ") has type " + t
                        + ", its floating parameter has type " + floating.get(i));
        }
    }

    private static void arguments(Let let, String op, Var f, Type.Fn ft, List<Var> args, Scope s) {
        if (args.size() != ft.params().size())
            throw TypeError.at(let, op, f + " takes " + ft.params().size() + " arguments, got " + args.size() + " (" + ft + ")");
        for (int i = 0; i < args.size(); i++) {
            TensorType a = tensor(let, op, args.get(i), s);
            if (!a.equals(ft.params().get(i)))
                throw TypeError.at(let, op, "argument " + (i + 1) + " of " + f + " (" + args.get(i) + ") has type " + a
                        + ", the parameter has type " + ft.params().get(i));
        }
    }

    // ---- name uses --------------------------------------------------------------------------

    /** {@code v} used as a tensor operand: bound in this scope, tensor-typed. */
    private static TensorType tensor(Let let, String op, Var v, Scope s) {
        Binding b = s.names.get(v);
        if (b == null) {
            Binding outer = lookup(s.parent, v);
            if (outer == null) throw TypeError.at(let, op, "unbound name " + v);
            if (!(outer.type() instanceof Type.Fn))
                throw TypeError.at(let, op, "fn bodies are closed: pass " + v + " as a parameter");
            b = outer;
        }
        return switch (b.type()) {
            case TensorType t -> t;
            case Type.Fn _ -> throw TypeError.at(let, op, v + " is a fn; a fn may be used only as a call or handle target");
            case Type.Tuple t -> throw TypeError.at(let, op, v + " is a tuple " + t + "; destructure it with let ( … ) = …");
        };
    }

    /** {@code f} used as a call / handle target: a fn bound here or in an enclosing scope. */
    private static Type.Fn target(Let let, String op, Var f, Scope s) {
        Binding b = lookup(s, f);
        if (b == null) throw TypeError.at(let, op, "unbound name " + f);
        if (b.type() instanceof Type.Fn ft) return ft;
        throw TypeError.at(let, op, f + " is not a fn: it has type " + b.type());
    }

    /** The innermost binding of {@code v} from {@code s} outwards, or null. */
    private static Binding lookup(Scope s, Var v) {
        for (Scope c = s; c != null; c = c.parent) {
            Binding b = c.names.get(v);
            if (b != null) return b;
        }
        return null;
    }

    /** The op a message names for a rhs. */
    private static String opName(Rhs r) {
        return switch (r) {
            case Instr ins -> ins.op();
            case Rhs.Fn _ -> "fn";
            case Rhs.Call _ -> "call";
            case Rhs.Handle _ -> "handle";
            case Rhs.Tuple _ -> "tuple";
        };
    }
}
