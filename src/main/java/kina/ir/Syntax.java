package kina.ir;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import kina.ir.Instr.*;

/**
 * The surface form of every instruction written as a method call {@code x.name(…)} or, for an
 * IR-internal instruction, {@code %name(…)}: one table, which the parser (kina.syntax) reads to
 * build instructions and the {@link Printer} reads to write them back. Each entry gives the
 * positional arguments, the keyword arguments with their defaults, how to build the instruction
 * from them and how to take it apart again. Operators ({@code -x}, {@code + - * / @}), inputs,
 * literals and fills are grammar, not entries.
 */
public final class Syntax {
    private Syntax() {}

    /** The reserved words of the grammar: no name may be one of them. */
    public static final Set<String> KEYWORDS = Set.of(
            "let", "in", "fn", "handle", "with", "reverseMode", "forwardMode", "tensor", "payload",
            "ones", "zeros", "fill", "true", "false");

    /** What a positional argument is. The receiver of a method is its first TENSOR. */
    public enum Arg {
        /** A tensor expression. */
        TENSOR,
        /** A tensor expression, or absent when {@code )} or a keyword argument comes next. */
        OPT_TENSOR,
        /** Tensor expressions, zero or more, up to a keyword argument, a fn literal or {@code )}. */
        TENSORS,
        /** A shape {@code [d, …]}. */
        SHAPE,
        /** A permutation {@code [i, …]}. */
        PERM,
        /** A tensor type {@code tensor<…>}. */
        TYPE,
        /** A fn literal {@code fn(…) -> … { … }}. */
        FN
    }

    /** What a keyword argument's value is. */
    public enum KwKind { INT, BOOL, NUMBER }

    /**
     * A keyword argument; {@code dflt} null when it is required. The printer writes a keyword when
     * it is required, {@code shown}, or differs from its default.
     */
    public record Kw(String name, KwKind kind, Object dflt, boolean shown) {}

    /** The arguments of one form: positionals in order (a method's receiver first; an absent optional is null), keywords by name. */
    public record Args(List<Object> pos, Map<String, Object> kw) {
        public Args {
            pos = Collections.unmodifiableList(new ArrayList<>(pos));
            kw = Collections.unmodifiableMap(new LinkedHashMap<>(kw));
        }

        public Var var(int i) { return (Var) pos.get(i); }
        public Optional<Var> opt(int i) { return Optional.ofNullable((Var) pos.get(i)); }
        @SuppressWarnings("unchecked") public List<Var> vars(int i) { return (List<Var>) pos.get(i); }
        public Shape shape(int i) { return (Shape) pos.get(i); }
        public Perm perm(int i) { return (Perm) pos.get(i); }
        public TensorType type(int i) { return (TensorType) pos.get(i); }
        public Rhs.Fn fn(int i) { return (Rhs.Fn) pos.get(i); }
        public int integer(String k) { return ((Number) kw.get(k)).intValue(); }
        public long longInt(String k) { return ((Number) kw.get(k)).longValue(); }
        public boolean bool(String k) { return (Boolean) kw.get(k); }
        public double number(String k) { return (Double) kw.get(k); }
    }

    /**
     * One form: {@code name}, a method ({@code receiver.name(…)}) or IR-internal ({@code %name(…)}),
     * its positional and keyword arguments, {@code build} (arguments → instruction) and
     * {@code parts} (instruction → arguments, the inverse).
     */
    public record Form(String name, boolean internal, List<Arg> positional, List<Kw> keywords,
                       Function<Args, Instr> build, Function<Instr, Args> parts) {
        /** The positional arguments written inside the parentheses (a method's receiver comes before the dot). */
        public List<Arg> inParentheses() { return internal ? positional : positional.subList(1, positional.size()); }
    }

    /** The method form {@code name}, or null. */
    public static Form method(String name) {
        Form f = FORMS.get(name);
        return f != null && !f.internal() ? f : null;
    }

