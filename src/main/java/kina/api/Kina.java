package kina.api;

import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kina.ad.TransformAd;
import kina.check.Checker;
import kina.eval.Interpreter;
import kina.eval.Oracle;
import kina.eval.Tensor;
import kina.eval.Value;
import kina.io.FileCap;
import kina.ir.Block;
import kina.ir.Instr;
import kina.ir.KinaException;
import kina.ir.Let;
import kina.ir.Pos;
import kina.ir.Printer;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Var;
import kina.plan.Plan;
import kina.syntax.Parser;

/**
 * A kina program, for Java: parsed from source, checked, differentiated, run on the host
 * interpreter or compiled to a plan. Immutable: every step answers a new Kina.
 *
 * <pre>{@code
 * Kina grad = Kina.parse("nll.kina", source).check().grad("nll");     // (loss, d Σloss / d logits)
 * List<Tensor> out = grad.run(Map.of("logits", logits, "targets", targets));
 * System.out.println(grad.transform());                                // the gradient program, as kina source
 * }</pre>
 *
 * <p>Inputs are supplied by name: the {@code let x = tensor<…> in} lets anywhere in the program, and
 * for {@link #grad} and {@link #jvp} the fn's parameters. Tensors are {@link Tensor}s
 * ({@code Tensor.of(DType.F32, new long[] {2, 3}, values…)}); results come back in order, a tuple
 * flattened.
 *
 * <p>Errors are the one-line {@link KinaException}s the {@code kina} command prints ({@link
 * KinaException#oneLine()}: {@code file:line:col: error: let x: op: what}): a SyntaxError,
 * TypeError, AdError (a refused gradient), EvalError (a run-time trap, a missing input) or
 * PlanError.
 */
public final class Kina {
    private final Program program;
    private final boolean checked;
    private volatile Program transformed;

    private Kina(Program program, boolean checked) {
        this.program = program;
        this.checked = checked;
    }

    // ---- making one ------------------------------------------------------------------------------

    /** Parses kina source (positions name the file {@code <source>}). @throws KinaException a SyntaxError */
    public static Kina parse(String source) { return parse("<source>", source); }

    /** Parses kina source; {@code file} names it in error positions. @throws KinaException a SyntaxError */
    public static Kina parse(String file, String source) { return new Kina(Parser.parse(file, source), false); }

    /** Reads and parses a UTF-8 .kina file. @throws KinaException as {@link #readSource}, or a SyntaxError */
    public static Kina load(Path file) { return load(file, FileCap.DEFAULT); }

    /** Reads and parses a UTF-8 .kina file of at most {@code cap}. @throws KinaException as {@link #readSource}, or a SyntaxError */
    public static Kina load(Path file, FileCap cap) { return parse(file.toString(), readSource(file, cap)); }

    /** {@link #readSource(Path, FileCap)} under {@link FileCap#DEFAULT}. */
    public static String readSource(Path file) { return readSource(file, FileCap.DEFAULT); }

    /**
     * The text of a .kina file. @throws KinaException, one line naming the file, for a directory, a
     * missing or unreadable file, one over {@code cap}, or bytes that are not UTF-8 ({@link #decode})
     */
    public static String readSource(Path file, FileCap cap) {
        try {
            if (Files.isDirectory(file)) throw new KinaException(null, file + ": is a directory, not a .kina file");
            String big = cap.tooLarge(Files.size(file));
            if (big != null) throw new KinaException(null, file + ": " + big);
            return decode(file.toString(), Files.readAllBytes(file));
        } catch (NoSuchFileException e) {
            throw new KinaException(null, file + ": no such file");
        } catch (IOException e) {
            throw new KinaException(null, file + ": cannot read (" + e.getMessage() + ")");
        }
    }

    /**
     * {@code bytes} as strict UTF-8 text. @throws KinaException naming UTF-16 or UTF-32 text as such
     * ({@link kina.ir.WideText}), else the first byte that is not UTF-8: {@code file: not UTF-8 text
     * (byte 0xFF at line 3, column 7; save the file as UTF-8)}
     */
    public static String decode(String file, byte[] bytes) {
        kina.ir.WideText.Encoding wide = kina.ir.WideText.of(bytes);
        if (wide != null) throw new KinaException(null, file + ": " + wide.advice(file));
        var decoder = StandardCharsets.UTF_8.newDecoder();
        java.nio.ByteBuffer in = java.nio.ByteBuffer.wrap(bytes);
        try {
            return decoder.decode(in).toString();
        } catch (CharacterCodingException e) {
            int at = in.position();
            int line = 1, col = 1;
            for (int i = 0; i < at; i++) {
                if (bytes[i] == '\n') { line++; col = 1; }
                else if ((bytes[i] & 0xC0) != 0x80) col++;
            }
            String what = at < bytes.length ? String.format("byte 0x%02X", bytes[at] & 0xff) : "a character cut short";
            throw new KinaException(null, file + ": not UTF-8 text (" + what + " at line " + line + ", column " + col
                    + "; save the file as UTF-8)");
        }
    }

