package kina.plan;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiPredicate;
import java.util.function.Function;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Fusions;
import kina.ir.Instr;
import kina.ir.Instr.*;
import kina.ir.Instrs;
import kina.ir.Let;
import kina.ir.Placement;
import kina.ir.Program;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/**
 * The plan's rewrite table: each rule finds a pattern in the flat program and replaces it by
 * one of the plan's fusions ({@link Instr.Fused}), whose reference kernel computes what the
 * pattern computed in the same order and whose native kernel is faster. Rules run in table
 * order, each over the whole program; a let no rule matches passes through unchanged. The
 * rewritten program is an ordinary program: {@code kina plan FILE} prints it, and the interpreter
 * runs it to the same bits as the original. A fused let takes the place where its kernel runs
 * (the schedule is the program's order) and binds the very Vars of the values it makes, so no
 * reader changes.
 *
 * <p>Two kinds of rule. Where a fusion is a shape of lets, its rule is a pattern read off the
 * fusion's expansion ({@link Fusions#expand}, the one place its meaning is written; see
 * {@link #fromExpansion}): {@code matmul_t} and {@code softmax_grad}. Where a fusion merges
 * instructions that share operands but do not read each other, like common-subexpression
 * elimination, its rule is a short pass that groups them: {@code attention_with_lse},
 * {@code attention_backward}, {@code swiglu_sigmoid}, {@code matmul_shared}. {@code dead} is
 * liveness, and {@code elementwise} ({@link FuseElementwise}) partitions chains of elementwise
 * lets into passes over the elements.
 */
final class Rewrites {
    private Rewrites() {}

    /** One rule: its name (the fusion it makes), what it recognises, and its pass. */
    record Rule(String name, String recognises, Function<Graph, Graph.Edit> pass) {}

    /** The table, in the order the rules run (an earlier rule's fusions are what a later one sees). */
    static final List<Rule> TABLE = List.of(
            new Rule("dead", "a let whose value no result needs (one that can trap stays, as the interpreter runs it)",
                    Rewrites::dead),
            new Rule("matmul_t", "a floating transpose of the last two axes read only by matmuls",
                    Rewrites::transposedOperands),
            new Rule("softmax_grad", "p * (dp - (p * dp).sum(last, keepdims).broadcast(..)) over F32, as the softmax VJP writes it",
                    Rewrites::softmaxGrads),
            new Rule("elementwise", "chains of F32 / F64 neg, sqrt, add, sub, mul, div and maximum, with the broadcasts and fills they read",
                    FuseElementwise::fuse),
            new Rule("attention_with_lse", "an F32 attention and a later attention_lse over the same q, k, sinks and options",
                    Rewrites::sharedLse),
            new Rule("attention_backward", "F32 attention_dq, attention_dk and attention_dv over the same operands and options",
                    Rewrites::sharedBackward),
            new Rule("swiglu_sigmoid", "an F32 swiglu and a later sigmoid of the same gate", Rewrites::sharedSigmoids),
            new Rule("matmul_shared", "F32 matmuls of one batch element with one left operand and layout",
                    Rewrites::sharedOperands));

    /** Every rule's name. */
    static final Set<String> ALL = Set.copyOf(TABLE.stream().map(Rule::name).toList());

    /** The rewritten program, and how many fusions (for "dead": lets dropped) each rule made. */
    record Result(Program program, Map<String, Integer> counts) {}

    /** Runs the rules named in {@code enabled} (in table order) over a flat program. */
    static Result rewrite(Program flat, Set<String> enabled) {
        List<Let> lets = flat.body().lets();
        Var result = flat.body().result();
        Map<String, Integer> counts = new LinkedHashMap<>();
        for (Rule r : TABLE) {
            if (!enabled.contains(r.name())) continue;
            Graph.Edit e = r.pass().apply(new Graph(lets, result));
            counts.put(r.name(), e.made());
            lets = e.lets();
            defineBeforeUse(lets, r.name());
        }
        return new Result(new Program(flat.file(), new Block(lets, result, flat.body().resultPos())), counts);
    }

    /** A rule's own check: every value a let reads is bound by an earlier let (a rule that breaks it is a bug). */
    private static void defineBeforeUse(List<Let> lets, String rule) {
        Set<Var> bound = new java.util.HashSet<>();
        for (Let l : lets) {
            for (Var a : l.reads())
                if (!bound.contains(a)) throw new IllegalStateException("rewrite " + rule + ": let " + l.binders() + " reads " + a + " before it is bound");
            bound.addAll(l.binders());
        }
    }

