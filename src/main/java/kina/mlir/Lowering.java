package kina.mlir;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Instr.*;
import kina.ir.Let;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;
import kina.mlir.Emitter.FnInfo;
import kina.mlir.Mlir.AffineMap;
import kina.mlir.Mlir.Body;
import kina.mlir.Mlir.BodyFn;
import kina.mlir.Mlir.Operand;
import kina.mlir.Mlir.Reassoc;
import kina.mlir.Mlir.Scalar;
import kina.mlir.Mlir.Val;

/**
 * One func of the module: its lets (calls, tuples, the parts of a long block) and the lowering of
 * each instruction, one exhaustive switch over {@link Instr} ({@link #lower}); row-wise
 * instructions and indexing in {@link Rows}, attention in {@link AttentionLowering}, the plan's fusions in
 * {@link Fusions}, slice, concat and pad in {@link SliceLowering}, the random family in {@link RandomLowering}.
 *
 * <p>Elementwise instructions and reductions are {@code linalg.generic}s; matmul is
 * {@code linalg.matmul}, {@code linalg.batch_matmul}, or for rank ≥ 4 a batch matmul between
 * {@code tensor.collapse_shape} and {@code tensor.expand_shape}, each in a contraction func of its
 * own; transpose is {@code linalg.transpose}; reshape is a collapse, an expand, or a collapse to rank
 * 1 then an expand. Results agree with the interpreter within rounding, not bit for bit: sums start
 * from +0.0 and exp/log/tanh are MLIR's.
 */
final class Lowering {
    final Emitter module;
    final String symbol;
    final Mlir.Fn f = new Mlir.Fn();
    final Map<Var, List<Val>> env = new HashMap<>();
    final Map<String, Val> inputs = new HashMap<>();
    /** The lets of this func's block bound to a uniform fill (shared with its parts): a fused chain reads such an input as a constant. */
    Map<Var, Double> fills = new HashMap<>();
    /** The literal and fill lets of this func's block (shared with its parts): a part that reads one makes it again, never passes it. */
    Map<Var, Let> remade = new HashMap<>();
    /** The reshapes this func made: a view's SSA name → the value it views (a part returns the value and the caller views it). */
    final Map<String, Val> views = new HashMap<>();
    /**
     * The step's results an instruction of this func computes, each with the destination it writes
     * into: @main's {@code %dest.i} (the entry's output buffer), passed on to the part that computes
     * it. The instruction's last op writes there ({@link #dest}) instead of into a new tensor, so
     * the result is not copied into its output buffer.
     */
    final Map<Var, Val> destinations = new HashMap<>();
    private final Map<String, Val> pending = new HashMap<>();
    final Rows rows = new Rows(this);
    final AttentionLowering attention = new AttentionLowering(this);
    final Fusions fusions = new Fusions(this);
    final SliceLowering slices = new SliceLowering(this);
    final RandomLowering random = new RandomLowering(this);

    Lowering(Emitter module, String symbol) {
        this.module = module;
        this.symbol = symbol;
    }

    String fresh(String stem) { return f.fresh(stem); }

    // ---- the function and its lets ----------------------------------------------------------------

    /** A kina fn as a private func: its parameters, then its inputs. */
    String fn(FnInfo fi) {
        List<Val> params = new ArrayList<>();
        for (Rhs.Param p : fi.fn.params()) {
            Val v = new Val(name(p.name()), p.type());
            env.put(p.name(), List.of(v));
            params.add(v);
        }
        fi.inputs.forEach((n, t) -> {
            Val v = new Val("%in." + n, t);
            inputs.put(n, v);
            params.add(v);
        });
        List<Val> res = block(fi.fn.body(), fi.scope, "fn " + fi.name);
        fi.returns = Returns.of(res, params);
        return f.func(fi.symbol, params, fi.returns.returned(), "", false);
    }

    /**
     * What a func returns of its results: each distinct value once, and no parameter (the caller
     * has those): buffer-results-to-out-params{hoist-static-allocs} crashes on a returned argument
     * or a value returned twice (MLIR 19). {@code from[i]} is result i's index among those
     * returned, or −1 − j for parameter j.
     */
    record Returns(List<Val> returned, int[] from) {