    /** A program given as IR (checked or not). */
    public static Kina of(Program program) { return new Kina(program, false); }

    // ---- stages ----------------------------------------------------------------------------------

    /** The program type-checked: every let typed, negative axes normalised. @throws KinaException a TypeError */
    public Kina check() { return checked ? this : new Kina(Checker.check(program), true); }

    /**
     * Reverse mode of the top-level fn {@code fn}: a program with an input for each of its
     * parameters, by the parameter's name, whose result is {@code handle fn(params) with reverseMode}:
     * (R, g0, …, gk−1), the result and the cotangent of each floating parameter (seed: ones of R).
     * The fn may call other fns and hold handles itself (gradients of gradients).
     *
     * @throws KinaException when there is no such fn, a parameter's name is taken, or a TypeError
     */
    public Kina grad(String fn) { return handle(fn, "grad", new Rhs.Mode.ReverseMode()); }

    /**
     * Forward mode of the top-level fn {@code fn}: inputs for its parameters and a tangent
     * {@code dot_p} for each floating parameter p, result {@code handle fn(params) with
     * forwardMode(dot_p…)}: (R, J·t).
     *
     * @throws KinaException when there is no such fn, a name is taken, or a TypeError
     */
    public Kina jvp(String fn) { return handle(fn, "jvp", null); }

    /**
     * The program with every handle replaced by a call of its derived fn (transform_ad): what
     * {@code kina grad} prints; ordinary kina that can be printed, run, compiled and differentiated again.
     *
     * @throws KinaException a TypeError, or an AdError naming the let whose gradient is refused
     */
    public Kina transform() { return new Kina(transformed(), true); }

    // ---- running ---------------------------------------------------------------------------------

    /**
     * Runs the program on the host interpreter, handles by their recorded derivatives (the
     * transformed program), and answers the result, a tuple flattened into its tensors.
     *
     * @param inputs a tensor for every input by name (see {@link #inputs()}); no others
     * @throws KinaException for a missing, unknown or mistyped input, a refused gradient, or a run-time trap
     */
    public List<Tensor> run(Map<String, Tensor> inputs) {
        Program t = transformed();
        requireInputs(t, inputs);
        return flatten(new Interpreter(inputs).run(t));
    }

    /** As {@link #run}, with handles answered by the oracle (the eager reverse scan) instead. */
    public List<Tensor> runOracle(Map<String, Tensor> inputs) {
        Program c = check().program;
        requireInputs(c, inputs);
        return flatten(new Interpreter(inputs, new Oracle()).run(c));
    }

    /**
     * The transformed program compiled to a plan (scheduled, fused, one reused arena); its results
     * equal {@link #run}'s bit for bit.
     *
     * @throws KinaException what {@link #transform} throws, or a PlanError for what cannot be planned
     */
    public Compiled compile() { return new Compiled(Plan.compile(transformed())); }

    /** A compiled program: run it as often as needed (one run at a time). */
    public static final class Compiled {
        private final Plan plan;

        private Compiled(Plan plan) { this.plan = plan; }

        /** The inputs, by name, in program order. */
        public Map<String, TensorType> inputs() { return plan.inputs(); }

        /** Runs the plan on one tensor per input; the result tensors in order. @throws KinaException as {@link Kina#run} */
        public List<Tensor> run(Map<String, Tensor> inputs) {
            List<String> missing = new ArrayList<>();
            plan.inputs().forEach((n, t) -> { if (!inputs.containsKey(n)) missing.add(n + " : " + t); });
            if (!missing.isEmpty()) throw new KinaException(null, "inputs not given: " + String.join(", ", missing));
            return plan.run(inputs);
        }

        /** The underlying plan (profiling, carried state). */
        public Plan plan() { return plan; }
    }

    // ---- looking at it ---------------------------------------------------------------------------

    /** The inputs the program reads, by name, in program order (fn bodies included). */
    public Map<String, TensorType> inputs() {
        Map<String, TensorType> out = new LinkedHashMap<>();
        inputs(check().program.body(), out);
        return out;
    }