    /** The IR-internal form {@code name} (without the {@code %}), or null. */
    public static Form internal(String name) {
        Form f = FORMS.get(name);
        return f != null && f.internal() ? f : null;
    }

    /** The form that prints {@code ins}, or null for grammar (operators, inputs, literals, fills). */
    public static Form of(Instr ins) { return FORMS.get(ins.op()); }

    /** The method names, in table order (for messages). */
    public static List<String> methodNames() {
        return FORMS.values().stream().filter(f -> !f.internal()).map(Form::name).toList();
    }

    /** Every form, in table order. */
    public static Collection<Form> forms() { return Collections.unmodifiableCollection(FORMS.values()); }

    // ---- the table --------------------------------------------------------------------------------

    private static final Arg T = Arg.TENSOR, OPT = Arg.OPT_TENSOR;
    private static final Kw AXIS = kw("axis", KwKind.INT, null), HEADS = kw("heads", KwKind.INT, null);

    private static Kw kw(String name, KwKind kind, Object dflt) { return new Kw(name, kind, dflt, false); }

    private static Kw shown(String name, KwKind kind, Object dflt) { return new Kw(name, kind, dflt, true); }

    private static final List<Kw> ATTENTION = List.of(HEADS, kw("kv_heads", KwKind.INT, null),
            kw("scale", KwKind.NUMBER, Double.NaN), kw("softcap", KwKind.NUMBER, 0.0), kw("window", KwKind.INT, 0),
            kw("chunk", KwKind.INT, 0), kw("start", KwKind.INT, 0));

    private static AttnOpts attnOpts(Args a) {
        return new AttnOpts(a.integer("heads"), a.integer("kv_heads"), a.number("scale"), a.number("softcap"),
                a.integer("window"), a.integer("chunk"), a.integer("start"));
    }

    private static Map<String, Object> attnKw(AttnOpts o, Object... more) {
        Map<String, Object> m = kws("heads", o.heads(), "kv_heads", o.kvHeads(), "scale", o.scale(), "softcap", o.softcap(),
                "window", o.window(), "chunk", o.chunk(), "start", o.start());
        m.putAll(kws(more));
        return m;
    }