        static Returns of(List<Val> res, List<Val> params) {
            Map<String, Integer> param = new HashMap<>(), at = new HashMap<>();
            for (int j = 0; j < params.size(); j++) param.putIfAbsent(params.get(j).ssa(), j);
            List<Val> returned = new ArrayList<>();
            int[] from = new int[res.size()];
            for (int i = 0; i < res.size(); i++) {
                Val v = res.get(i);
                Integer j = param.get(v.ssa());
                if (j != null) from[i] = -1 - j;
                else {
                    from[i] = at.computeIfAbsent(v.ssa(), k -> { returned.add(v); return returned.size() - 1; });
                }
            }
            return new Returns(List.copyOf(returned), from);
        }

        /** The results at a call: of the call's values ({@code got}, as returned) and its arguments. */
        List<Val> at(List<Val> got, List<Val> args) {
            List<Val> out = new ArrayList<>();
            for (int k : from) out.add(k >= 0 ? got.get(k) : args.get(-1 - k));
            return out;
        }
    }

    /** The top-level block as {@code @main}; appends it to {@code sb} and answers what it returns. */
    Returns main(Block top, Map<Var, FnInfo> scope, LinkedHashMap<String, TensorType> args, StringBuilder sb) {
        List<Val> params = new ArrayList<>();
        args.forEach((n, t) -> {
            Val v = new Val("%in." + n, t);
            inputs.put(n, v);
            params.add(v);
        });
        List<Var> vars = new ArrayList<>();
        List<TensorType> types = new ArrayList<>();
        leaves(top, top.result(), typeOf(top, top.result()), vars, types);
        for (int i = 0; i < types.size(); i++) {
            Val d = new Val("%dest." + i, types.get(i));
            params.add(d);
            if (vars.get(i) != null) destinations.putIfAbsent(vars.get(i), d);
        }
        List<Val> res = block(top, scope, "the program");
        Returns rt = Returns.of(res, params.subList(0, args.size()));
        sb.append(f.func("main", params, rt.returned(), "", false));
        return rt;
    }

    /** The type of a var the block binds (a destructured binder's own). */
    private static Type typeOf(Block b, Var v) {
        Let d = b.binding(v);
        if (d == null) return null;
        return d.destructure() ? ((Type.Tuple) d.type()).elems().get(d.binders().indexOf(v)) : d.type();
    }

    /**
     * The flattened results of value v of type t: their types, and for each the var an
     * instruction of the block binds it to (null where it is not one: an input, a call's, a literal's).
     */
    private static void leaves(Block b, Var v, Type t, List<Var> vars, List<TensorType> types) {
        switch (t) {
            case null -> throw new MlirError(b.resultPos(), "the program's result " + v + " is not bound by a let");
            case TensorType tt -> {
                Let d = v == null ? null : b.binding(v);
                boolean computed = d != null && d.rhs() instanceof Instr i && !(i instanceof Instr.Constant);
                vars.add(computed ? v : null);
                types.add(tt);
            }
            case Type.Tuple tu -> {
                Let d = v == null ? null : b.binding(v);
                List<Var> elems = d != null && !d.destructure() && d.rhs() instanceof Rhs.Tuple(var e) ? e : null;
                for (int i = 0; i < tu.elems().size(); i++) leaves(b, elems == null ? null : elems.get(i), tu.elems().get(i), vars, types);
            }
            case Type.Fn _ -> throw new MlirError(b.resultPos(), "the program's result is a fn, which has no lowering");
        }
    }

    /**
     * The tensor the op defining {@code out} writes into: the destination of the step result the
     * let being lowered computes, when {@code out} is that let's own value and of its type; else a
     * new one.
     */
    Val dest(String out, TensorType t) {
        Val d = pending.get(out);
        if (d != null && d.type().equals(t)) {
            pending.remove(out);
            module.written.add(d.ssa());
            return d;
        }
        return f.empty(t);
    }

    /** {@link #dest} for the value a multi-result instruction binds to {@code v}. */
    Val dest(Var v, TensorType t) {
        Val d = destinations.get(v);
        if (d == null || !d.type().equals(t)) return f.empty(t);
        module.written.add(d.ssa());
        return d;
    }

    /** The SSA name of a let's var: its own name, or a fresh one for a parser temporary. */
    String name(Var v) {
        return !v.temporary() && v.name().matches("[A-Za-z_][A-Za-z0-9_$]*") ? "%" + v.name() : fresh("t");
    }

