package kina.mlir;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import kina.ad.TransformAd;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Let;
import kina.ir.Placement;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/**
 * The host lowering of a kina program to MLIR's linalg-on-tensors (LLVM/MLIR 19 syntax): the module
 * and its C ABI. The instructions are lowered by {@link Lowering} (one exhaustive switch over
 * {@link Instr}), with {@link Rows}, {@link AttentionLowering} and {@link Fusions}; the text is spelled by
 * {@link Mlir}'s builder.
 *
 * <p>Module layout: one {@code func.func private} per kina fn (a reverseMode fn made by
 * transform_ad included), returning its tuple as multiple results; {@code @main} for the program's
 * top-level block (the step function); and {@code @kina_entry}, the exported destination-passing
 * wrapper a shared object is called through: it takes every input of the program (by name, read
 * only) and one memref per flattened result, calls {@code @main} and materializes each result into
 * its memref ({@code llvm.emit_c_interface}: the symbol {@code _mlir_ciface_kina_entry}). An input
 * let inside a fn body is a trailing argument {@code %in.NAME} of that fn and of every fn that calls
 * it; callers pass theirs through. A block of more than {@link #SPLIT} instructions is emitted as
 * parts, each a private func of its own (see {@link Lowering#block}); each contraction is a private
 * func too, which the {@link Schedule} tiles and vectorizes.
 *
 * <p>Refusals (an {@link MlirError} naming the let): dtypes the host does not keep (BF16, F16, F8:
 * {@code HostDtypes}); @device values ({@code scatter_add: checked device lowering is not
 * available}, likewise for each indexing instruction, {@code <op>: device lowering is not
 * available} for the others); a non-finite literal the dtype cannot hold; a program
 * whose result is a fn that cannot be called.
 */
public final class Emitter {

    /** An argument of the entry: an input let, by name. */
    public record Arg(String name, TensorType type) {}

    /** What {@code @kina_entry} takes (inputs, in order) and fills (outputs: the flattened result). */
    public record Entry(List<Arg> inputs, List<TensorType> outputs) {
        public Entry {
            inputs = List.copyOf(inputs);
            outputs = List.copyOf(outputs);
        }
    }

    /**
     * A contraction func of the module: C[M, N] = A[M, K] B[K, N] (A stored [K, M] when
     * {@code transA}), in {@code batch} independent products (0: not a batch), of dtype d; the
     * schedule tiles it by its {@link #key}.
     */
    record Contraction(String symbol, boolean transA, long batch, long m, long n, long k, DType dtype) {

        /** The linalg op. */
        String op() { return "linalg." + (batch > 0 ? "batch_" : "") + "matmul" + (transA ? "_transpose_a" : ""); }

        /** Its schedule class: the op, shape and dtype, e.g. {@code linalg.matmul 512x64x64 f32}. */
        String key() { return op() + " " + (batch > 0 ? batch + "x" : "") + m + "x" + n + "x" + k + " " + Mlir.el(dtype); }
    }

    /**
     * An emitted module: its text and its entry's signature; for the schedule, its contraction
     * funcs and whether it holds a scatter ({@code kina.scatter}).
     */
    public record Module(String text, Entry entry, List<Contraction> contractions, boolean scatters) {
        public Module {
            contractions = List.copyOf(contractions);
        }
    }

    /** The exported entry's name; the shared object's symbol is {@code _mlir_ciface_kina_entry}. */
    public static final String ENTRY = "kina_entry";

    /**
     * Lowers a checked program (transform_ad first when it has reverseMode handles) to the reference
     * lowering: scatter_add as one (v, d, n) generic whose n is a reduction iterator.
     *
     * @throws MlirError naming the let the lowering refuses
     */
    public static Module emit(Program checked) {
        Program p = hasHandle(checked.body()) ? TransformAd.transform(checked) : checked;
        HostDtypes.require(p.body());
        return new Emitter(p, false).module();
    }