    // ---- helpers ----------------------------------------------------------------------------

    private static boolean f32(Graph g, Var v) { return g.type(v).dtype() == DType.F32; }

    /** A let binding {@code vars} (one plain, several destructured) to {@code ins}, typed by {@code types}. */
    static Let bind(List<Var> vars, Instr ins, List<TensorType> types) {
        if (vars.size() == 1) return Let.typed(vars.getFirst(), ins, types.getFirst());
        return new Let(vars, true, ins, kina.ir.Pos.NONE, null, new Type.Tuple(List.copyOf(types)));
    }

    // ---- dead lets --------------------------------------------------------------------------

    /** Drops, last to first, each let no result needs, except inputs and the indexing instructions (which may trap). */
    static Graph.Edit dead(Graph g) {
        Graph.Edit e = new Graph.Edit(g);
        java.util.Set<Var> needed = new java.util.HashSet<>();
        for (Var o : g.outputs()) needed.add(g.rootOf(o));
        for (int i = g.size() - 1; i >= 0; i--) {
            Let l = g.let(i);
            Instr ins = g.instr(i);
            boolean keep = ins == null || ins instanceof Input || ins instanceof Indexing
                    || l.binders().stream().anyMatch(b -> needed.contains(g.rootOf(b)));
            if (!keep) { e.remove(i); continue; }
            for (Var a : l.reads()) needed.add(g.rootOf(a));
        }
        return e;
    }

    // ---- rules read off a fusion's expansion --------------------------------------------------

    /** The operands' types an expansion is read off for its pattern: its shape of lets does not depend on them. */
    private static final TensorType SAMPLE = new TensorType(DType.F32, Shape.of(1, 1), Placement.HOST);

    /**
     * The rule that makes fusions of {@code variants}' form from their expansions: at each value
     * (in schedule order), each variant's expansion in turn, as a {@link Pattern#of pattern}
     * rooted at its first result; the first that matches, whose instructions' attributes are
     * those of the fusion's expansion over the matched operands, whose values other than results
     * pass {@code inner} and whose fusion passes {@code when}, becomes the fusion. It takes the
     * place of its first result's let or ({@code early}) of the first matched let after which its
     * operands are bound, and binds the very Vars of its results; the other matched lets drop out.
     * A match that takes a value another match makes or fuses is skipped; values other than
     * results may be shared (each match drops them).
     */
    private static Graph.Edit fromExpansion(Graph g, List<Fused> variants, BiPredicate<Graph, Var> inner, BiPredicate<Graph, Fused> when,
                                            boolean early) {
        Graph.Edit e = new Graph.Edit(g);
        List<Fusions.Expansion> shapes = variants.stream().map(v -> v.expand(x -> SAMPLE)).toList();
        List<Pattern> patterns = new ArrayList<>();
        for (int k = 0; k < variants.size(); k++)
            patterns.add(Pattern.of(shapes.get(k), Set.copyOf(variants.get(k).operands()), shapes.get(k).results().getFirst()));
        Set<Integer> taken = new HashSet<>();                          // lets a match replaced, or whose result it binds
        for (int i = 0; i < g.size(); i++) {
            if (g.instr(i) == null || g.let(i).destructure()) continue;
            for (int k = 0; k < variants.size(); k++) {
                Map<String, Var> m = patterns.get(k).match(g, g.let(i).var());
                Fused f = m == null ? null : (Fused) Instrs.mapOperands(variants.get(k), v -> m.get(v.name()));
                if (f == null || !when.test(g, f)) continue;
                Fusions.Expansion shape = shapes.get(k), real = f.expand(g::type);
                List<Var> results = shape.results().stream().map(v -> m.get(v.name())).toList();
                List<Integer> at = new ArrayList<>();
                boolean ok = true;
                for (int j = 0; j < shape.lets().size() && ok; j++) {
                    Var v = m.get(shape.lets().get(j).var().name());
                    int d = g.def(v);
                    at.add(d);
                    ok = sameAttributes(g.instr(d), (Instr) real.lets().get(j).rhs())
                            && (results.contains(v) ? !taken.contains(d) && !e.dropped(d) : inner.test(g, v) && !taken.contains(d));
                }
                int bound = f.operands().stream().mapToInt(g::def).max().orElse(-1);
                int place = early ? at.stream().filter(d -> d > bound).mapToInt(Integer::intValue).min().orElse(-1) : i;
                if (!ok || place < 0 || results.stream().anyMatch(r -> g.def(r) < place)) continue;
                for (int d : at) if (d != place) e.drop(d);
                e.replace(place, bind(results, f, results.stream().map(g::type).toList()));
                taken.add(place);
                for (Var r : results) taken.add(g.def(r));
                break;
            }
        }
        return e;
    }