    /**
     * Emits a block's lets and answers its result. A long block (over {@link Emitter#SPLIT}
     * instructions) is split into parts of at most {@link Emitter#PART} instructions, each a private
     * func of its own (taking the values it reads, returning those it defines that later parts
     * read): LLVM's loop passes take time superlinear in the size of one function.
     */
    List<Val> block(Block b, Map<Var, FnInfo> scope, String where) {
        Map<Var, FnInfo> fnScope = new HashMap<>(scope);
        List<List<Let>> parts = weight(b.lets()) > Emitter.SPLIT ? parts(b.lets()) : List.of(b.lets());
        if (parts.size() == 1) lets(b.lets(), fnScope);
        else {
            Set<Var> later = new HashSet<>(List.of(b.result()));
            List<Set<Var>> readLater = new ArrayList<>();
            for (int i = parts.size() - 1; i >= 0; i--) {
                readLater.addFirst(new HashSet<>(later));
                for (Let l : parts.get(i)) later.addAll(reads(l));
            }
            for (int i = 0; i < parts.size(); i++) part(parts.get(i), i, readLater.get(i), b.result(), fnScope);
        }
        List<Val> res = env.get(b.result());
        if (res == null) throw new MlirError(b.resultPos(), where + ": the result " + b.result() + " is not a tensor or a tuple of tensors");
        return res;
    }

    private void lets(List<Let> lets, Map<Var, FnInfo> fnScope) {
        for (Let l : lets) {
            try {
                let(l, fnScope);
            } catch (MlirError e) {
                throw e;
            } catch (RuntimeException e) {
                throw new MlirError(l.pos(), "let " + l.displayName() + ": cannot lower " + what(l) + ": " + e.getMessage());
            }
            if (l.rhs() instanceof Rhs.Fn fn) fnScope.put(l.var(), module.infoOf.get(fn));
        }
    }

    /** Instructions (not inputs) and calls: what costs code. */
    private static int weight(Let l) { return l.rhs() instanceof Instr i && !(i instanceof Instr.Input) || l.rhs() instanceof Rhs.Call ? 1 : 0; }

    private static int weight(List<Let> lets) { return lets.stream().mapToInt(Lowering::weight).sum(); }

    /** Consecutive lets with at most PART instructions and calls each. */
    private static List<List<Let>> parts(List<Let> lets) {
        List<List<Let>> out = new ArrayList<>();
        List<Let> cur = new ArrayList<>();
        int weight = 0;
        for (Let l : lets) {
            int w = weight(l);
            if (weight + w > Emitter.PART && !cur.isEmpty()) {
                out.add(cur);
                cur = new ArrayList<>();
                weight = 0;
            }
            cur.add(l);
            weight += w;
        }
        out.add(cur);
        return out;
    }

    /** The vars a let reads (a fn's body is closed: it reads none of the block's). */
    private static List<Var> reads(Let l) {
        return switch (l.rhs()) {
            case Instr i -> i.operands();
            case Rhs.Call c -> c.args();
            case Rhs.Handle h -> h.args();
            case Rhs.Tuple t -> t.elems();
            case Rhs.Fn _ -> List.of();
        };
    }