    private static Map<String, Object> kws(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    private static Args args(List<Object> pos, Map<String, Object> kw) { return new Args(pos, kw); }

    private static Args args(Object... pos) { return new Args(Arrays.asList(pos), Map.of()); }

    private static <I extends Instr> Form method(String name, List<Arg> pos, List<Kw> kws, Function<Args, Instr> build,
                                                 Class<I> type, Function<I, Args> parts) {
        return new Form(name, false, pos, kws, build, i -> parts.apply(type.cast(i)));
    }

    private static <I extends Instr> Form internal(String name, List<Arg> pos, List<Kw> kws, Function<Args, Instr> build,
                                                   Class<I> type, Function<I, Args> parts) {
        return new Form(name, true, pos, kws, build, i -> parts.apply(type.cast(i)));
    }

    /** A method with only a receiver and no keywords: {@code x.name()}. */
    private static <I extends Instr> Form nullary(String name, Function<Var, Instr> build, Class<I> type, Function<I, Var> x) {
        return method(name, List.of(T), List.of(), a -> build.apply(a.var(0)), type, i -> args(x.apply(i)));
    }

    /** Every form of the surface language (docs/language.md shows each); a new instruction adds one entry here. */
    private static final Map<String, Form> FORMS = table(
            nullary("exp", Exp::new, Exp.class, Exp::x),
            nullary("log", Log::new, Log.class, Log::x),
            method("reshape", List.of(T, Arg.SHAPE), List.of(), a -> new Reshape(a.var(0), a.shape(1)),
                    Reshape.class, i -> args(i.x(), i.to())),
            method("transpose", List.of(T, Arg.PERM), List.of(), a -> new Transpose(a.var(0), a.perm(1)),
                    Transpose.class, i -> args(i.x(), i.perm())),
            method("broadcast", List.of(T, Arg.SHAPE), List.of(), a -> new Broadcast(a.var(0), a.shape(1)),
                    Broadcast.class, i -> args(i.x(), i.to())),
            method("sum", List.of(T), List.of(AXIS, shown("keepdims", KwKind.BOOL, false)),
                    a -> new Sum(a.var(0), a.integer("axis"), a.bool("keepdims")),
                    Sum.class, i -> args(List.of(i.x()), kws("axis", i.axis(), "keepdims", i.keepDims()))),
            method("softmax", List.of(T), List.of(AXIS), a -> new Softmax(a.var(0), a.integer("axis")),
                    Softmax.class, i -> args(List.of(i.x()), kws("axis", i.axis()))),
            method("log_softmax", List.of(T), List.of(AXIS), a -> new LogSoftmax(a.var(0), a.integer("axis")),
                    LogSoftmax.class, i -> args(List.of(i.x()), kws("axis", i.axis()))),
            method("take_along_axis", List.of(T, T), List.of(AXIS), a -> new TakeAlongAxis(a.var(0), a.var(1), a.integer("axis")),
                    TakeAlongAxis.class, i -> args(List.of(i.values(), i.indices()), kws("axis", i.axis()))),
            method("gather", List.of(T, T), List.of(), a -> new Gather(a.var(0), a.var(1)),
                    Gather.class, i -> args(i.values(), i.indices())),
            // the transformer vocabulary
            nullary("sqrt", Sqrt::new, Sqrt.class, Sqrt::x),
            nullary("rsqrt", Rsqrt::new, Rsqrt.class, Rsqrt::x),
            nullary("tanh", Tanh::new, Tanh.class, Tanh::x),
            nullary("sigmoid", Sigmoid::new, Sigmoid.class, Sigmoid::x),
            nullary("reciprocal", Reciprocal::new, Reciprocal.class, Reciprocal::x),
            nullary("silu", Silu::new, Silu.class, Silu::x),
            nullary("gelu", Gelu::new, Gelu.class, Gelu::x),
            nullary("relu", Relu::new, Relu.class, Relu::x),
            method("softcap", List.of(T), List.of(kw("cap", KwKind.NUMBER, null)), a -> new Softcap(a.var(0), a.number("cap")),
                    Softcap.class, i -> args(List.of(i.x()), kws("cap", i.cap()))),
            method("argmax", List.of(T), List.of(AXIS), a -> new ArgMax(a.var(0), a.integer("axis")),
                    ArgMax.class, i -> args(List.of(i.x()), kws("axis", i.axis()))),
            method("clamp", List.of(T), List.of(kw("lo", KwKind.INT, null), kw("hi", KwKind.INT, null)),
                    a -> new Clamp(a.var(0), a.longInt("lo"), a.longInt("hi")),
                    Clamp.class, i -> args(List.of(i.x()), kws("lo", i.lo(), "hi", i.hi()))),
            method("requant", List.of(T), List.of(kw("shift", KwKind.INT, null)), a -> new Requant(a.var(0), a.integer("shift")),
                    Requant.class, i -> args(List.of(i.x()), kws("shift", i.shift()))),
            method("maximum", List.of(T, T), List.of(), a -> new Maximum(a.var(0), a.var(1)), Maximum.class, i -> args(i.a(), i.b())),
            method("greater", List.of(T, T), List.of(), a -> new Greater(a.var(0), a.var(1)), Greater.class, i -> args(i.a(), i.b())),
            method("select", List.of(T, T, T), List.of(), a -> new Select(a.var(0), a.var(1), a.var(2)),
                    Select.class, i -> args(i.mask(), i.a(), i.b())),
            method("swiglu", List.of(T, T), List.of(), a -> new Swiglu(a.var(0), a.var(1)), Swiglu.class, i -> args(i.gate(), i.up())),
            method("rmsnorm", List.of(T, OPT, OPT), List.of(shown("eps", KwKind.NUMBER, 1e-5)),
                    a -> new RmsNorm(a.var(0), a.opt(1), a.opt(2), a.number("eps")),
                    RmsNorm.class, i -> args(Arrays.asList(i.x(), i.weight().orElse(null), i.residual().orElse(null)), kws("eps", i.eps()))),
            method("layernorm", List.of(T, OPT, OPT), List.of(shown("eps", KwKind.NUMBER, 1e-5)),
                    a -> new LayerNorm(a.var(0), a.opt(1), a.opt(2), a.number("eps")),
                    LayerNorm.class, i -> args(Arrays.asList(i.x(), i.weight().orElse(null), i.bias().orElse(null)), kws("eps", i.eps()))),
            method("l2norm", List.of(T), List.of(shown("eps", KwKind.NUMBER, 1e-6)), a -> new L2Norm(a.var(0), a.number("eps")),
                    L2Norm.class, i -> args(List.of(i.x()), kws("eps", i.eps()))),
            method("rope", List.of(T, T, T), List.of(HEADS, kw("rotary", KwKind.INT, 0), kw("start", KwKind.INT, 0)),
                    a -> new Rope(a.var(0), a.var(1), a.var(2), a.integer("heads"), a.integer("rotary"), a.integer("start")),
                    Rope.class, i -> args(List.of(i.x(), i.cos(), i.sin()), kws("heads", i.heads(), "rotary", i.rotary(), "start", i.start()))),
            method("attention", List.of(T, T, T, OPT), ATTENTION,
                    a -> new Attention(a.var(0), a.var(1), a.var(2), a.opt(3), attnOpts(a)),
                    Attention.class, i -> args(Arrays.asList(i.q(), i.k(), i.v(), i.sinks().orElse(null)), attnKw(i.opts()))),
            // row(i): one row by an I64 [1] index, a documented alias of gather ([V, D] → [1, D]); prints as gather
            method("row", List.of(T, T), List.of(), a -> new Gather(a.var(0), a.var(1)), Gather.class, i -> args(i.values(), i.indices())),
            method("set_rows", List.of(T, T, T), List.of(), a -> new SetRows(a.var(0), a.var(1), a.var(2)),
                    SetRows.class, i -> args(i.table(), i.ids(), i.rows())),
            // ---- IR-internal: made by transform_ad
            internal("scatter_add", List.of(T, T, Arg.TYPE), List.of(), a -> new ScatterAdd(a.var(0), a.var(1), a.type(2)),
                    ScatterAdd.class, i -> args(i.updates(), i.indices(), i.dest())),
            internal("scatter_along_axis", List.of(T, T, Arg.TYPE), List.of(AXIS),
                    a -> new ScatterAlongAxis(a.integer("axis"), a.var(0), a.var(1), a.type(2)),
                    ScatterAlongAxis.class, i -> args(List.of(i.updates(), i.indices(), i.dest()), kws("axis", i.axis()))),
            internal("attention_lse", List.of(T, T, OPT), ATTENTION,
                    a -> new AttentionLse(a.var(0), a.var(1), a.opt(2), attnOpts(a)),
                    AttentionLse.class, i -> args(Arrays.asList(i.q(), i.k(), i.sinks().orElse(null)), attnKw(i.opts()))),
            internal("attention_exp", List.of(T, T, T), ATTENTION,
                    a -> new AttentionExp(a.var(0), a.var(1), a.var(2), attnOpts(a)),
                    AttentionExp.class, i -> args(List.of(i.q(), i.k(), i.lse()), attnKw(i.opts()))),
            grad(AttentionGrad.Wrt.Q), grad(AttentionGrad.Wrt.K), grad(AttentionGrad.Wrt.V),
            product(AttentionProduct.Form.QK), product(AttentionProduct.Form.PK), product(AttentionProduct.Form.PQ),
            // ---- IR-internal: the plan's fusions, made by its rewrite table
            internal("matmul_t", List.of(T, T), List.of(shown("transpose_a", KwKind.BOOL, false), shown("transpose_b", KwKind.BOOL, false)),
                    a -> new MatmulT(a.var(0), a.var(1), a.bool("transpose_a"), a.bool("transpose_b")),
                    MatmulT.class, i -> args(List.of(i.a(), i.b()), kws("transpose_a", i.transA(), "transpose_b", i.transB()))),
            internal("matmul_shared", List.of(T, Arg.TENSORS), List.of(shown("transpose_a", KwKind.BOOL, false), shown("transpose_b", KwKind.BOOL, false)),
                    a -> new MatmulShared(a.var(0), a.vars(1), a.bool("transpose_a"), a.bool("transpose_b")),
                    MatmulShared.class, i -> args(List.of(i.a(), i.bs()), kws("transpose_a", i.transA(), "transpose_b", i.transB()))),
            internal("softmax_grad", List.of(T, T), List.of(shown("row_sums", KwKind.BOOL, false)),
                    a -> new SoftmaxGrad(a.var(0), a.var(1), a.bool("row_sums")),
                    SoftmaxGrad.class, i -> args(List.of(i.p(), i.dp()), kws("row_sums", i.rowSums()))),
            internal("attention_with_lse", List.of(T, T, T, OPT), ATTENTION,
                    a -> new AttentionWithLse(a.var(0), a.var(1), a.var(2), a.opt(3), attnOpts(a)),
                    AttentionWithLse.class, i -> args(Arrays.asList(i.q(), i.k(), i.v(), i.sinks().orElse(null)), attnKw(i.opts()))),
            internal("attention_backward", List.of(T, T, T, T, T, T), concat(ATTENTION, shown("dq", KwKind.BOOL, false),
                            shown("dk", KwKind.BOOL, false), shown("dv", KwKind.BOOL, false)),
                    a -> new AttentionBackward(a.var(0), a.var(1), a.var(2), a.var(3), a.var(4), a.var(5), attnOpts(a),
                            a.bool("dq"), a.bool("dk"), a.bool("dv")),
                    AttentionBackward.class, i -> args(List.of(i.q(), i.k(), i.v(), i.g(), i.lse(), i.d()),
                            attnKw(i.opts(), "dq", i.dq(), "dk", i.dk(), "dv", i.dv()))),
            internal("swiglu_sigmoid", List.of(T, T), List.of(), a -> new SwigluSigmoid(a.var(0), a.var(1)),
                    SwigluSigmoid.class, i -> args(i.gate(), i.up())),
            internal("elementwise", List.of(Arg.TENSORS, Arg.FN), List.of(), a -> new Elementwise(a.vars(0), a.fn(1)),
                    Elementwise.class, i -> args(i.inputs(), i.body())));

    private static Form grad(AttentionGrad.Wrt wrt) {
        return internal(wrt.op(), List.of(T, T, T, T, T, T), ATTENTION,
                a -> new AttentionGrad(a.var(0), a.var(1), a.var(2), a.var(3), a.var(4), a.var(5), attnOpts(a), wrt),
                AttentionGrad.class, i -> args(List.of(i.q(), i.k(), i.v(), i.g(), i.lse(), i.d()), attnKw(i.opts())));
    }

    private static Form product(AttentionProduct.Form form) {
        return internal(form.op(), List.of(T, T), ATTENTION, a -> new AttentionProduct(a.var(0), a.var(1), attnOpts(a), form),
                AttentionProduct.class, i -> args(List.of(i.a(), i.b()), attnKw(i.opts())));
    }

    private static List<Kw> concat(List<Kw> a, Kw... b) {
        List<Kw> l = new ArrayList<>(a);
        l.addAll(List.of(b));
        return List.copyOf(l);
    }

    private static Map<String, Form> table(Form... fs) {
        Map<String, Form> t = new LinkedHashMap<>();
        for (Form f : fs) if (t.put(f.name(), f) != null) throw new IllegalStateException("two forms named " + f.name());
        return Collections.unmodifiableMap(t);
    }
}