    /**
     * {@link #emit}, in the form the native engine builds: scatter_add as a loop over its updates,
     * each added to its destination row (the same sums in the same order, O(N·D) instead of the
     * generic's O(V·N·D)); everything else as {@link #emit}.
     *
     * @throws MlirError naming the let the lowering refuses
     */
    public static Module emitNative(Program checked) {
        Program p = hasHandle(checked.body()) ? TransformAd.transform(checked) : checked;
        HostDtypes.require(p.body());
        return new Emitter(p, true).module();
    }

    private static boolean hasHandle(Block b) {
        for (Let l : b.lets()) {
            if (l.rhs() instanceof Rhs.Handle) return true;
            if (l.rhs() instanceof Rhs.Fn fn && hasHandle(fn.body())) return true;
        }
        return false;
    }

    // ---- the program: fns, their inputs, the entry --------------------------------------------

    /** A kina fn and its func: symbol, the inputs its body and callees read (name → type), in order. */
    static final class FnInfo {
        final String symbol;
        final Rhs.Fn fn;
        final String name;
        final LinkedHashMap<String, TensorType> inputs = new LinkedHashMap<>();
        final Map<Var, FnInfo> scope;           // the fns visible inside the body (for its calls)
        Lowering.Returns returns;                // set when its func is emitted, before any call of it

        FnInfo(String symbol, String name, Rhs.Fn fn, Map<Var, FnInfo> scope) {
            this.symbol = symbol;
            this.name = name;
            this.fn = fn;
            this.scope = scope;
        }
    }

    private final Program program;
    private final List<FnInfo> fns = new ArrayList<>();
    private final Set<String> symbols = new HashSet<>(Set.of("main", ENTRY));
    final Map<Rhs.Fn, FnInfo> infoOf = new IdentityHashMap<>();
    /** The parts of long blocks and the contractions of the func being lowered, emitted before it. */
    final StringBuilder extra = new StringBuilder();
    final List<Contraction> contractions = new ArrayList<>();
    /** The destinations (@main's {@code %dest.i}) an op wrote its step result into: those outputs need no copy. */
    final Set<String> written = new HashSet<>();
    boolean scatters;

    /**
     * A block of more than {@link #SPLIT} instructions is emitted as parts of at most {@link #PART}
     * instructions each (16: the tiny train step then builds in about 30 s of CPU, where whole it took
     * minutes in LLVM's loop passes). The system property {@code kina.native.partSize} sets PART:
     * with 1, each instruction is a func of its own, which a profiler names (slower: no part
     * reuses another's buffers).
     */
    static final int SPLIT = 200, PART = Math.max(1, Integer.getInteger("kina.native.partSize", 16));

    /** Whether scatter_add is a loop over its update rows (the native form) rather than the (v, d, n) generic. */
    final boolean rowScatter;

    private Emitter(Program p, boolean rowScatter) {
        this.program = p;
        this.rowScatter = rowScatter;
    }

    private Module module() {
        refuseDevice(program.body(), "the program");
        Block top = program.body();
        LinkedHashMap<String, TensorType> mainInputs = new LinkedHashMap<>();
        Map<Var, FnInfo> topScope = analyze(top, new HashMap<>(), mainInputs, "the program");
        StringBuilder sb = new StringBuilder();
        sb.append("// kina ").append(program.file()).append(": host lowering to linalg on tensors (MLIR 19)\n");
        // Callees before callers (each func's parts and contractions before it): drop-equivalent-buffer-results
        // sweeps the funcs in order, so a caller sees its callees' equivalent results already dropped.
        for (FnInfo f : fns) {
            String fn = new Lowering(this, f.symbol).fn(f);
            sb.append(extra).append(fn);
            extra.setLength(0);
        }
        Lowering main = new Lowering(this, "main");
        StringBuilder mainText = new StringBuilder();
        Lowering.Returns returns = main.main(top, topScope, mainInputs, mainText);
        sb.append(extra).append(mainText);
        List<Arg> args = new ArrayList<>();
        mainInputs.forEach((n, t) -> args.add(new Arg(n, t)));
        sb.append(entry(args, returns, written));
        List<TensorType> outputs = new ArrayList<>();
        for (int k : returns.from()) outputs.add(k >= 0 ? returns.returned().get(k).type() : args.get(-1 - k).type());
        return new Module(sb.toString(), new Entry(args, outputs), contractions, scatters);
    }