    /**
     * One part: a func of the values it reads, returning the values it defines that {@code later}
     * reads. A literal or fill read from an earlier part is made again here (not passed); a value
     * the part only passes through is not returned (the caller has it), nor a view of one of its
     * values (the value is returned and the caller makes the view): a returned view or argument
     * would be a copy, or crash buffer-results-to-out-params{hoist-static-allocs}.
     */
    private void part(List<Let> lets, int index, Set<Var> later, Var result, Map<Var, FnInfo> fnScope) {
        Lowering p = new Lowering(module, symbol + ".part" + index);
        p.fills = fills;
        p.remade = remade;
        Set<Var> defined = new HashSet<>();
        List<Val> args = new ArrayList<>(), params = new ArrayList<>();
        List<Let> again = new ArrayList<>();
        Map<String, Val> needInputs = new LinkedHashMap<>();
        Map<Var, FnInfo> scope = new HashMap<>(fnScope);
        for (Let l : lets) {
            for (Var v : reads(l)) {
                if (defined.contains(v) || p.env.containsKey(v) || again.contains(remade.get(v))) continue;
                if (remade.containsKey(v)) {
                    again.add(remade.get(v));
                    continue;
                }
                List<Val> vs = values(v, l);
                List<Val> mine = new ArrayList<>();
                for (Val x : vs) {
                    Val y = new Val(vs.size() == 1 ? p.name(v) : p.fresh("arg"), x.type());
                    mine.add(y);
                    args.add(x);
                    params.add(y);
                }
                p.env.put(v, mine);
            }
            if (l.rhs() instanceof Instr.Input) needInputs.put(l.var().name(), inputs.get(l.var().name()));
            if (l.rhs() instanceof Rhs.Call c) scope.get(c.fn()).inputs.keySet().forEach(n -> needInputs.put(n, inputs.get(n)));
            if (l.rhs() instanceof Rhs.Fn fn) scope.put(l.var(), module.infoOf.get(fn));
            defined.addAll(l.binders());
        }
        for (Val in : needInputs.values()) {
            p.inputs.put(in.ssa().substring("%in.".length()), in);
            args.add(in);
            params.add(in);
        }
        for (Let l : lets)
            for (Var v : l.binders())
                if (destinations.containsKey(v)) {
                    Val d = destinations.get(v);
                    args.add(d);
                    params.add(d);
                    p.destinations.put(v, d);
                }
        p.lets(again, fnScope);
        p.lets(lets, fnScope);
        for (Let l : lets) if (l.rhs() instanceof Rhs.Fn fn) fnScope.put(l.var(), module.infoOf.get(fn));
        Map<String, Val> outer = new HashMap<>();
        for (int i = 0; i < params.size(); i++) outer.put(params.get(i).ssa(), args.get(i));
        Map<String, Integer> at = new LinkedHashMap<>();
        List<Val> outs = new ArrayList<>();
        List<Var> out = new ArrayList<>();
        for (Let l : lets)
            for (Var v : l.binders())
                if (later.contains(v) && p.env.containsKey(v) && !(remade.containsKey(v) && !v.equals(result))) {
                    out.add(v);
                    for (Val x : p.env.get(v)) {
                        Val base = p.views.getOrDefault(x.ssa(), x);
                        if (!outer.containsKey(base.ssa()) && !at.containsKey(base.ssa())) {
                            at.put(base.ssa(), outs.size());
                            outs.add(base);
                        }
                    }
                }
        module.extra.append(p.f.func(p.symbol, params, outs, "", true));
        List<Val> res = f.call(fresh("part"), p.symbol, args, outs.stream().map(Val::type).toList(), true);
        for (Var v : out) {
            List<Val> mine = new ArrayList<>();
            for (Val x : p.env.get(v)) {
                Val base = p.views.getOrDefault(x.ssa(), x);
                Val mineBase = outer.containsKey(base.ssa()) ? outer.get(base.ssa()) : res.get(at.get(base.ssa()));
                mine.add(base == x ? mineBase : reshape(fresh("view"), mineBase, x.type().shape()));
            }
            env.put(v, mine);
        }
    }

    private static String what(Let l) {
        return l.rhs() instanceof Instr i ? i.op() : l.rhs().getClass().getSimpleName().toLowerCase(java.util.Locale.ROOT);
    }

    void let(Let l, Map<Var, FnInfo> scope) {
        switch (l.rhs()) {
            case Rhs.Fn _ -> { }
            case Rhs.Call c -> {
                FnInfo fi = scope.get(c.fn());
                List<Val> args = new ArrayList<>();
                for (Var a : c.args()) args.add(one(a, l));
                List<Val> res = call(fi, args, l.destructure() || l.var().temporary() ? fresh("call") : name(l.var()), "let " + l.displayName());
                bind(l, res);
            }
            case Rhs.Handle h -> throw new MlirError(l.pos(), "let " + l.displayName() + ": handle " + h.fn() + " is lowered after transform_ad");
            case Rhs.Tuple t -> {
                List<Val> vs = new ArrayList<>();
                for (Var e : t.elems()) vs.addAll(values(e, l));
                bind(l, vs);
            }
            case Instr ins -> {
                if (ins instanceof Instr.Input) {
                    env.put(l.var(), List.of(inputs.get(l.var().name())));
                    return;
                }
                if (ins instanceof Literal || ins instanceof Fill) remade.put(l.var(), l);
                if (ins instanceof Instr.Fused fu && (l.destructure() || fu.results() != 1)) {
                    bind(l, fusions.lower(l, fu));
                    return;
                }
                String n = name(l.var());
                if (destinations.containsKey(l.var())) pending.put(n, destinations.get(l.var()));
                env.put(l.var(), List.of(lower(l, ins, n)));
                pending.remove(n);
            }
        }
    }