    /** Whether two instructions are of one class with the same attributes (their operands aside). */
    private static boolean sameAttributes(Instr a, Instr b) {
        Var x = new Var("x");
        return Instrs.mapOperands(a, v -> x).equals(Instrs.mapOperands(b, v -> x));
    }

    // ---- matmul_t ---------------------------------------------------------------------------

    /**
     * A floating {@code transpose} that swaps the last two axes, is no result, has no view and is
     * read only as a matmul operand folds into each matmul reading it: {@code %matmul_t} with that
     * operand's flag set, at the matmul's place (a matmul reading no folded transpose stays a matmul).
     */
    static Graph.Edit transposedOperands(Graph g) {
        Var a = new Var("a"), b = new Var("b");
        return fromExpansion(g, List.of(new MatmulT(a, b, true, true), new MatmulT(a, b, true, false), new MatmulT(a, b, false, true)),
                (h, t) -> h.type(t).dtype().floating() && !h.pinned(t) && h.readers(t).stream().allMatch(r -> h.instr(r) instanceof Matmul),
                (h, f) -> true, false);
    }

    // ---- softmax_grad -----------------------------------------------------------------------

    /**
     * The backward of a softmax over the last axis, ds = p * (dp - (p * dp).sum(axis=last,
     * keepdims=true).broadcast(…)) over F32, becomes one row pass {@code %softmax_grad(p, dp)} at
     * the first mul's place (its operands are live there); with its row sums d as a second result
     * when d has other readers.
     */
    static Graph.Edit softmaxGrads(Graph g) {
        Var p = new Var("p"), dp = new Var("dp");
        return fromExpansion(g, List.of(new SoftmaxGrad(p, dp, false), new SoftmaxGrad(p, dp, true)), Graph::once,
                (h, f) -> f instanceof SoftmaxGrad sg && f32(h, sg.p()) && h.type(sg.p()).rank() > 0, true);
    }

    // ---- attention_with_lse -----------------------------------------------------------------

    /**
     * The online softmax run once: an F32 attention(q, k, v[, sinks], opts) also makes the first
     * later attention_lse(q, k[, sinks], opts) over the same values (the backward's, which the
     * forward's blocks compute anyway).
     */
    static Graph.Edit sharedLse(Graph g) {
        Graph.Edit e = new Graph.Edit(g);
        for (int i = 0; i < g.size(); i++) {
            if (!(g.instr(i) instanceof Attention at) || !f32(g, g.let(i).var())) continue;
            for (int j = i + 1; j < g.size(); j++) {
                if (e.dropped(j) || !(g.instr(j) instanceof AttentionLse ls)) continue;
                boolean same = ls.opts().equals(at.opts()) && ls.sinks().isPresent() == at.sinks().isPresent()
                        && g.same(ls.q(), at.q()) && g.same(ls.k(), at.k())
                        && (at.sinks().isEmpty() || g.same(ls.sinks().get(), at.sinks().get()));
                if (!same) continue;
                List<Var> vars = List.of(g.let(i).var(), g.let(j).var());
                e.replace(i, bind(vars, new AttentionWithLse(at.q(), at.k(), at.v(), at.sinks(), at.opts()), vars.stream().map(g::type).toList()));
                e.drop(j);
                break;
            }
        }
        return e;
    }

    // ---- attention_backward -----------------------------------------------------------------

    /**
     * One pass for attention's cotangents: F32 attention_dq, attention_dk and attention_dv (two or
     * three of them) over the same six operands and options run as one {@code %attention_backward}
     * where the first of them ran (each pair's p and ds computed once).
     */
    static Graph.Edit sharedBackward(Graph g) {
        Graph.Edit e = new Graph.Edit(g);
        for (int i = 0; i < g.size(); i++) {
            if (e.dropped(i) || !(g.instr(i) instanceof AttentionGrad first) || !f32(g, g.let(i).var())) continue;
            Var[] by = new Var[AttentionGrad.Wrt.values().length];
            List<Integer> lets = new ArrayList<>();
            for (int j = i; j < g.size(); j++) {
                if (e.dropped(j) || !(g.instr(j) instanceof AttentionGrad ag) || by[ag.wrt().ordinal()] != null
                        || !ag.opts().equals(first.opts())) continue;
                boolean same = true;
                for (int k = 0; k < ag.operands().size(); k++) same &= g.same(ag.operands().get(k), first.operands().get(k));
                if (!same) continue;
                by[ag.wrt().ordinal()] = g.let(j).var();
                lets.add(j);
            }
            if (lets.size() < 2) continue;
            List<Var> vars = new ArrayList<>();
            for (Var v : by) if (v != null) vars.add(v);
            e.replace(i, bind(vars, new AttentionBackward(first.q(), first.k(), first.v(), first.g(), first.lse(), first.d(), first.opts(),
                    by[0] != null, by[1] != null, by[2] != null), vars.stream().map(g::type).toList()));
            for (int j : lets) if (j != i) e.drop(j);
        }
        return e;
    }