    /**
     * Registers the fns of {@code b} (with their symbols and inputs) and collects into {@code inputs}
     * the inputs b's lets and callees read; returns the fns bound in b, visible after it.
     */
    private Map<Var, FnInfo> analyze(Block b, Map<Var, FnInfo> outer, LinkedHashMap<String, TensorType> inputs, String where) {
        Map<Var, FnInfo> scope = new HashMap<>(outer);
        for (Let l : b.lets()) {
            switch (l.rhs()) {
                case Rhs.Fn fn -> {
                    String name = l.displayName();
                    FnInfo f = new FnInfo(symbol(name), name, fn, null);
                    Map<Var, FnInfo> inner = analyze(fn.body(), scope, f.inputs, "fn " + name);
                    FnInfo done = new FnInfo(f.symbol, name, fn, inner);
                    done.inputs.putAll(f.inputs);
                    fns.add(done);
                    infoOf.put(fn, done);
                    scope.put(l.var(), done);
                }
                case Instr.Input(var t) -> addInput(inputs, l.var().name(), t, where);
                case Rhs.Call c -> {
                    FnInfo callee = scope.get(c.fn());
                    if (callee == null) throw new MlirError(l.pos(), "let " + l.displayName() + ": call of " + c.fn() + ", which is not a fn in scope");
                    callee.inputs.forEach((n, t) -> addInput(inputs, n, t, where));
                }
                case Rhs.Handle h -> throw new MlirError(l.pos(), "let " + l.displayName() + ": handle " + h.fn()
                        + " with reverseMode is lowered after transform_ad (kina.ad.TransformAd.transform)");
                case Instr _, Rhs.Tuple _ -> { }
            }
        }
        return scope;
    }

    /** Inputs are global by name (as the interpreter supplies them): one name, one type. */
    private static void addInput(Map<String, TensorType> inputs, String name, TensorType t, String where) {
        TensorType had = inputs.putIfAbsent(name, t);
        if (had != null && !had.equals(t))
            throw new MlirError("input " + name + " is declared as " + had + " and as " + t + " (in " + where
                    + "); inputs are supplied by name, so one name needs one type");
    }

    private String symbol(String name) {
        String base = name.matches("[A-Za-z_][A-Za-z0-9_$]*") ? name : "fn";
        String s = base;
        for (int i = 1; !symbols.add(s); i++) s = base + "_" + i;
        return s;
    }