    private void bind(Let l, List<Val> vs) {
        if (!l.destructure()) {
            env.put(l.var(), vs);
            return;
        }
        if (vs.size() != l.binders().size())
            throw new MlirError(l.pos(), "let " + l.displayName() + ": destructuring " + l.binders().size() + " names from " + vs.size() + " values");
        for (int i = 0; i < vs.size(); i++) env.put(l.binders().get(i), List.of(vs.get(i)));
    }

    private List<Val> call(FnInfo fi, List<Val> args, String res, String where) {
        if (fi.fn.result() instanceof Type.Fn) throw new MlirError(where + ": a fn returning a fn has no lowering");
        List<Val> all = new ArrayList<>(args);
        for (String n : fi.inputs.keySet()) all.add(inputs.get(n));
        List<Val> got = f.call(res, fi.symbol, all, fi.returns.returned().stream().map(Val::type).toList(), false);
        return fi.returns.at(got, all);
    }

    List<Val> values(Var v, Let at) {
        List<Val> vs = env.get(v);
        if (vs == null) throw new MlirError(at.pos(), "let " + at.displayName() + ": " + v + " is not a tensor value here");
        return vs;
    }

    Val one(Var v, Let at) {
        List<Val> vs = values(v, at);
        if (vs.size() != 1) throw new MlirError(at.pos(), "let " + at.displayName() + ": " + v + " is a tuple, not a tensor");
        return vs.getFirst();
    }

    // ---- the instructions: one case each, families as one case where the lowering is uniform ----