    // ---- swiglu_sigmoid ---------------------------------------------------------------------

    /** σ(gate) computed once: an F32 swiglu(gate, up) also makes a later sigmoid of the same gate (swiglu's VJP reads it). */
    static Graph.Edit sharedSigmoids(Graph g) {
        Graph.Edit e = new Graph.Edit(g);
        Map<Var, Integer> swigluOfGate = new HashMap<>();               // the gate's storage → the first swiglu reading it
        for (int i = 0; i < g.size(); i++) {
            if (g.instr(i) instanceof Swiglu(Var gate, Var up) && f32(g, g.let(i).var())) {
                swigluOfGate.putIfAbsent(g.rootOf(gate), i);
            } else if (g.instr(i) instanceof Sigmoid(Var x)) {
                Integer sw = swigluOfGate.get(g.rootOf(x));
                if (sw == null || e.replaced(sw) || !(g.instr(sw) instanceof Swiglu(Var gate, Var up)) || !g.same(x, gate)) continue;
                Var z = g.let(sw).var(), s = g.let(i).var();
                e.replace(sw, bind(List.of(z, s), new SwigluSigmoid(gate, up), List.of(g.type(z), g.type(s))));
                e.drop(i);
            }
        }
        return e;
    }

    // ---- matmul_shared ----------------------------------------------------------------------

    /**
     * Products that share their left operand run as one {@code %matmul_shared} (A packed once for
     * all of them, each output's bits unchanged): F32 matmuls of one batch element with the same A
     * (one storage and shape, the same transposes), whose B is made before the first of them.
     * They run where the first ran. The q/k/v projections and their weight gradients, the FFN's
     * gate and up and theirs.
     */
    static Graph.Edit sharedOperands(Graph g) {
        Graph.Edit e = new Graph.Edit(g);
        Map<String, Integer> open = new HashMap<>();                    // A's storage, shape and layout → the group's first product
        Map<Integer, List<Integer>> groups = new LinkedHashMap<>();
        for (int i = 0; i < g.size(); i++) {
            Instr ins = g.instr(i);
            boolean ta, tb;
            Var a, b;
            switch (ins) {
                case Matmul(Var x, Var y) -> { a = x; b = y; ta = false; tb = false; }
                case MatmulT(Var x, Var y, boolean fa, boolean fb) -> { a = x; b = y; ta = fa; tb = fb; }
                case null, default -> { continue; }
            }
            TensorType t = g.type(g.let(i).var());
            int r = t.shape().rank();
            if (t.dtype() != DType.F32 || r < 2 || t.shape().vol() != t.shape().dim(r - 2) * t.shape().dim(r - 1)) continue;
            String key = g.rootOf(a) + " " + g.type(a).shape() + " " + ta + " " + tb;
            Integer first = open.get(key);
            if (first != null && g.madeAt(b) < first) { groups.get(first).add(i); continue; }
            open.put(key, i);
            groups.put(i, new ArrayList<>(List.of(i)));
        }
        for (var grp : groups.entrySet()) {
            List<Integer> m = grp.getValue();
            if (m.size() < 2) continue;
            int at = grp.getKey();
            List<Var> bs = new ArrayList<>(), vars = new ArrayList<>();
            for (int k : m) {
                bs.add(g.instr(k).operands().get(1));
                vars.add(g.let(k).var());
                e.hoist(bs.getLast(), at);                               // a B viewed later from a value made before
                if (k != at) e.drop(k);
            }
            boolean[] flags = g.instr(at) instanceof MatmulT mt ? new boolean[] {mt.transA(), mt.transB()} : new boolean[2];
            e.replace(at, bind(vars, new MatmulShared(g.instr(at).operands().getFirst(), bs, flags[0], flags[1]),
                    vars.stream().map(g::type).toList()));
        }
        return e;
    }
}