    /**
     * The exported destination-passing wrapper: inputs read only, one memref per result of
     * {@code @main}, which main takes as its destinations ({@code %dest.i}); a result main wrote
     * there is in place, any other is copied in (a result main passes through from an input is
     * that input, copied).
     */
    private static String entry(List<Arg> args, Lowering.Returns returns, Set<String> written) {
        StringBuilder sb = new StringBuilder();
        sb.append("func.func @").append(ENTRY).append('(');
        List<String> params = new ArrayList<>(), names = new ArrayList<>(), types = new ArrayList<>();
        for (Arg a : args) {
            params.add("%in." + a.name() + ": " + Mlir.ty(a.type()) + " {bufferization.writable = false}");
            names.add("%in." + a.name());
            types.add(Mlir.ty(a.type()));
        }
        int[] from = returns.from();
        List<TensorType> outputs = new ArrayList<>(), returned = returns.returned().stream().map(Mlir.Val::type).toList();
        for (int k : from) outputs.add(k >= 0 ? returned.get(k) : args.get(-1 - k).type());
        for (int i = 0; i < outputs.size(); i++) params.add("%out." + i + ": " + Mlir.memref(outputs.get(i)));
        sb.append(String.join(", ", params)).append(") attributes {llvm.emit_c_interface} {\n");
        for (int i = 0; i < outputs.size(); i++) {      // (an output written in place is the tensor of its buffer; one not, is copied in below)
            if (written.contains("%dest." + i))
                sb.append("  %dest.").append(i).append(" = bufferization.to_tensor %out.").append(i).append(" restrict writable : ")
                        .append(Mlir.memref(outputs.get(i))).append('\n');
            else sb.append("  %dest.").append(i).append(" = tensor.empty() : ").append(Mlir.ty(outputs.get(i))).append('\n');
            names.add("%dest." + i);
            types.add(Mlir.ty(outputs.get(i)));
        }
        String r = returned.size() == 1 ? "%r" : "%r:" + returned.size();
        sb.append("  ").append(returned.isEmpty() ? "" : r + " = ").append("func.call @main(").append(String.join(", ", names)).append(") : (")
                .append(String.join(", ", types)).append(") -> ").append(Mlir.results(returned)).append('\n');
        for (int i = 0; i < outputs.size(); i++)
            if (!written.contains("%dest." + i)) sb.append("  bufferization.materialize_in_destination ")
                    .append(from[i] < 0 ? names.get(-1 - from[i]) : returned.size() == 1 ? "%r" : "%r#" + from[i])
                    .append(" in restrict writable %out.").append(i).append(" : (").append(Mlir.ty(outputs.get(i))).append(", ")
                    .append(Mlir.memref(outputs.get(i))).append(") -> ()\n");
        sb.append("  return\n}\n");
        return sb.toString();
    }

    // ---- @device: refused by name before anything is emitted ----------------------------------

    /**
     * Refuses the first @device value in program order: an instruction reading or making one with
     * its op's message; a fn parameter or other let with a general one.
     */
    private static void refuseDevice(Block b, String where) {
        for (Let l : b.lets()) {
            if (l.rhs() instanceof Rhs.Fn fn) {
                for (Rhs.Param p : fn.params())
                    if (p.type().placement() == Placement.DEVICE) deviceLater(fn, l, p);
                refuseDevice(fn.body(), "fn " + l.displayName());
                continue;
            }
            if (l.rhs() instanceof Instr ins && !(ins instanceof Instr.Input) && (device(l.type()) || anyDeviceOperand(ins, b)))
                throw new MlirError(l.pos(), "let " + l.displayName() + ": " + deviceMessage(ins));
        }
        for (Let l : b.lets())
            if (!(l.rhs() instanceof Rhs.Fn) && device(l.type()))
                throw new MlirError(l.pos(), "let " + l.displayName() + " (in " + where + ") is @device; "
                        + "device lowering is not available (the host lowering takes @host values only)");
    }

    /** A device parameter: refused when no instruction of the body refuses first. */
    private static void deviceLater(Rhs.Fn fn, Let at, Rhs.Param p) {
        for (Let l : fn.body().lets())
            if (l.rhs() instanceof Instr ins && (device(l.type()) || ins.operands().contains(p.name())))
                throw new MlirError(l.pos(), "let " + l.displayName() + ": " + deviceMessage(ins));
        throw new MlirError(p.pos(), "fn " + at.displayName() + ": parameter " + p.name() + " is @device; "
                + "device lowering is not available (the host lowering takes @host values only)");
    }

    private static boolean anyDeviceOperand(Instr ins, Block b) {
        for (Var v : ins.operands()) {
            Let d = b.binding(v);
            if (d != null && device(d.type())) return true;
        }
        return false;
    }

    private static boolean device(Type t) {
        return switch (t) {
            case null -> false;
            case TensorType tt -> tt.placement() == Placement.DEVICE;
            case Type.Tuple tu -> tu.elems().stream().anyMatch(Emitter::device);
            case Type.Fn _ -> false;
        };
    }

    /** The refusal of a @device instruction: for the indexing ones, transform_ad's and the type rules' text. */
    static String deviceMessage(Instr ins) {
        return ins instanceof Instr.Indexing ? ins.op() + ": checked device lowering is not available"
                : ins.op() + ": device lowering is not available (the host lowering takes @host values only)";
    }
}