    /** Lowers one instruction; its last op defines {@code out}. */
    Val lower(Let l, Instr ins, String out) {
        TensorType t = l.tensorType();
        Function<Var, Val> x = v -> one(v, l);
        return switch (ins) {
            case Input _ -> throw new IllegalStateException("inputs are arguments");
            case Literal(var lt, var payload) -> f.literal(out, lt, payload);
            case Fill(var ft, var v) -> {
                fills.put(l.var(), v);
                yield f.fill(out, ft, v);
            }
            case Instr.Unary u -> elementwise(out, t, List.of(x.apply(u.operands().getFirst())),
                    (b, a) -> List.of(unary(b, u, t.dtype(), a.getFirst())));
            case Instr.Binary bi -> elementwise(out, t, bi.operands().stream().map(x).toList(), (b, a) -> List.of(binary(b, bi, a)));
            case ArgMax(var a, var axis) -> rows.argmax(x.apply(a), axis, t);
            case Clamp(var a, var lo, var hi) -> elementwise(out, t, List.of(x.apply(a)),
                    (b, a0) -> List.of(b.arith("minsi", b.arith("maxsi", a0.getFirst(), b.cst(DType.I64, lo)), b.cst(DType.I64, hi))));
            case Requant(var a, var shift) -> elementwise(out, t, List.of(x.apply(a)),
                    (b, a0) -> List.of(b.arith("shrsi", a0.getFirst(), b.cst(DType.I64, shift))));
            case Instr.Matmul(var a, var b) -> matmul(out, x.apply(a), false, x.apply(b), false, t);
            case Reshape(var a, var to) -> reshape(out, x.apply(a), to);
            case Transpose(var a, var perm) -> perm.rank() == 0 ? x.apply(a) : f.transpose(out, x.apply(a), perm);
            case Broadcast(var a, var to) -> {
                Val src = x.apply(a);
                int r = to.rank(), lead = r - src.type().rank();      // new leading axes read nothing
                int[] m = new int[r - lead];
                for (int i = 0; i < m.length; i++) m[i] = src.type().shape().dim(i) == 1 && to.dim(lead + i) != 1 ? AffineMap.ZERO : lead + i;
                yield generic(out, r, Set.of(), List.of(new Operand(src, new AffineMap(m))), List.of(new Operand(dest(out, t), AffineMap.identity(r))),
                        (b, args) -> List.of(args.getFirst()));
            }
            case Slice(var a, var axis, var start, var size) -> slices.slice(out, x.apply(a), axis, start, t);
            case Concat(var a, var b, var axis) -> slices.concat(out, x.apply(a), x.apply(b), axis, t);
            case Pad(var a, var axis, var before, var after) -> slices.pad(out, x.apply(a), axis, before, t);
            case Sum(var a, var axis, var keep) -> {
                Val s = reduce(keep ? fresh("sum") : out, List.of(x.apply(a)), List.of(), axis, t.dtype(), 0.0,
                        (b, args) -> List.of(b.accumulate(args.getLast(), args.getFirst())));
                yield keep ? reshape(out, s, t.shape()) : s;
            }
            case LogSoftmax(var a, var axis) -> rows.softmax(out, x.apply(a), axis, true);
            case Softmax(var a, var axis) -> rows.softmax(out, x.apply(a), axis, false);
            case RmsNorm(var a, var w, var r, var eps) -> rows.rmsnorm(out, x.apply(a), w.map(x), r.map(x), eps);
            case LayerNorm(var a, var w, var bias, var eps) -> rows.layernorm(out, x.apply(a), w.map(x), bias.map(x), eps);
            case L2Norm(var a, var eps) -> rows.l2norm(out, x.apply(a), eps);
            case Rope(var a, var c, var s, var heads, var rotary, var start) -> rows.rope(out, x.apply(a), x.apply(c), x.apply(s), heads, rotary, start);
            case Attention(var q, var k, var v, var sinks, var o) -> attention.attention(out, x.apply(q), x.apply(k), x.apply(v), sinks.map(x), o, t);
            case AttentionLse(var q, var k, var sinks, var o) -> attention.lse(out, x.apply(q), x.apply(k), sinks.map(x), o, t);
            case AttentionExp(var q, var k, var lse, var o) -> attention.exp(out, x.apply(q), x.apply(k), x.apply(lse), o, t);
            case AttentionGrad ag -> one(fusions.attentionGrad(l, ag), l);
            case AttentionProduct(var a, var b, var o, var form) -> attention.product(out, x.apply(a), x.apply(b), o, form, t);
            case TakeAlongAxis(var v, var i, var axis) -> rows.takeAlongAxis(out, x.apply(v), x.apply(i), axis, t);
            case Gather(var v, var i) -> rows.gather(out, x.apply(v), x.apply(i), t);
            case SetRows(var tab, var i, var r) -> rows.setRows(out, x.apply(tab), x.apply(i), x.apply(r));
            case ScatterAdd(var u, var i, var dest) -> rows.scatterAdd(out, x.apply(u), x.apply(i), dest);
            case ScatterAlongAxis(var axis, var u, var i, var dest) -> rows.scatterAlongAxis(out, axis, x.apply(u), x.apply(i), dest);
            case RandomUniform(var key, var rt) -> random.uniform(out, x.apply(key), rt);
            case RandomNormal(var key, var rt) -> random.normal(out, x.apply(key), rt);
            case Dropout(var a, var key, var p) -> random.dropout(out, x.apply(a), x.apply(key), p);
            case Instr.Fused fu -> {
                List<Val> r = fusions.lower(l, fu);
                if (r.size() != 1) throw new MlirError(l.pos(), "let " + l.displayName() + ": " + fu.op() + " makes " + r.size() + " values, bound to one name");
                yield r.getFirst();
            }
        };
    }

    // ---- scalar bodies of the elementwise families

    /** One element of a unary instruction of dtype d. */
    static Scalar unary(Body b, Instr.Unary u, DType d, Scalar x) {
        return switch (u) {
            case Neg _ -> b.negf(x);
            case Exp _ -> b.math("exp", x);
            case Log _ -> b.math("log", x);
            case Sqrt _ -> b.math("sqrt", x);
            case Rsqrt _ -> b.divf(b.cst(d, 1), b.math("sqrt", x));
            case Tanh _ -> b.math("tanh", x);
            case Sigmoid _ -> sigmoid(b, d, x);
            case Reciprocal _ -> b.divf(b.cst(d, 1), x);
            case Silu _ -> b.mul(x, sigmoid(b, d, x));
            case Gelu _ -> {
                Scalar x3 = b.mul(b.mul(x, x), x);
                Scalar z = b.mul(b.cst(d, Gelu.GELU_C), b.add(x, b.mul(b.cst(d, Gelu.GELU_K), x3)));
                yield b.mul(b.mul(b.cst(d, 0.5), x), b.add(b.cst(d, 1), b.math("tanh", z)));
            }
            case Relu _ -> d.floating() ? b.maximumf(x, b.cst(d, 0)) : b.arith("maxsi", x, b.cst(d, 0));
            case Softcap(var ignored, var cap) -> {
                Scalar c = b.cst(d, cap);
                yield b.mul(c, b.math("tanh", b.divf(x, c)));
            }
        };
    }