    /** The program as IR (kina.ir). */
    public Program program() { return program; }

    /** The program as kina source, as {@code kina grad} prints it. */
    @Override public String toString() { return Printer.print(program); }

    // ---- helpers ---------------------------------------------------------------------------------

    private Program transformed() {
        Program t = transformed;
        if (t == null) transformed = t = TransformAd.transform(check().program);
        return t;
    }

    /** {@code handle fn(params) with …} over inputs named as fn's parameters (and its tangents for forward mode). */
    private Kina handle(String fn, String what, Rhs.Mode reverse) {
        Program c = check().program;
        List<Let> top = new ArrayList<>();
        Rhs.Fn target = null;
        List<String> fns = new ArrayList<>();
        for (Let l : c.body().lets()) {
            if (!(l.rhs() instanceof Rhs.Fn f)) continue;
            top.add(l);
            fns.add(l.displayName());
            if (l.var().name().equals(fn)) { target = f; break; }
        }
        if (target == null)
            throw new KinaException(null, what + ": " + c.file() + " has no fn " + fn + " at the top level"
                    + (fns.isEmpty() ? "" : " (its fns: " + String.join(", ", fns) + ")"));
        List<String> taken = new ArrayList<>(fns);
        List<Var> args = new ArrayList<>(), tangents = new ArrayList<>();
        for (Rhs.Param p : target.params()) top.add(input(p.name().name(), p.type(), taken, what, fn));
        for (Rhs.Param p : target.params()) args.add(p.name());
        if (reverse == null)
            for (Rhs.Param p : target.params()) {
                if (!p.type().dtype().floating()) continue;
                top.add(input("dot_" + p.name().name(), p.type(), taken, what, fn));
                tangents.add(new Var("dot_" + p.name().name()));
            }
        Var out = new Var(fresh(fn + "_out", taken));
        top.add(Let.of(out, new Rhs.Handle(new Var(fn), args, reverse != null ? reverse : new Rhs.Mode.ForwardMode(tangents)), Pos.NONE));
        return new Kina(new Program(c.file(), new Block(top, out, Pos.NONE)), false).check();
    }

    private static Let input(String name, TensorType t, List<String> taken, String what, String fn) {
        if (taken.contains(name))
            throw new KinaException(null, what + ": the input " + name + " for " + fn + " would clash with the fn " + name + "; rename one");
        taken.add(name);
        return Let.of(new Var(name), new Instr.Input(t), Pos.NONE);
    }

    private static String fresh(String stem, List<String> taken) {
        String n = stem;
        for (int i = 1; taken.contains(n); i++) n = stem + "_" + i;
        return n;
    }

    private static void inputs(Block b, Map<String, TensorType> out) {
        for (Let l : b.lets()) {
            if (l.rhs() instanceof Instr.Input(TensorType t)) out.putIfAbsent(l.var().name(), t);
            if (l.rhs() instanceof Rhs.Fn f) inputs(f.body(), out);
        }
    }

    /** Every input given, and only inputs, each of its declared type: the CLI's checks, before running. */
    private static void requireInputs(Program p, Map<String, Tensor> given) {
        Map<String, TensorType> want = new LinkedHashMap<>();
        inputs(p.body(), want);
        List<String> missing = new ArrayList<>();
        want.forEach((n, t) -> { if (!given.containsKey(n)) missing.add(n + " : " + t); });
        if (!missing.isEmpty())
            throw new KinaException(null, "inputs not given: " + String.join(", ", missing) + " (pass a tensor for each, by name)");
        for (var e : given.entrySet()) {
            TensorType t = want.get(e.getKey());
            if (t == null)
                throw new KinaException(null, "the program has no input named " + e.getKey() + " (it has: " + String.join(", ", want.keySet()) + ")");
            if (!e.getValue().type().equals(t))
                throw new KinaException(null, "input " + e.getKey() + ": expected " + t + ", got " + e.getValue().type());
        }
    }

    private static List<Tensor> flatten(Value v) {
        List<Tensor> out = new ArrayList<>();
        switch (v) {
            case Tensor t -> out.add(t);
            case Value.Tuple tup -> { for (Value e : tup.elems()) out.addAll(flatten(e)); }
            case Value.Closure c -> throw new KinaException(null, "the program's result is the fn " + c.name()
                    + "; end it with a call or a handle, or use grad(\"" + c.name() + "\")");
        }
        return out;
    }
}