    /** One element of a binary instruction. */
    static Scalar binary(Body b, Instr.Binary bi, List<Scalar> a) {
        return switch (bi) {
            case Add _ -> b.add(a.get(0), a.get(1));
            case Sub _ -> b.subf(a.get(0), a.get(1));
            case Mul _ -> b.mul(a.get(0), a.get(1));
            case Div _ -> b.divf(a.get(0), a.get(1));
            case Maximum _ -> b.maximumf(a.get(0), a.get(1));
            case Greater _ -> b.cmpf("ogt", a.get(0), a.get(1));
            case Select _ -> b.select(a.get(0), a.get(1), a.get(2));
            case Swiglu _ -> b.mul(b.mul(a.get(0), sigmoid(b, ((Mlir.Elem) a.get(0).type()).dtype(), a.get(0))), a.get(1));
        };
    }

    /** σ(x) = 1 / (1 + exp(−x)). */
    static Scalar sigmoid(Body b, DType d, Scalar x) {
        Scalar ex = b.math("exp", b.negf(x));
        return b.divf(b.cst(d, 1), b.add(b.cst(d, 1), ex));
    }

    // ---- generics

    /** A generic with one result. */
    Val generic(String out, int loops, Set<Integer> red, List<Operand> ins, List<Operand> outs, BodyFn body) {
        return f.generic(out, loops, red, ins, outs, "", body).getFirst();
    }

    /** An all-parallel generic over t's shape, operands of t's shape (identity maps), into a fresh t. */
    Val elementwise(String out, TensorType t, List<Val> ops, BodyFn body) {
        int r = t.rank();
        List<Operand> ins = ops.stream().map(v -> new Operand(v, AffineMap.identity(r))).toList();
        return generic(out, r, Set.of(), ins, List.of(new Operand(dest(out, t), AffineMap.identity(r))), body);
    }

    /**
     * Reduces over {@code axis} of the shape of {@code full}'s operands (those in {@code rows} have
     * that shape without the axis) into a tensor of that reduced shape starting from {@code init}.
     * The body gets the ins, then the accumulator.
     */
    Val reduce(String out, List<Val> full, List<Val> rowOps, int axis, DType d, double init, BodyFn body) {
        TensorType ft = full.getFirst().type();
        int r = ft.rank();
        TensorType rt = new TensorType(d, ft.shape().drop(axis), ft.placement());
        List<Operand> ins = new ArrayList<>();
        for (Val v : full) ins.add(new Operand(v, AffineMap.identity(r)));
        for (Val v : rowOps) ins.add(new Operand(v, AffineMap.drop(r, axis)));
        return generic(out, r, Set.of(axis), ins, List.of(new Operand(f.filled(rt, init), AffineMap.drop(r, axis))), body);
    }

    /** An all-parallel generic over {@code full}'s shape with row operands broadcast along {@code axis}. */
    Val overRows(String out, TensorType t, List<Val> full, List<Val> rowOps, List<Val> lanes, int axis, BodyFn body) {
        int r = t.rank();
        List<Operand> ins = new ArrayList<>();
        for (Val v : full) ins.add(new Operand(v, AffineMap.identity(r)));
        for (Val v : rowOps) ins.add(new Operand(v, AffineMap.drop(r, axis)));
        for (Val v : lanes) ins.add(new Operand(v, new AffineMap(axis)));
        return generic(out, r, Set.of(), ins, List.of(new Operand(dest(out, t), AffineMap.identity(r))), body);
    }

    // ---- contraction and layout

    /**
     * a @ b of type t, either operand's last two axes swapped first when {@code ta} / {@code tb}:
     * rank 2 and 3 as one contraction, rank ≥ 4 with the batch dims collapsed around one. A
     * swapped a is read in place ({@code linalg.matmul_transpose_a}: each step of the product reads
     * a row of a, as it reads a row of b); a swapped b is transposed first (a column of b would be
     * a strided read), which costs a pass over b, not over the product.
     */
    Val matmul(String out, Val a, boolean ta, Val b, boolean tb, TensorType t) {
        int r = t.rank();
        if (r <= 3) return contract(out, a, ta, tb ? f.transpose(b, kina.ir.Perm.lastTwo(r)) : b, t);
        Reassoc assoc = batchAssoc(r);
        Val a3 = f.collapse(fresh("collapse"), a, assoc, batch3(a.type()));
        Val b3 = f.collapse(fresh("collapse"), b, assoc, batch3(b.type()));
        Val c = contract(fresh("bmm"), a3, ta, tb ? f.transpose(b3, kina.ir.Perm.lastTwo(3)) : b3, batch3(t));
        return f.expand(out, c, assoc, t);
    }

    /**
     * a @ b (a's last two axes swapped when {@code ta}) of rank 2 or 3 (a batch) into a fresh
     * tensor, in a private func of its own that zero-fills its destination and accumulates
     * ({@code kina.contraction}, with the {@code kina.schedule} class the {@link Schedule} tiles
     * and vectorizes it by). Destination passing: the caller's empty tensor is the result
     * (bufferized in place, the equivalent result dropped), so no result is copied out of the func.
     */
    Val contract(String out, Val a, boolean ta, Val b, TensorType t) {
        int r = t.rank();
        Shape sa = a.type().shape(), st = t.shape();
        Emitter.Contraction c = new Emitter.Contraction(symbol + ".mm" + module.contractions.size(), ta, r == 3 ? st.dim(0) : 0,
                st.dim(r - 2), st.dim(r - 1), sa.dim(ta ? r - 2 : r - 1), t.dtype());
        module.contractions.add(c);
        Mlir.Fn body = new Mlir.Fn();
        Val pa = new Val("%a", a.type()), pb = new Val("%b", b.type()), dest = new Val("%out", t);
        Val res = body.named("%c", c.op(), pa, pb, body.fillInto("%zero", dest, 0));
        module.extra.append(body.func(c.symbol(), List.of(pa, pb, dest), List.of(res),
                " attributes {kina.contraction, kina.schedule = \"" + c.key() + "\"}", false));
        return f.call(out, c.symbol(), List.of(a, b, f.empty(t)), List.of(t), false).getFirst();
    }

    /** [[0, …, r−3], [r−2], [r−1]]: the batch dims grouped. */
    private static Reassoc batchAssoc(int r) {
        List<Integer> g = new ArrayList<>();
        for (int i = 0; i < r - 2; i++) g.add(i);
        return new Reassoc(List.of(g, List.of(r - 2), List.of(r - 1)));
    }

    private static TensorType batch3(TensorType t) {
        Shape s = t.shape();
        int r = s.rank();
        return t.withShape(Shape.of(s.prefix(r - 2).vol(), s.dim(r - 2), s.dim(r - 1)));
    }

    /**
     * x with shape {@code to} (same volume, row-major order kept): the value itself, one collapse or
     * one expand when the dims group, else a collapse to rank 1 then an expand.
     */
    Val reshape(String out, Val x, Shape to) {
        Shape from = x.type().shape();
        TensorType tt = x.type().withShape(to);
        if (from.equals(to)) return x;
        Reassoc g = to.rank() == 0 || from.rank() == 0 ? new Reassoc(List.of())
                : to.rank() == 1 ? Reassoc.all(0, from.rank())
                : from.rank() == 1 ? Reassoc.all(0, to.rank())
                : to.rank() < from.rank() ? groups(from, to)
                : to.rank() > from.rank() ? groups(to, from) : null;
        if (g == null) return reshape(out, reshape(fresh("flat"), x, Shape.of(from.vol())), to);
        Val v = to.rank() < from.rank() ? f.collapse(out, x, g, tt) : f.expand(out, x, g, tt);
        views.put(v.ssa(), views.getOrDefault(x.ssa(), x));
        return v;
    }

    /**
     * The reassociation grouping the dims of {@code big} into those of {@code small}: each small
     * dim takes the next big dims until their product equals it, trailing unit dims join the last
     * group; null when the dims do not group so (or a dim is 0).
     */
    private static Reassoc groups(Shape big, Shape small) {
        for (long d : big.dims()) if (d == 0) return null;
        List<List<Integer>> gs = new ArrayList<>();
        int i = 0;
        for (int j = 0; j < small.rank(); j++) {
            List<Integer> g = new ArrayList<>();
            long p = 1;
            do {
                if (i == big.rank()) return null;
                p *= big.dim(i);
                g.add(i++);
            } while (p < small.dim(j));
            if (p != small.dim(j)) return null;
            gs.add(g);
        }
        for (; i < big.rank(); i++) {
            if (big.dim(i) != 1) return null;
            gs.getLast().add(i);
        }
        return new Reassoc(gs);
    }
}
