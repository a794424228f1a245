package kina.mlir;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import kina.ad.TransformAd;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Instr.*;
import kina.ir.Let;
import kina.ir.Payload;
import kina.ir.Placement;
import kina.ir.Pos;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/**
 * The host lowering of a kina program to MLIR's linalg-on-tensors (LLVM/MLIR 19 syntax): one more
 * reading of the instruction set, one exhaustive switch over {@link Instr} ({@code lower}).
 *
 * <p>Module layout: one {@code func.func private} per kina fn (a reverseMode fn made by
 * transform_ad included), returning its tuple as multiple results; {@code @main} for the program's
 * top-level block (the step function); and {@code @kina_entry}, the exported destination-passing
 * wrapper a shared object is called through: it takes every input of the program (by name, read
 * only) and one memref per flattened result, calls {@code @main} and materializes each result into
 * its memref ({@code llvm.emit_c_interface}: the symbol {@code _mlir_ciface_kina_entry}). An input
 * let inside a fn body is a trailing argument {@code %in.NAME} of that fn and of every fn that calls
 * it; callers pass theirs through.
 *
 * <p>Lowering: elementwise instructions and
 * reductions are {@code linalg.generic}s; matmul is {@code linalg.matmul}, {@code linalg.batch_matmul},
 * or for rank ≥ 4 a batch matmul between {@code tensor.collapse_shape} and {@code tensor.expand_shape};
 * transpose is {@code linalg.transpose}; reshape is a collapse, an expand, or a collapse to rank 1 then
 * an expand. Every instruction that reads by index (gather, take_along_axis, set_rows and the two
 * scatters) first AND-reduces {@code 0 ≤ i < bound} over its indices and {@code cf.assert}s it with
 * the message {@code <op> index out of bounds}. ScatterAdd collapses σ to N and accumulates over a
 * (v, d, n) generic whose n is a reduction iterator; ScatterAlongAxis selects over the destination.
 * Results agree with the interpreter within rounding, not bit for bit: sums start from +0.0 and
 * exp/log/tanh are libm's.
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

    /** An emitted module: its text and its entry's signature. */
    public record Module(String text, Entry entry) {}

    /** The exported entry's name; the shared object's symbol is {@code _mlir_ciface_kina_entry}. */
    public static final String ENTRY = "kina_entry";

    /**
     * Lowers a checked program: transform_ad first when it has reverseMode handles.
     *
     * @throws MlirError naming the let the lowering refuses
     */
    public static Module emit(Program checked) {
        Program p = hasHandle(checked.body()) ? TransformAd.transform(checked) : checked;
        HostDtypes.require(p.body());
        return new Emitter(p).module();
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
    private static final class FnInfo {
        final String symbol;
        final Rhs.Fn fn;
        final String name;
        final LinkedHashMap<String, TensorType> inputs = new LinkedHashMap<>();
        final Map<Var, FnInfo> scope;           // the fns visible inside the body (for its calls)

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
    private final Map<Rhs.Fn, FnInfo> infoOf = new java.util.IdentityHashMap<>();
    /** The parts of long blocks (see FnEmitter.block) and the contractions, emitted after the fns. */
    private final StringBuilder extra = new StringBuilder();
    private int contractions;

    /**
     * A block of more than {@link #SPLIT} instructions is emitted as parts of at most {@link #PART}
     * instructions each (16: the tiny train step then builds in about 30 s of CPU, where whole it took
     * minutes in LLVM's loop passes).
     */
    static final int SPLIT = 200, PART = 16;

    private Emitter(Program p) { this.program = p; }

    private Module module() {
        refuseDevice(program.body(), "the program");
        Block top = program.body();
        LinkedHashMap<String, TensorType> mainInputs = new LinkedHashMap<>();
        Map<Var, FnInfo> topScope = analyze(top, new HashMap<>(), mainInputs, "the program");
        StringBuilder sb = new StringBuilder();
        sb.append("// kina ").append(program.file()).append(": host lowering to linalg on tensors (MLIR 19)\n");
        for (FnInfo f : fns) sb.append(new FnEmitter(f.symbol).fn(f));
        FnEmitter main = new FnEmitter("main");
        List<TensorType> outputs = main.main(top, topScope, mainInputs, sb);
        List<Arg> args = new ArrayList<>();
        mainInputs.forEach((n, t) -> args.add(new Arg(n, t)));
        sb.append(extra);
        sb.append(entry(args, outputs));
        return new Module(sb.toString(), new Entry(args, outputs));
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

    /** The exported destination-passing wrapper: inputs read only, one memref per result. */
    private static String entry(List<Arg> args, List<TensorType> outputs) {
        StringBuilder sb = new StringBuilder();
        sb.append("func.func @").append(ENTRY).append('(');
        List<String> params = new ArrayList<>(), names = new ArrayList<>(), types = new ArrayList<>();
        for (Arg a : args) {
            params.add("%in." + a.name() + ": " + ty(a.type()) + " {bufferization.writable = false}");
            names.add("%in." + a.name());
            types.add(ty(a.type()));
        }
        for (int i = 0; i < outputs.size(); i++) params.add("%out." + i + ": " + memref(outputs.get(i)));
        sb.append(String.join(", ", params)).append(") attributes {llvm.emit_c_interface} {\n");
        List<String> outTypes = outputs.stream().map(Emitter::ty).toList();
        String r = outputs.size() == 1 ? "%r" : "%r:" + outputs.size();
        sb.append("  ").append(r).append(" = func.call @main(").append(String.join(", ", names)).append(") : (")
                .append(String.join(", ", types)).append(") -> ").append(results(outTypes)).append('\n');
        for (int i = 0; i < outputs.size(); i++)
            sb.append("  bufferization.materialize_in_destination ").append(outputs.size() == 1 ? "%r" : "%r#" + i)
                    .append(" in restrict writable %out.").append(i).append(" : (").append(ty(outputs.get(i))).append(", ")
                    .append(memref(outputs.get(i))).append(") -> ()\n");
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

    /**
     * Tile sizes of a contraction (M, N, K; with a leading 1 for the batch): each a power of two
     * dividing its dim, so every tile has a static shape and vectorizes (a partial tile stays scalar
     * and was 10× slower): N up to two vectors of AVX2 (16 floats, 8 doubles), M up to 8 rows when N
     * is narrow, else 4 (the accumulators fit the 16 registers), K up to 16. The best measured on
     * 512×64 @ 64×160 (about 60 GFLOP/s on one core; best of 40 calls) among the sizes tried.
     */
    static String tiles(int rank, long m, long n, long k, DType d) {
        long lanes = d == DType.F64 ? 8 : 16;
        long tn = divisor(n, lanes), tm = divisor(m, tn >= lanes ? 4 : 8), tk = divisor(k, 16);
        return (rank == 3 ? "1x" : "") + tm + "x" + tn + "x" + tk;
    }

    /** The largest power of two ≤ cap that divides n (cap for n = 0). */
    private static long divisor(long n, long cap) {
        long t = cap;
        while (t > 1 && n % t != 0) t /= 2;
        return t;
    }

    // ---- types and literals -------------------------------------------------------------------

    /** {@code tensor<2x3xf32>}, {@code tensor<f32>} for rank 0. */
    static String ty(TensorType t) { return "tensor<" + dims(t.shape()) + el(t.dtype()) + ">"; }

    static String memref(TensorType t) { return "memref<" + dims(t.shape()) + el(t.dtype()) + ">"; }

    private static String dims(Shape s) {
        StringBuilder b = new StringBuilder();
        for (long d : s.dims()) b.append(d).append('x');
        return b.toString();
    }

    /** The MLIR element type; F8E4M3 is the finite-only OCP format (f8E4M3FN). */
    static String el(DType d) {
        return switch (d) {
            case F32 -> "f32";
            case F64 -> "f64";
            case BF16 -> "bf16";
            case F16 -> "f16";
            case F8E4M3 -> "f8E4M3FN";
            case F8E5M2 -> "f8E5M2";
            case I64 -> "i64";
            case I1 -> "i1";
        };
    }

    private static String results(List<String> types) {
        return types.size() == 1 ? types.getFirst() : "(" + String.join(", ", types) + ")";
    }

    /**
     * A literal of dtype d: floats in decimal that parse back to the same value (F32: the float's
     * shortest digits), non-finite values as bit patterns; integers as integers; I1 as true/false.
     */
    static String lit(DType d, double v) {
        return switch (d) {
            case I64 -> Long.toString((long) v);
            case I1 -> v != 0 ? "true" : "false";
            case F32 -> Float.isFinite((float) v) ? Float.toString((float) v) : String.format("0x%08X", Float.floatToRawIntBits((float) v));
            case F64 -> Double.isFinite(v) ? Double.toString(v) : String.format("0x%016X", Double.doubleToRawLongBits(v));
            case BF16, F16, F8E5M2, F8E4M3 -> Double.isFinite(v) ? Double.toString(v) : special(d, v);
        };
    }

    /** {@code arith.constant v : T} (an I1 constant is {@code true} or {@code false}, its type implied). */
    static String constant(DType d, double v) {
        return "arith.constant " + lit(d, v) + (d == DType.I1 ? "" : " : " + el(d));
    }

    private static String special(DType d, double v) {
        boolean nan = Double.isNaN(v), neg = v < 0;
        return switch (d) {
            case BF16 -> nan ? "0x7FC0" : neg ? "0xFF80" : "0x7F80";
            case F16 -> nan ? "0x7E00" : neg ? "0xFC00" : "0x7C00";
            case F8E5M2 -> nan ? "0x7E" : neg ? "0xFC" : "0x7C";
            case F8E4M3 -> {
                if (nan) yield "0x7F";
                throw new MlirError("F8E4M3 has no infinity: " + v + " cannot be a literal");
            }
            case F32, F64, I64, I1 -> throw new IllegalStateException(d + " is not special");
        };
    }

    // ---- one function -------------------------------------------------------------------------

    /** An SSA value of the function being emitted, with its kina type. */
    private record V(String ssa, TensorType type) {}

    /** An operand of a linalg.generic: its value and its indexing map's results (e.g. {@code d0, d2}). */
    private record Operand(V v, String map) {}

    /** Writes a generic's body: block arguments in, yielded values out. */
    @FunctionalInterface private interface BodyFn { List<String> yield(Body b, List<String> args); }

    private static final String IND = "  ";

    /** Emits one func.func; SSA names: a let's own name, {@code %stem.N} for everything generated. */
    private final class FnEmitter {
        private final String symbol;
        private final StringBuilder text = new StringBuilder();
        private final Map<Var, List<V>> env = new HashMap<>();
        private final Map<String, V> inputs = new HashMap<>();
        private int counter;

        FnEmitter(String symbol) { this.symbol = symbol; }

        String fresh(String stem) { return "%" + stem + "." + (counter++); }

        void line(String s) { text.append(IND).append(s).append('\n'); }

        /** A kina fn as a private func: its parameters, then its inputs. */
        String fn(FnInfo f) {
            List<String> params = new ArrayList<>();
            for (Rhs.Param p : f.fn.params()) {
                String n = name(p.name());
                env.put(p.name(), List.of(new V(n, p.type())));
                params.add(n + ": " + ty(p.type()));
            }
            f.inputs.forEach((n, t) -> {
                V v = new V("%in." + n, t);
                inputs.put(n, v);
                params.add(v.ssa() + ": " + ty(t));
            });
            List<V> res = block(f.fn.body(), f.scope, "fn " + f.name);
            StringBuilder sb = new StringBuilder();
            sb.append("func.func private @").append(f.symbol).append('(').append(String.join(", ", params)).append(") -> ")
                    .append(results(res.stream().map(v -> ty(v.type())).toList())).append(" {\n");
            sb.append(text);
            sb.append("  return ").append(String.join(", ", res.stream().map(V::ssa).toList())).append(" : ")
                    .append(String.join(", ", res.stream().map(v -> ty(v.type())).toList())).append("\n}\n");
            return sb.toString();
        }

        /** The top-level block as {@code @main}; appends it to {@code sb} and returns its result types. */
        List<TensorType> main(Block top, Map<Var, FnInfo> scope, LinkedHashMap<String, TensorType> args, StringBuilder sb) {
            List<String> params = new ArrayList<>();
            args.forEach((n, t) -> {
                V v = new V("%in." + n, t);
                inputs.put(n, v);
                params.add(v.ssa() + ": " + ty(t));
            });
            List<V> res = block(top, scope, "the program");
            sb.append("func.func private @main(").append(String.join(", ", params)).append(") -> ")
                    .append(results(res.stream().map(v -> ty(v.type())).toList())).append(" {\n");
            sb.append(text);
            sb.append("  return ").append(String.join(", ", res.stream().map(V::ssa).toList())).append(" : ")
                    .append(String.join(", ", res.stream().map(v -> ty(v.type())).toList())).append("\n}\n");
            return res.stream().map(V::type).toList();
        }

        /** The SSA name of a let's var: its own name, or a fresh one for a parser temporary. */
        String name(Var v) {
            return !v.temporary() && v.name().matches("[A-Za-z_][A-Za-z0-9_$]*") ? "%" + v.name() : fresh("t");
        }

        /**
         * Emits a block's lets and answers its result. A long block (over {@link #SPLIT} instructions)
         * is split into parts of at most {@link #PART} instructions, each a private func of its own
         * (taking the values it reads, returning those it defines that later parts read): LLVM's loop
         * passes take time superlinear in the size of one function.
         */
        List<V> block(Block b, Map<Var, FnInfo> scope, String where) {
            Map<Var, FnInfo> fnScope = new HashMap<>(scope);
            List<List<Let>> parts = weight(b.lets()) > SPLIT ? parts(b.lets()) : List.of(b.lets());
            if (parts.size() == 1) lets(b.lets(), fnScope);
            else {
                Set<Var> later = new HashSet<>(List.of(b.result()));
                List<Set<Var>> readLater = new ArrayList<>();
                for (int i = parts.size() - 1; i >= 0; i--) {
                    readLater.addFirst(new HashSet<>(later));
                    for (Let l : parts.get(i)) later.addAll(reads(l));
                }
                for (int i = 0; i < parts.size(); i++) part(parts.get(i), i, readLater.get(i), fnScope);
            }
            List<V> res = env.get(b.result());
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
                if (l.rhs() instanceof Rhs.Fn fn) fnScope.put(l.var(), infoOf.get(fn));
            }
        }

        /** Instructions (not inputs) and calls: what costs code. */
        private static int weight(Let l) { return l.rhs() instanceof Instr i && !(i instanceof Instr.Input) || l.rhs() instanceof Rhs.Call ? 1 : 0; }

        private static int weight(List<Let> lets) { return lets.stream().mapToInt(FnEmitter::weight).sum(); }

        /** Consecutive lets with at most PART instructions and calls each. */
        private static List<List<Let>> parts(List<Let> lets) {
            List<List<Let>> out = new ArrayList<>();
            List<Let> cur = new ArrayList<>();
            int weight = 0;
            for (Let l : lets) {
                int w = weight(l);
                if (weight + w > PART && !cur.isEmpty()) {
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

        /** One part: a func of the values it reads, returning the values it defines that {@code later} reads. */
        private void part(List<Let> lets, int index, Set<Var> later, Map<Var, FnInfo> fnScope) {
            FnEmitter p = new FnEmitter(symbol + ".part" + index);
            Set<Var> defined = new HashSet<>();
            List<V> args = new ArrayList<>();
            List<String> params = new ArrayList<>();
            Map<String, V> needInputs = new LinkedHashMap<>();
            Map<Var, FnInfo> scope = new HashMap<>(fnScope);
            for (Let l : lets) {
                for (Var v : reads(l)) {
                    if (defined.contains(v) || p.env.containsKey(v)) continue;
                    List<V> vs = values(v, l);
                    List<V> mine = new ArrayList<>();
                    for (V x : vs) {
                        V y = new V(vs.size() == 1 ? p.name(v) : p.fresh("arg"), x.type());
                        mine.add(y);
                        args.add(x);
                        params.add(y.ssa() + ": " + ty(y.type()));
                    }
                    p.env.put(v, mine);
                }
                if (l.rhs() instanceof Instr.Input) needInputs.put(l.var().name(), inputs.get(l.var().name()));
                if (l.rhs() instanceof Rhs.Call c) scope.get(c.fn()).inputs.keySet().forEach(n -> needInputs.put(n, inputs.get(n)));
                if (l.rhs() instanceof Rhs.Fn fn) scope.put(l.var(), infoOf.get(fn));
                defined.addAll(l.binders());
            }
            for (V in : needInputs.values()) {
                p.inputs.put(in.ssa().substring("%in.".length()), in);
                args.add(in);
                params.add(in.ssa() + ": " + ty(in.type()));
            }
            p.lets(lets, fnScope);
            for (Let l : lets) if (l.rhs() instanceof Rhs.Fn fn) fnScope.put(l.var(), infoOf.get(fn));
            List<Var> outVars = new ArrayList<>();
            List<V> outs = new ArrayList<>();
            for (Let l : lets)
                for (Var v : l.binders())
                    if (later.contains(v) && p.env.containsKey(v)) {
                        outVars.add(v);
                        outs.addAll(p.env.get(v));
                    }
            List<String> outTypes = outs.stream().map(v -> ty(v.type())).toList();
            StringBuilder f = new StringBuilder();
            f.append("func.func private @").append(p.symbol).append('(').append(String.join(", ", params)).append(") -> (")
                    .append(String.join(", ", outTypes)).append(") {\n").append(p.text);
            f.append("  return ").append(String.join(", ", outs.stream().map(V::ssa).toList()))
                    .append(outs.isEmpty() ? "" : " : " + String.join(", ", outTypes)).append("\n}\n");
            extra.append(f);
            String r = fresh("part");
            line((outs.isEmpty() ? "" : (outs.size() == 1 ? r : r + ":" + outs.size()) + " = ") + "func.call @" + p.symbol + "("
                    + String.join(", ", args.stream().map(V::ssa).toList()) + ") : (" + String.join(", ", args.stream().map(v -> ty(v.type())).toList())
                    + ") -> (" + String.join(", ", outTypes) + ")");
            int k = 0;
            for (Var v : outVars) {
                List<V> mine = new ArrayList<>();
                for (V x : p.env.get(v)) { mine.add(new V(outs.size() == 1 ? r : r + "#" + k, x.type())); k++; }
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
                    FnInfo f = scope.get(c.fn());
                    List<V> args = new ArrayList<>();
                    for (Var a : c.args()) args.add(one(a, l));
                    List<V> res = call(f, args, l.destructure() || l.var().temporary() ? fresh("call") : name(l.var()), "let " + l.displayName());
                    bind(l, res);
                }
                case Rhs.Handle h -> throw new MlirError(l.pos(), "let " + l.displayName() + ": handle " + h.fn() + " is lowered after transform_ad");
                case Rhs.Tuple t -> {
                    List<V> vs = new ArrayList<>();
                    for (Var e : t.elems()) vs.addAll(values(e, l));
                    bind(l, vs);
                }
                case Instr ins -> {
                    if (ins instanceof Instr.Input) {
                        env.put(l.var(), List.of(inputs.get(l.var().name())));
                        return;
                    }
                    if (ins instanceof Instr.Fused f && (l.destructure() || f.results() != 1)) {
                        bind(l, fused(l, f));
                        return;
                    }
                    String n = name(l.var());
                    env.put(l.var(), List.of(lower(l, ins, n)));
                }
            }
        }

        private void bind(Let l, List<V> vs) {
            if (!l.destructure()) {
                env.put(l.var(), vs);
                return;
            }
            if (vs.size() != l.binders().size())
                throw new MlirError(l.pos(), "let " + l.displayName() + ": destructuring " + l.binders().size() + " names from " + vs.size() + " values");
            for (int i = 0; i < vs.size(); i++) env.put(l.binders().get(i), List.of(vs.get(i)));
        }

        List<V> call(FnInfo f, List<V> args, String res, String where) {
            List<String> names = new ArrayList<>(), types = new ArrayList<>();
            for (V a : args) { names.add(a.ssa()); types.add(ty(a.type())); }
            for (String n : f.inputs.keySet()) {
                V v = inputs.get(n);
                names.add(v.ssa());
                types.add(ty(v.type()));
            }
            List<TensorType> rt = resultTypes(f.fn.result(), where);
            List<String> rts = rt.stream().map(Emitter::ty).toList();
            line((rt.size() == 1 ? res : res + ":" + rt.size()) + " = func.call @" + f.symbol + "(" + String.join(", ", names) + ") : ("
                    + String.join(", ", types) + ") -> " + results(rts));
            List<V> vs = new ArrayList<>();
            for (int i = 0; i < rt.size(); i++) vs.add(new V(rt.size() == 1 ? res : res + "#" + i, rt.get(i)));
            return vs;
        }

        private List<TensorType> resultTypes(Type t, String where) {
            return switch (t) {
                case TensorType tt -> List.of(tt);
                case Type.Tuple tu -> {
                    List<TensorType> l = new ArrayList<>();
                    for (Type e : tu.elems()) l.addAll(resultTypes(e, where));
                    yield l;
                }
                case Type.Fn _ -> throw new MlirError(where + ": a fn returning a fn has no lowering");
            };
        }

        private List<V> values(Var v, Let at) {
            List<V> vs = env.get(v);
            if (vs == null) throw new MlirError(at.pos(), "let " + at.displayName() + ": " + v + " is not a tensor value here");
            return vs;
        }

        private V one(Var v, Let at) {
            List<V> vs = values(v, at);
            if (vs.size() != 1) throw new MlirError(at.pos(), "let " + at.displayName() + ": " + v + " is a tuple, not a tensor");
            return vs.getFirst();
        }

        // ---- the instructions: one case each, families as one case where the lowering is uniform

        /** Lowers one instruction; its last op defines {@code out}. */
        V lower(Let l, Instr ins, String out) {
            TensorType t = l.tensorType();
            java.util.function.Function<Var, V> x = v -> one(v, l);
            return switch (ins) {
                case Input _ -> throw new IllegalStateException("inputs are arguments");
                case Literal(var lt, var payload) -> literal(out, lt, payload);
                case Fill(var ft, var v) -> fill(out, ft, v);
                case Instr.Unary u -> elementwise(out, t, List.of(x.apply(u.operands().getFirst())),
                        (b, a) -> List.of(unary(b, u, t.dtype(), a.getFirst())));
                case Instr.Binary bi -> {
                    List<V> ops = bi.operands().stream().map(x).toList();
                    DType d = ops.getLast().type().dtype();
                    yield elementwise(out, t, ops, (b, a) -> List.of(binary(b, bi, d, a)));
                }
                case ArgMax(var a, var axis) -> argmax(out, x.apply(a), axis, t);
                case Clamp(var a, var lo, var hi) -> elementwise(out, t, List.of(x.apply(a)), (b, a0) -> {
                    String m = b.op("arith.maxsi " + a0.getFirst() + ", " + b.cst(DType.I64, lo) + " : i64");
                    return List.of(b.op("arith.minsi " + m + ", " + b.cst(DType.I64, hi) + " : i64"));
                });
                case Requant(var a, var shift) -> elementwise(out, t, List.of(x.apply(a)),
                        (b, a0) -> List.of(b.op("arith.shrsi " + a0.getFirst() + ", " + b.cst(DType.I64, shift) + " : i64")));
                case Instr.Matmul(var a, var b) -> matmul(out, x.apply(a), x.apply(b), t);
                case Reshape(var a, var to) -> reshape(out, x.apply(a), to);
                case Transpose(var a, var perm) -> {
                    V src = x.apply(a);
                    if (perm.rank() == 0) yield src;
                    String e = empty(t);
                    line(out + " = linalg.transpose ins(" + src.ssa() + " : " + ty(src.type()) + ") outs(" + e + " : " + ty(t)
                            + ") permutation = " + perm);
                    yield new V(out, t);
                }
                case Broadcast(var a, var to) -> {
                    V src = x.apply(a);
                    int r = to.rank(), lead = r - src.type().rank();      // new leading axes read nothing
                    String[] m = new String[r - lead];
                    for (int i = 0; i < m.length; i++) m[i] = src.type().shape().dim(i) == 1 && to.dim(lead + i) != 1 ? "0" : "d" + (lead + i);
                    yield generic(out, r, Set.of(), List.of(new Operand(src, String.join(", ", m))), List.of(new Operand(new V(empty(t), t), full(r))),
                            (b, args) -> List.of(args.getFirst()));
                }
                case Sum(var a, var axis, var keep) -> {
                    V src = x.apply(a);
                    DType d = t.dtype();
                    V s = reduce(keep ? fresh("sum") : out, List.of(src), List.of(), axis, d, 0.0,
                            (b, args) -> List.of(add(b, d, args.getFirst(), args.getLast())));
                    yield keep ? reshape(out, s, t.shape()) : s;
                }
                case LogSoftmax(var a, var axis) -> softmax(out, x.apply(a), axis, true);
                case Softmax(var a, var axis) -> softmax(out, x.apply(a), axis, false);
                case RmsNorm(var a, var w, var r, var eps) -> rmsnorm(out, x.apply(a), w.map(x), r.map(x), eps);
                case LayerNorm(var a, var w, var bias, var eps) -> layernorm(out, x.apply(a), w.map(x), bias.map(x), eps);
                case L2Norm(var a, var eps) -> l2norm(out, x.apply(a), eps);
                case Rope(var a, var c, var s, var heads, var rotary, var start) -> rope(out, x.apply(a), x.apply(c), x.apply(s), heads, rotary, start);
                case Attention(var q, var k, var v, var sinks, var o) -> attention(out, x.apply(q), x.apply(k), x.apply(v), sinks.map(x), o, t);
                case AttentionLse(var q, var k, var sinks, var o) -> attentionLse(out, x.apply(q), x.apply(k), sinks.map(x), o, t);
                case AttentionExp(var q, var k, var lse, var o) -> attentionExp(out, x.apply(q), x.apply(k), x.apply(lse), o, t);
                case AttentionGrad ag -> one(attentionGrad(l, ag), l);
                case AttentionProduct(var a, var b, var o, var form) -> attentionProduct(out, x.apply(a), x.apply(b), o, form, t);
                case TakeAlongAxis(var v, var i, var axis) -> takeAlongAxis(out, x.apply(v), x.apply(i), axis, t);
                case Gather(var v, var i) -> gather(out, x.apply(v), x.apply(i), t);
                case SetRows(var tab, var i, var rows) -> setRows(out, x.apply(tab), x.apply(i), x.apply(rows));
                case ScatterAdd(var u, var i, var dest) -> scatterAdd(out, x.apply(u), x.apply(i), dest);
                case ScatterAlongAxis(var axis, var u, var i, var dest) -> scatterAlongAxis(out, axis, x.apply(u), x.apply(i), dest);
                case Instr.Fused f -> {
                    List<V> r = fused(l, f);
                    if (r.size() != 1) throw new MlirError(l.pos(), "let " + l.displayName() + ": " + f.op() + " makes " + r.size() + " values, bound to one name");
                    yield r.getFirst();
                }
            };
        }

        // ---- the plan's fusions: each lowered as the composition it stands for (Kernels.fused's order)

        /** The values of fusion f, in the order of {@link Instr.Fused#results}. */
        List<V> fused(Let l, Instr.Fused f) {
            java.util.function.Function<Var, V> x = v -> one(v, l);
            return switch (f) {
                case MatmulT(var a, var b, var ta, var tb) -> List.of(x.apply(part(l, matmulT(l, a, b, ta, tb))));
                case MatmulShared(var a, var bs, var ta, var tb) -> bs.stream().map(b -> x.apply(part(l, matmulT(l, a, b, ta, tb)))).toList();
                case SoftmaxGrad(var p, var dp, var rowSums) -> softmaxGrad(l, p, dp, rowSums).stream().map(x).toList();
                case AttentionWithLse(var q, var k, var v, var sinks, var o) -> List.of(
                        x.apply(part(l, new Attention(q, k, v, sinks, o))), x.apply(part(l, new AttentionLse(q, k, sinks, o))));
                case AttentionBackward(var q, var k, var v, var g, var lse, var d, var o, var dq, var dk, var dv) -> {
                    List<V> out = new ArrayList<>();
                    if (dq) out.add(x.apply(attentionGrad(l, new AttentionGrad(q, k, v, g, lse, d, o, AttentionGrad.Wrt.Q))));
                    if (dk) out.add(x.apply(attentionGrad(l, new AttentionGrad(q, k, v, g, lse, d, o, AttentionGrad.Wrt.K))));
                    if (dv) out.add(x.apply(attentionGrad(l, new AttentionGrad(q, k, v, g, lse, d, o, AttentionGrad.Wrt.V))));
                    yield out;
                }
                case SwigluSigmoid(var g, var u) -> List.of(x.apply(part(l, new Swiglu(g, u))), x.apply(part(l, new Sigmoid(g))));
                case Elementwise(var inputs, var body) -> elementwiseFn(l, inputs, body);
            };
        }

        private int parts;

        /** Lowers one instruction of a fusion's composition into a fresh value; errors name the fusion's let. */
        private Var part(Let at, Instr ins) {
            TensorType t = kina.check.TypeRules.infer(ins, v -> one(v, at).type());
            Var v = Var.of("%fused" + (parts++));
            env.put(v, List.of(lower(new Let(List.of(v), false, ins, at.pos(), at.displayName(), t), ins, fresh("f"))));
            return v;
        }

        /** a @ b with either operand's last two axes swapped first (the transposes made, then the matmul). */
        private Instr matmulT(Let at, Var a, Var b, boolean ta, boolean tb) {
            Var a2 = ta ? part(at, new Transpose(a, kina.ir.Perm.lastTwo(one(a, at).type().rank()))) : a;
            Var b2 = tb ? part(at, new Transpose(b, kina.ir.Perm.lastTwo(one(b, at).type().rank()))) : b;
            return new Instr.Matmul(a2, b2);
        }

        /** p ⊙ (dp − broadcast(Σ_last p ⊙ dp)) and, with rowSums, the row sums. */
        private List<Var> softmaxGrad(Let at, Var p, Var dp, boolean rowSums) {
            Shape s = one(p, at).type().shape();
            Var d = part(at, new Sum(part(at, new Mul(p, dp)), s.rank() - 1, true));
            Var ds = part(at, new Mul(p, part(at, new Sub(dp, part(at, new Broadcast(d, s))))));
            return rowSums ? List.of(ds, d) : List.of(ds);
        }

        /**
         * attention_dq / _dk / _dv as the composition the blockwise kernel computes pair by pair:
         * P = attention_exp(q, k, lse); dv = attention_pq(P, g); dS = P ⊙ (attention_qk(g, v) − d),
         * dU = dS (1 − tanh²(u/C)) with a softcap (u = α attention_qk(q, k)); dq = α attention_pk(dU, k),
         * dk = α attention_pq(dU, q). Not the kernel's blockwise order: equal within rounding.
         */
        private Var attentionGrad(Let at, AttentionGrad ag) {
            AttnOpts o = ag.opts();
            Var p = part(at, new AttentionExp(ag.q(), ag.k(), ag.lse(), o));
            if (ag.wrt() == AttentionGrad.Wrt.V) return part(at, new AttentionProduct(p, ag.g(), o, AttentionProduct.Form.PQ));
            TensorType pt = one(p, at).type();
            Shape ps = pt.shape();
            int r = ps.rank();
            Var dp = part(at, new AttentionProduct(ag.g(), ag.v(), o, AttentionProduct.Form.QK));
            Var dh = part(at, new Transpose(ag.d(), kina.ir.Perm.lastTwo(one(ag.d(), at).type().rank())));   // σ++[H, T]
            Var db = part(at, new Broadcast(part(at, new Reshape(dh, ps.with(r - 1, 1))), ps));
            Var du = part(at, new Mul(p, part(at, new Sub(dp, db))));
            TensorType qt = one(ag.q(), at).type();
            double al = o.alpha(qt.shape().dim(qt.rank() - 1) / o.heads());
            if (o.softcap() > 0) {
                Var u = part(at, new Mul(part(at, new AttentionProduct(ag.q(), ag.k(), o, AttentionProduct.Form.QK)), part(at, new Fill(pt, al))));
                Var th = part(at, new Tanh(part(at, new Div(u, part(at, new Fill(pt, o.softcap()))))));
                du = part(at, new Mul(du, part(at, new Sub(part(at, new Fill(pt, 1.0)), part(at, new Mul(th, th))))));
            }
            boolean dq = ag.wrt() == AttentionGrad.Wrt.Q;
            Var prod = part(at, new AttentionProduct(du, dq ? ag.k() : ag.q(), o, dq ? AttentionProduct.Form.PK : AttentionProduct.Form.PQ));
            return part(at, new Mul(prod, part(at, new Fill(one(prod, at).type(), al))));
        }

        /**
         * The fn of a fused elementwise chain applied to the inputs, let by let; its names are bound
         * only while it is lowered (the fn is closed, so nothing outside reads them).
         */
        private List<V> elementwiseFn(Let at, List<Var> inputs, Rhs.Fn body) {
            Map<Var, List<V>> saved = new HashMap<>();
            java.util.function.BiConsumer<Var, List<V>> put = (v, val) -> {
                if (!saved.containsKey(v)) saved.put(v, env.get(v));
                env.put(v, val);
            };
            List<List<V>> args = inputs.stream().map(v -> List.of(one(v, at))).toList();
            for (int i = 0; i < inputs.size(); i++) put.accept(body.params().get(i).name(), args.get(i));
            List<Var> result = List.of(body.body().result());
            for (Let b : body.body().lets()) {
                switch (b.rhs()) {
                    case Rhs.Tuple(var elems) -> result = elems;
                    case Instr ins -> {
                        TensorType t = kina.check.TypeRules.infer(ins, v -> one(v, at).type());
                        put.accept(b.var(), List.of(lower(new Let(List.of(b.var()), false, ins, at.pos(), at.displayName(), t), ins, fresh("f"))));
                    }
                    case Rhs.Fn _, Rhs.Call _, Rhs.Handle _ -> throw new MlirError(at.pos(), "let " + at.displayName()
                            + ": elementwise: its fn holds " + what(b) + ", not an elementwise instruction");
                }
            }
            List<V> out = new ArrayList<>();
            for (Var v : result) out.add(one(v, at));
            saved.forEach((v, old) -> { if (old == null) env.remove(v); else env.put(v, old); });
            return out;
        }

        // ---- scalar bodies of the elementwise families

        /** One element of a unary instruction of dtype d. */
        String unary(Body b, Instr.Unary u, DType d, String x) {
            String e = el(d);
            return switch (u) {
                case Neg _ -> b.op("arith.negf " + x + " : " + e);
                case Exp _ -> b.op("math.exp " + x + " : " + e);
                case Log _ -> b.op("math.log " + x + " : " + e);
                case Sqrt _ -> b.op("math.sqrt " + x + " : " + e);
                case Rsqrt _ -> div(b, d, b.cst(d, 1), b.op("math.sqrt " + x + " : " + e));
                case Tanh _ -> b.op("math.tanh " + x + " : " + e);
                case Sigmoid _ -> sigmoid(b, d, x);
                case Reciprocal _ -> div(b, d, b.cst(d, 1), x);
                case Silu _ -> mul(b, d, x, sigmoid(b, d, x));
                case Gelu _ -> {
                    String x3 = mul(b, d, mul(b, d, x, x), x);
                    String z = mul(b, d, b.cst(d, Gelu.GELU_C), add(b, d, x, mul(b, d, b.cst(d, Gelu.GELU_K), x3)));
                    yield mul(b, d, mul(b, d, b.cst(d, 0.5), x), add(b, d, b.cst(d, 1), b.op("math.tanh " + z + " : " + e)));
                }
                case Relu _ -> d.floating() ? b.op("arith.maximumf " + x + ", " + b.cst(d, 0) + " : " + e)
                        : b.op("arith.maxsi " + x + ", " + b.cst(d, 0) + " : " + e);
                case Softcap(var ignored, var cap) -> {
                    String c = b.cst(d, cap);
                    yield mul(b, d, c, b.op("math.tanh " + div(b, d, x, c) + " : " + e));
                }
            };
        }

        /** One element of a binary instruction whose (last) operands have dtype d. */
        String binary(Body b, Instr.Binary bi, DType d, List<String> a) {
            String e = el(d);
            return switch (bi) {
                case Add _ -> add(b, d, a.get(0), a.get(1));
                case Sub _ -> b.op("arith.subf " + a.get(0) + ", " + a.get(1) + " : " + e);
                case Mul _ -> mul(b, d, a.get(0), a.get(1));
                case Div _ -> div(b, d, a.get(0), a.get(1));
                case Maximum _ -> b.op("arith.maximumf " + a.get(0) + ", " + a.get(1) + " : " + e);
                case Greater _ -> b.op("arith.cmpf ogt, " + a.get(0) + ", " + a.get(1) + " : " + e);
                case Select _ -> b.op("arith.select " + a.get(0) + ", " + a.get(1) + ", " + a.get(2) + " : " + e);
                case Swiglu _ -> mul(b, d, mul(b, d, a.get(0), sigmoid(b, d, a.get(0))), a.get(1));
            };
        }

        /** σ(x) = 1 / (1 + exp(−x)). */
        String sigmoid(Body b, DType d, String x) {
            String e = el(d);
            String ex = b.op("math.exp " + b.op("arith.negf " + x + " : " + e) + " : " + e);
            return div(b, d, b.cst(d, 1), add(b, d, b.cst(d, 1), ex));
        }

        String add(Body b, DType d, String x, String y) { return b.op((d.floating() ? "arith.addf " : "arith.addi ") + x + ", " + y + " : " + el(d)); }

        String mul(Body b, DType d, String x, String y) { return b.op((d.floating() ? "arith.mulf " : "arith.muli ") + x + ", " + y + " : " + el(d)); }

        String div(Body b, DType d, String x, String y) { return b.op("arith.divf " + x + ", " + y + " : " + el(d)); }

        // ---- constants

        V literal(String out, TensorType t, Payload p) {
            line(out + " = arith.constant dense<" + nested(t, p, 0, 0) + "> : " + ty(t));
            return new V(out, t);
        }

        /** The payload as nested brackets, one level per dim (rank 0: the value). */
        private String nested(TensorType t, Payload p, int dim, int at) {
            Shape s = t.shape();
            if (dim == s.rank()) return lit(t.dtype(), p.at(at));
            StringBuilder b = new StringBuilder("[");
            long stride = 1;
            for (int i = dim + 1; i < s.rank(); i++) stride *= s.dim(i);
            for (long i = 0; i < s.dim(dim); i++) {
                if (i > 0) b.append(", ");
                b.append(nested(t, p, dim + 1, (int) (at + i * stride)));
            }
            return b.append(']').toString();
        }

        V fill(String out, TensorType t, double v) {
            String c = fresh("c");
            line(c + " = " + constant(t.dtype(), v));
            String e = empty(t);
            line(out + " = linalg.fill ins(" + c + " : " + el(t.dtype()) + ") outs(" + e + " : " + ty(t) + ") -> " + ty(t));
            return new V(out, t);
        }

        String empty(TensorType t) {
            String e = fresh("empty");
            line(e + " = tensor.empty() : " + ty(t));
            return e;
        }

        /** A tensor of type t filled with v (a fresh name). */
        V filled(TensorType t, double v) { return fill(fresh("init"), t, v); }

        // ---- generics

        /**
         * {@code out = linalg.generic} over {@code loops} dims (reduction dims in {@code red}), with
         * the given ins and outs (their maps in terms of d0…), and the body; returns the first result.
         */
        V generic(String out, int loops, Set<Integer> red, List<Operand> ins, List<Operand> outs, BodyFn body) {
            return genericAll(out, loops, red, ins, outs, "", body).getFirst();
        }

        List<V> genericAll(String out, int loops, Set<Integer> red, List<Operand> ins, List<Operand> outs, BodyFn body) {
            return genericAll(out, loops, red, ins, outs, "", body);
        }

        /** As generic, with more attributes ({@code attrs}: {@code ", name"}…) for the schedule to match. */
        List<V> genericAll(String out, int loops, Set<Integer> red, List<Operand> ins, List<Operand> outs, String attrs, BodyFn body) {
            String dims = dimList(loops);
            List<String> maps = new ArrayList<>(), iters = new ArrayList<>();
            for (Operand o : ins) maps.add("affine_map<(" + dims + ") -> (" + o.map() + ")>");
            for (Operand o : outs) maps.add("affine_map<(" + dims + ") -> (" + o.map() + ")>");
            for (int i = 0; i < loops; i++) iters.add(red.contains(i) ? "\"reduction\"" : "\"parallel\"");
            StringBuilder s = new StringBuilder();
            String res = outs.size() == 1 ? out : out + ":" + outs.size();
            s.append(res).append(" = linalg.generic {indexing_maps = [").append(String.join(", ", maps))
                    .append("], iterator_types = [").append(String.join(", ", iters)).append("]").append(attrs).append("}");
            if (!ins.isEmpty())
                s.append(" ins(").append(String.join(", ", ins.stream().map(o -> o.v().ssa()).toList())).append(" : ")
                        .append(String.join(", ", ins.stream().map(o -> ty(o.v().type())).toList())).append(')');
            s.append(" outs(").append(String.join(", ", outs.stream().map(o -> o.v().ssa()).toList())).append(" : ")
                    .append(String.join(", ", outs.stream().map(o -> ty(o.v().type())).toList())).append(") {");
            line(s.toString());
            List<String> args = new ArrayList<>(), decl = new ArrayList<>();
            for (Operand o : ins) { String a = fresh("in"); args.add(a); decl.add(a + ": " + el(o.v().type().dtype())); }
            for (Operand o : outs) { String a = fresh("out"); args.add(a); decl.add(a + ": " + el(o.v().type().dtype())); }
            text.append(IND).append("^bb0(").append(String.join(", ", decl)).append("):\n");
            Body b = new Body(this);
            List<String> ys = body.yield(b, args);
            text.append(b.sb);
            text.append(IND).append("  linalg.yield ").append(String.join(", ", ys)).append(" : ")
                    .append(String.join(", ", outs.stream().map(o -> el(o.v().type().dtype())).toList())).append('\n');
            text.append(IND).append("} -> ").append(results(outs.stream().map(o -> ty(o.v().type())).toList())).append('\n');
            List<V> vs = new ArrayList<>();
            for (int i = 0; i < outs.size(); i++) vs.add(new V(outs.size() == 1 ? out : out + "#" + i, outs.get(i).v().type()));
            return vs;
        }

        /** An all-parallel generic over t's shape, operands of t's shape (identity maps), into a fresh t. */
        V elementwise(String out, TensorType t, List<V> ops, BodyFn body) {
            int r = t.rank();
            List<Operand> ins = ops.stream().map(v -> new Operand(v, full(r))).toList();
            return generic(out, r, Set.of(), ins, List.of(new Operand(new V(empty(t), t), full(r))), body);
        }

        /**
         * Reduces over {@code axis} of the shape of {@code full}'s operands (those in {@code rows} have
         * that shape without the axis) into a tensor of that reduced shape starting from {@code init}.
         * The body gets the ins, then the accumulator.
         */
        V reduce(String out, List<V> full, List<V> rows, int axis, DType d, double init, BodyFn body) {
            TensorType ft = full.getFirst().type();
            int r = ft.rank();
            TensorType rt = new TensorType(d, ft.shape().drop(axis), ft.placement());
            List<Operand> ins = new ArrayList<>();
            for (V v : full) ins.add(new Operand(v, full(r)));
            for (V v : rows) ins.add(new Operand(v, drop(r, axis)));
            return generic(out, r, Set.of(axis), ins, List.of(new Operand(filled(rt, init), drop(r, axis))), body);
        }

        /** An all-parallel generic over {@code full}'s shape with row operands broadcast along {@code axis}. */
        V overRows(String out, TensorType t, List<V> full, List<V> rows, List<V> lanes, int axis, BodyFn body) {
            int r = t.rank();
            List<Operand> ins = new ArrayList<>();
            for (V v : full) ins.add(new Operand(v, full(r)));
            for (V v : rows) ins.add(new Operand(v, drop(r, axis)));
            for (V v : lanes) ins.add(new Operand(v, "d" + axis));
            return generic(out, r, Set.of(), ins, List.of(new Operand(new V(empty(t), t), full(r))), body);
        }

        // ---- contraction and layout

        V matmul(String out, V a, V b, TensorType t) {
            int r = t.rank();
            if (r <= 3) return contract(out, a, b, t);
            String assoc = batchAssoc(r);
            V a3 = collapse(a, assoc, batch3(a.type()));
            V b3 = collapse(b, assoc, batch3(b.type()));
            V c = contract(fresh("bmm"), a3, b3, batch3(t));
            line(out + " = tensor.expand_shape " + c.ssa() + " " + assoc + " output_shape " + t.shape() + " : " + ty(c.type()) + " into " + ty(t));
            return new V(out, t);
        }

        /**
         * a @ b of rank 2 ({@code linalg.matmul}) or 3 ({@code linalg.batch_matmul}) from a zero
         * start, in a private func of its own marked {@code kina.contraction} with its tile sizes
         * ({@code kina.tiles}): the schedule tiles and vectorizes these funcs, and only these.
         */
        V contract(String out, V a, V b, TensorType t) {
            String sym = symbol + ".mm" + (contractions++);
            String named = t.rank() == 2 ? "linalg.matmul" : "linalg.batch_matmul";
            Shape sa = a.type().shape();
            int r = t.rank();
            String tiles = tiles(r, sa.dim(r - 2), t.shape().dim(r - 1), sa.dim(r - 1), t.dtype());
            String ta = ty(a.type()), tb = ty(b.type()), tt = ty(t);
            // Destination passing: the caller's zero-filled init is the result (bufferized in place,
            // the equivalent result dropped), so no result is copied out of the func.
            extra.append("func.func private @").append(sym).append("(%a: ").append(ta).append(", %b: ").append(tb).append(", %init: ").append(tt)
                    .append(") -> ").append(tt).append(" attributes {kina.contraction, kina.tiles = \"").append(tiles).append("\"} {\n")
                    .append("  %c = ").append(named).append(" ins(%a, %b : ").append(ta).append(", ").append(tb).append(") outs(%init : ").append(tt)
                    .append(") -> ").append(tt).append('\n')
                    .append("  return %c : ").append(tt).append("\n}\n");
            V z = filled(t, 0);
            line(out + " = func.call @" + sym + "(" + a.ssa() + ", " + b.ssa() + ", " + z.ssa() + ") : (" + ta + ", " + tb + ", " + tt + ") -> " + tt);
            return new V(out, t);
        }

        /** x with its axes permuted: {@code linalg.transpose}, or x itself for the identity. */
        V transpose(V x, int... perm) {
            boolean identity = true;
            for (int i = 0; i < perm.length; i++) identity &= perm[i] == i;
            if (identity) return x;
            TensorType t = x.type().withShape(kina.ir.Perm.of(perm).apply(x.type().shape()));
            String e = empty(t), out = fresh("transpose");
            line(out + " = linalg.transpose ins(" + x.ssa() + " : " + ty(x.type()) + ") outs(" + e + " : " + ty(t) + ") permutation = " + kina.ir.Perm.of(perm));
            return new V(out, t);
        }

        /** [[0, …, r−3], [r−2], [r−1]]: the batch dims grouped. */
        private static String batchAssoc(int r) {
            List<String> g = new ArrayList<>();
            for (int i = 0; i < r - 2; i++) g.add(Integer.toString(i));
            return "[[" + String.join(", ", g) + "], [" + (r - 2) + "], [" + (r - 1) + "]]";
        }

        private static TensorType batch3(TensorType t) {
            Shape s = t.shape();
            int r = s.rank();
            return t.withShape(Shape.of(s.prefix(r - 2).vol(), s.dim(r - 2), s.dim(r - 1)));
        }

        V collapse(V x, String assoc, TensorType to) {
            String n = fresh("collapse");
            line(n + " = tensor.collapse_shape " + x.ssa() + " " + assoc + " : " + ty(x.type()) + " into " + ty(to));
            return new V(n, to);
        }

        V expand(String out, V x, String assoc, TensorType to) {
            line(out + " = tensor.expand_shape " + x.ssa() + " " + assoc + " output_shape " + to.shape() + " : " + ty(x.type()) + " into " + ty(to));
            return new V(out, to);
        }

        /**
         * x with shape {@code to} (same volume, row-major order kept): the value itself, one collapse or
         * one expand when the dims group, else a collapse to rank 1 then an expand.
         */
        V reshape(String out, V x, Shape to) {
            Shape from = x.type().shape();
            TensorType tt = x.type().withShape(to);
            if (from.equals(to)) return x;
            String g = to.rank() == 0 || from.rank() == 0 ? "[]"
                    : to.rank() == 1 ? "[" + range(0, from.rank()) + "]"
                    : from.rank() == 1 ? "[" + range(0, to.rank()) + "]"
                    : to.rank() < from.rank() ? groups(from, to)
                    : to.rank() > from.rank() ? groups(to, from) : null;
            if (g == null) return reshape(out, reshape(fresh("flat"), x, Shape.of(from.vol())), to);
            if (to.rank() < from.rank()) {
                line(out + " = tensor.collapse_shape " + x.ssa() + " " + g + " : " + ty(x.type()) + " into " + ty(tt));
                return new V(out, tt);
            }
            return expand(out, x, g, tt);
        }

        /**
         * The reassociation grouping the dims of {@code big} into those of {@code small}: each small
         * dim takes the next big dims until their product equals it, trailing unit dims join the last
         * group; null when the dims do not group so (or a dim is 0).
         */
        private static String groups(Shape big, Shape small) {
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
            StringBuilder b = new StringBuilder("[");
            for (int k = 0; k < gs.size(); k++) {
                if (k > 0) b.append(", ");
                b.append('[');
                for (int m = 0; m < gs.get(k).size(); m++) { if (m > 0) b.append(", "); b.append(gs.get(k).get(m)); }
                b.append(']');
            }
            return b.append(']').toString();
        }

        // ---- reductions and rows

        V argmax(String out, V x, int axis, TensorType t) {
            DType d = x.type().dtype();
            int r = x.type().rank();
            TensorType vt = x.type().withShape(x.type().shape().drop(axis));
            V best = filled(vt, Double.NEGATIVE_INFINITY), at = filled(t, 0);
            String res = fresh("argmax");
            List<V> vs = genericAll(res, r, Set.of(axis), List.of(new Operand(x, full(r))),
                    List.of(new Operand(best, drop(r, axis)), new Operand(at, drop(r, axis))), (b, a) -> {
                        // the first largest; a NaN counts as the largest and the first one stays
                        String e = el(d);
                        String accNan = b.op("arith.cmpf uno, " + a.get(1) + ", " + a.get(1) + " : " + e);
                        String vNan = b.op("arith.cmpf uno, " + a.get(0) + ", " + a.get(0) + " : " + e);
                        String gt = b.op("arith.cmpf ogt, " + a.get(0) + ", " + a.get(1) + " : " + e);
                        String better = b.op("arith.ori " + vNan + ", " + gt + " : i1");
                        String take = b.op("arith.andi " + better + ", " + b.op("arith.xori " + accNan + ", " + b.cst(DType.I1, 1) + " : i1") + " : i1");
                        String i = b.op("arith.index_cast " + b.index(axis) + " : index to i64");
                        return List.of(b.op("arith.select " + take + ", " + a.get(0) + ", " + a.get(1) + " : " + e),
                                b.op("arith.select " + take + ", " + i + ", " + a.get(2) + " : i64"));
                    });
            return vs.get(1);
        }

        /** softmax / log_softmax along axis: max, Σ exp(x − max), then the row pass. */
        V softmax(String out, V x, int axis, boolean log) {
            DType d = x.type().dtype();
            String e = el(d);
            V m = reduce(fresh("max"), List.of(x), List.of(), axis, d, Double.NEGATIVE_INFINITY,
                    (b, a) -> List.of(b.op("arith.maximumf " + a.get(0) + ", " + a.get(1) + " : " + e)));
            V s = reduce(fresh("expsum"), List.of(x), List.of(m), axis, d, 0,
                    (b, a) -> List.of(add(b, d, a.get(2), b.op("math.exp " + b.op("arith.subf " + a.get(0) + ", " + a.get(1) + " : " + e) + " : " + e))));
            if (log) {
                V ls = rowsMap(fresh("logsum"), s, (b, a) -> List.of(b.op("math.log " + a.getFirst() + " : " + e)));
                return overRows(out, x.type(), List.of(x), List.of(m, ls), List.of(), axis, (b, a) ->
                        List.of(b.op("arith.subf " + b.op("arith.subf " + a.get(0) + ", " + a.get(1) + " : " + e) + ", " + a.get(2) + " : " + e)));
            }
            return overRows(out, x.type(), List.of(x), List.of(m, s), List.of(), axis, (b, a) ->
                    List.of(div(b, d, b.op("math.exp " + b.op("arith.subf " + a.get(0) + ", " + a.get(1) + " : " + e) + " : " + e), a.get(2))));
        }

        /** An elementwise map of one tensor into a fresh one of its type. */
        V rowsMap(String out, V x, BodyFn body) { return elementwise(out, x.type(), List.of(x), body); }

        V rmsnorm(String out, V x, Optional<V> w, Optional<V> res, double eps) {
            DType d = x.type().dtype();
            int r = x.type().rank(), last = r - 1;
            long dd = x.type().shape().dim(last);
            V u = res.isPresent() ? elementwise(fresh("u"), x.type(), List.of(x, res.get()), (b, a) -> List.of(add(b, d, a.get(0), a.get(1)))) : x;
            V ss = reduce(fresh("sumsq"), List.of(u), List.of(), last, d, 0,
                    (b, a) -> List.of(add(b, d, a.get(1), mul(b, d, a.get(0), a.get(0)))));
            V q = rowsMap(fresh("rms"), ss, (b, a) -> List.of(div(b, d, b.cst(d, 1),
                    b.op("math.sqrt " + add(b, d, div(b, d, a.getFirst(), b.cst(d, dd)), b.cst(d, eps)) + " : " + el(d)))));
            return overRows(out, x.type(), List.of(u), List.of(q), w.map(List::of).orElse(List.of()), last, (b, a) -> {
                String y = mul(b, d, a.get(0), a.get(1));
                return List.of(w.isPresent() ? mul(b, d, y, a.get(2)) : y);
            });
        }

        V layernorm(String out, V x, Optional<V> w, Optional<V> bias, double eps) {
            DType d = x.type().dtype();
            int r = x.type().rank(), last = r - 1;
            long dd = x.type().shape().dim(last);
            String e = el(d);
            V s = reduce(fresh("sum"), List.of(x), List.of(), last, d, 0, (b, a) -> List.of(add(b, d, a.get(1), a.get(0))));
            V mu = rowsMap(fresh("mean"), s, (b, a) -> List.of(div(b, d, a.getFirst(), b.cst(d, dd))));
            V vs = reduce(fresh("sumsq"), List.of(x), List.of(mu), last, d, 0, (b, a) -> {
                String dl = b.op("arith.subf " + a.get(0) + ", " + a.get(1) + " : " + e);
                return List.of(add(b, d, a.get(2), mul(b, d, dl, dl)));
            });
            V q = rowsMap(fresh("inv"), vs, (b, a) -> List.of(div(b, d, b.cst(d, 1),
                    b.op("math.sqrt " + add(b, d, div(b, d, a.getFirst(), b.cst(d, dd)), b.cst(d, eps)) + " : " + e))));
            List<V> lanes = new ArrayList<>();
            w.ifPresent(lanes::add);
            bias.ifPresent(lanes::add);
            return overRows(out, x.type(), List.of(x), List.of(mu, q), lanes, last, (b, a) -> {
                String y = mul(b, d, b.op("arith.subf " + a.get(0) + ", " + a.get(1) + " : " + e), a.get(2));
                if (w.isPresent()) y = mul(b, d, y, a.get(3));
                if (bias.isPresent()) y = add(b, d, y, a.get(4));
                return List.of(y);
            });
        }

        V l2norm(String out, V x, double eps) {
            DType d = x.type().dtype();
            int last = x.type().rank() - 1;
            V ss = reduce(fresh("sumsq"), List.of(x), List.of(), last, d, 0,
                    (b, a) -> List.of(add(b, d, a.get(1), mul(b, d, a.get(0), a.get(0)))));
            V n = rowsMap(fresh("norm"), ss, (b, a) -> List.of(b.op("math.sqrt " + add(b, d, a.getFirst(), b.cst(d, eps)) + " : " + el(d))));
            return overRows(out, x.type(), List.of(x), List.of(n), List.of(), last, (b, a) -> List.of(div(b, d, a.get(0), a.get(1))));
        }

        /**
         * Half-split rotation: in head h, for i &lt; R/2, y_i = a·c − b·s and y_{i+R/2} = b·c + a·s with
         * a = x_i, b = x_{i+R/2}, (c, s) row start + t, column i of the tables; the rest copied.
         */
        V rope(String out, V x, V cos, V sin, int heads, int rotary, int start) {
            DType d = x.type().dtype();
            String e = el(d);
            int r = x.type().rank();
            long w = x.type().shape().dim(r - 1), hd = w / heads, rot = rotary == 0 ? hd : rotary, half = rot / 2;
            return elementwise(out, x.type(), List.of(x), (b, a) -> {
                String self = a.getFirst();
                String t = b.index(r - 2), c = b.index(r - 1);
                String i = b.op("arith.remui " + c + ", " + b.cst(hd) + " : index");
                String lo = b.op("arith.cmpi ult, " + i + ", " + b.cst(half) + " : index");
                String in = b.op("arith.cmpi ult, " + i + ", " + b.cst(rot) + " : index");
                String j = b.op("arith.select " + lo + ", " + i + ", " + b.op("arith.subi " + i + ", " + b.cst(half) + " : index") + " : index");
                j = b.op("arith.select " + in + ", " + j + ", " + b.cst(0) + " : index");
                String partner = b.op("arith.select " + lo + ", " + b.op("arith.addi " + c + ", " + b.cst(half) + " : index") + ", "
                        + b.op("arith.subi " + c + ", " + b.cst(half) + " : index") + " : index");
                partner = b.op("arith.select " + in + ", " + partner + ", " + c + " : index");
                String row = b.op("arith.addi " + t + ", " + b.cst(start) + " : index");
                List<String> at = new ArrayList<>();
                for (int k = 0; k < r - 1; k++) at.add(b.index(k));
                at.add(partner);
                String other = b.op("tensor.extract " + x.ssa() + "[" + String.join(", ", at) + "] : " + ty(x.type()));
                String cs = b.op("tensor.extract " + cos.ssa() + "[" + row + ", " + j + "] : " + ty(cos.type()));
                String sn = b.op("tensor.extract " + sin.ssa() + "[" + row + ", " + j + "] : " + ty(sin.type()));
                String first = b.op("arith.subf " + mul(b, d, self, cs) + ", " + mul(b, d, other, sn) + " : " + e);
                String second = add(b, d, mul(b, d, self, cs), mul(b, d, other, sn));
                String rotated = b.op("arith.select " + lo + ", " + first + ", " + second + " : " + e);
                return List.of(b.op("arith.select " + in + ", " + rotated + ", " + self + " : " + e));
            });
        }

        // ---- attention: heads batched as [B·KV, G·T, hd] (queries), [B·KV, L, hd] (keys): the
        // products are batch matmuls, the probabilities [B, KV, G, T, L] (= [B·KV, G·T, L])

        /** q σ++[T, H·hd] as [B·KV, G·T, hd] (B = vol σ, G = H / KV; query head h = c·G + g). */
        private V queries(V q, AttnOpts o) {
            Shape s = q.type().shape();
            int r = s.rank();
            long b = s.prefix(r - 2).vol(), t = s.dim(r - 2), hd = s.dim(r - 1) / o.heads(), kv = o.kvHeads(), g = o.heads() / kv;
            V q5 = reshape(fresh("rows"), q, Shape.of(b, t, kv, g, hd));
            return reshape(fresh("rows"), transpose(q5, 0, 2, 3, 1, 4), Shape.of(b * kv, g * t, hd));
        }

        /** k σ++[L, KV·hd] as [B·KV, L, hd], or transposed as [B·KV, hd, L]. */
        private V keys(V k, AttnOpts o, boolean transposed) {
            Shape s = k.type().shape();
            int r = s.rank();
            long b = s.prefix(r - 2).vol(), l = s.dim(r - 2), kv = o.kvHeads(), hd = s.dim(r - 1) / kv;
            V k4 = reshape(fresh("keys"), k, Shape.of(b, l, kv, hd));
            return transposed ? reshape(fresh("keys"), transpose(k4, 0, 2, 3, 1), Shape.of(b * kv, hd, l))
                    : reshape(fresh("keys"), transpose(k4, 0, 2, 1, 3), Shape.of(b * kv, l, hd));
        }

        /** p σ++[H, T, L] as [B, KV, G, T, L]. */
        private V probs5(V p, AttnOpts o) {
            Shape s = p.type().shape();
            int r = s.rank();
            return reshape(fresh("probs"), p, Shape.of(s.prefix(r - 3).vol(), o.kvHeads(), o.heads() / o.kvHeads(), s.dim(r - 2), s.dim(r - 1)));
        }

        /** [B·KV, G·T, hd] (a query-shaped product) back to σ++[T, H·hd] of type t. */
        private V unqueries(String out, V y, AttnOpts o, TensorType t) {
            Shape s = t.shape();
            int r = s.rank();
            long b = s.prefix(r - 2).vol(), rows = s.dim(r - 2), kv = o.kvHeads(), g = o.heads() / kv, hd = s.dim(r - 1) / o.heads();
            V y5 = reshape(fresh("rows"), y, Shape.of(b, kv, g, rows, hd));
            return reshape(out, transpose(y5, 0, 3, 1, 2, 4), s);
        }

        /** a @ b for rank-3 a, b (a batch matmul of its own). */
        private V bmm(V a, V b) {
            Shape sa = a.type().shape(), sb = b.type().shape();
            return contract(fresh("bmm"), a, b, a.type().withShape(Shape.of(sa.dim(0), sa.dim(1), sb.dim(2))));
        }

        /** x [B, KV, G, T, L] with +0.0 where row t does not attend key j (each entry a select). */
        private V masked(V x, AttnOpts o) {
            DType d = x.type().dtype();
            long l = x.type().shape().dim(4);
            return elementwise(fresh("masked"), x.type(), List.of(x), (g, a) -> List.of(g.op("arith.select "
                    + attended(g, g.index(3), g.index(4), o, l) + ", " + a.getFirst() + ", " + g.cst(d, 0) + " : " + el(d))));
        }

        /** Whether query row t attends key j (index values): lo(t) ≤ j ≤ min(start + t, L − 1). */
        private String attended(Body b, String t, String j, AttnOpts o, long l) {
            String last = b.op("arith.addi " + t + ", " + b.cst(o.start()) + " : index");
            String hi = b.op("arith.minsi " + last + ", " + b.cst(l - 1) + " : index");
            String lo;
            if (o.window() > 0)
                lo = b.op("arith.maxsi " + b.op("arith.subi " + last + ", " + b.cst(o.window() - 1) + " : index") + ", " + b.cst(0) + " : index");
            else if (o.chunk() > 0)
                lo = b.op("arith.muli " + b.op("arith.divui " + last + ", " + b.cst(o.chunk()) + " : index") + ", " + b.cst(o.chunk()) + " : index");
            else lo = b.cst(0);
            String ge = b.op("arith.cmpi sge, " + j + ", " + lo + " : index");
            String le = b.op("arith.cmpi sle, " + j + ", " + hi + " : index");
            return b.op("arith.andi " + ge + ", " + le + " : i1");
        }

        /** dot[b, c, g, t, j] = q·k over the head width: [B, KV, G, T, L] (unmasked). */
        private V dots(V q, V k, AttnOpts o) {
            V qb = queries(q, o), kt = keys(k, o, true);
            V s = bmm(qb, kt);
            Shape qs = q.type().shape();
            int r = qs.rank();
            return reshape(fresh("dots"), s, Shape.of(qs.prefix(r - 2).vol(), o.kvHeads(), o.heads() / o.kvHeads(), qs.dim(r - 2), kt.type().shape().dim(2)));
        }

        /** sinks [H] as [KV, G]. */
        private V sinks2(V s, AttnOpts o) { return reshape(fresh("sinks"), s, Shape.of(o.kvHeads(), o.heads() / o.kvHeads())); }

        /** The probabilities [B, KV, G, T, L] (0 where not attended) and, with sinks, the sink shares [B, KV, G, T]. */
        private V[] probs(V q, V k, Optional<V> sinks, AttnOpts o) {
            V sc = scores(q, k, o);
            TensorType st = sc.type();
            DType d = st.dtype();
            String e = el(d);
            long l = st.shape().dim(4);
            V m = reduce(fresh("rowmax"), List.of(sc), List.of(), 4, d, Double.NEGATIVE_INFINITY,
                    (b, a) -> List.of(b.op("arith.maximumf " + a.get(0) + ", " + a.get(1) + " : " + e)));
            TensorType rt = m.type();
            Optional<V> s2 = sinks.map(s -> sinks2(s, o));
            if (s2.isPresent())
                m = generic(fresh("rowmax"), 4, Set.of(), List.of(new Operand(m, full(4)), new Operand(s2.get(), "d1, d2")),
                        List.of(new Operand(new V(empty(rt), rt), full(4))),
                        (b, a) -> List.of(b.op("arith.maximumf " + a.get(0) + ", " + a.get(1) + " : " + e)));
            V mm = m;
            V ex = overRows(fresh("exps"), st, List.of(sc), List.of(mm), List.of(), 4, (b, a) -> {
                String v = b.op("math.exp " + b.op("arith.subf " + a.get(0) + ", " + a.get(1) + " : " + e) + " : " + e);
                return List.of(b.op("arith.select " + attended(b, b.index(3), b.index(4), o, l) + ", " + v + ", " + b.cst(d, 0) + " : " + e));
            });
            V z = reduce(fresh("denom"), List.of(ex), List.of(), 4, d, 0, (b, a) -> List.of(add(b, d, a.get(1), a.get(0))));
            if (s2.isPresent())
                z = generic(fresh("denom"), 4, Set.of(), List.of(new Operand(z, full(4)), new Operand(mm, full(4)), new Operand(s2.get(), "d1, d2")),
                        List.of(new Operand(new V(empty(rt), rt), full(4))), (b, a) -> List.of(add(b, d, a.get(0),
                                b.op("math.exp " + b.op("arith.subf " + a.get(2) + ", " + a.get(1) + " : " + e) + " : " + e))));
            V zz = z;
            V p = overRows(fresh("p"), st, List.of(ex), List.of(zz), List.of(), 4, (b, a) -> {
                String pos = b.op("arith.cmpf ogt, " + a.get(1) + ", " + b.cst(d, 0) + " : " + e);
                return List.of(b.op("arith.select " + pos + ", " + div(b, d, a.get(0), a.get(1)) + ", " + b.cst(d, 0) + " : " + e));
            });
            V share = null;
            if (s2.isPresent())
                share = generic(fresh("share"), 4, Set.of(), List.of(new Operand(zz, full(4)), new Operand(mm, full(4)), new Operand(s2.get(), "d1, d2")),
                        List.of(new Operand(new V(empty(rt), rt), full(4))), (b, a) -> List.of(div(b, d,
                                b.op("math.exp " + b.op("arith.subf " + a.get(2) + ", " + a.get(1) + " : " + e) + " : " + e), a.get(0))));
            return new V[] {p, share, mm, zz};
        }

        /** The scores α q·k (softcapped) [B, KV, G, T, L], −inf where row t does not attend key j. */
        private V scores(V q, V k, AttnOpts o) {
            V dot = dots(q, k, o);
            TensorType st = dot.type();
            DType d = st.dtype();
            String e = el(d);
            long l = st.shape().dim(4), hd = q.type().shape().dim(q.type().rank() - 1) / o.heads();
            double alpha = o.alpha(hd), cap = o.softcap();          // rounded to the dtype when printed
            return elementwise(fresh("scores"), st, List.of(dot), (b, a) -> {
                String u = mul(b, d, a.getFirst(), b.cst(d, alpha));
                if (cap > 0) {
                    String c = b.cst(d, cap);
                    u = mul(b, d, c, b.op("math.tanh " + div(b, d, u, c) + " : " + e));
                }
                return List.of(b.op("arith.select " + attended(b, b.index(3), b.index(4), o, l) + ", " + u + ", " + b.cst(d, Double.NEGATIVE_INFINITY) + " : " + e));
            });
        }

        /** [B, KV, G, T, L] as [B·KV, G·T, L]. */
        private V batched(V p5) {
            Shape s = p5.type().shape();
            return reshape(fresh("probs"), p5, Shape.of(s.dim(0) * s.dim(1), s.dim(2) * s.dim(3), s.dim(4)));
        }

        V attention(String out, V q, V k, V v, Optional<V> sinks, AttnOpts o, TensorType t) {
            V p = probs(q, k, sinks, o)[0];
            return unqueries(out, bmm(batched(p), keys(v, o, false)), o, t);
        }

        /** lse = m + log(z) per row and head from the softmax's row maximum m and denominator z (sink included), σ++[T, H]. */
        V attentionLse(String out, V q, V k, Optional<V> sinks, AttnOpts o, TensorType t) {
            V[] ps = probs(q, k, sinks, o);
            V m = ps[2], z = ps[3];                                 // [B, KV, G, T]
            DType d = m.type().dtype();
            String e = el(d);
            V lse = elementwise(fresh("lse"), m.type(), List.of(m, z), (b, a) -> List.of(add(b, d, a.get(0), b.op("math.log " + a.get(1) + " : " + e))));
            return reshape(out, transpose(lse, 0, 3, 1, 2), t.shape());
        }

        /** exp(s − lse) at the attended pairs, +0.0 elsewhere, σ++[H, T, L] (lse σ++[T, H]). */
        V attentionExp(String out, V q, V k, V lse, AttnOpts o, TensorType t) {
            V sc = scores(q, k, o);
            Shape s5 = sc.type().shape();
            DType d = sc.type().dtype();
            String e = el(d);
            long l = s5.dim(4);
            V l4 = transpose(reshape(fresh("lse"), lse, Shape.of(s5.dim(0), s5.dim(3), s5.dim(1), s5.dim(2))), 0, 2, 3, 1);   // [B, KV, G, T]
            V ex = overRows(fresh("exps"), sc.type(), List.of(sc), List.of(l4), List.of(), 4, (b, a) -> {
                String v = b.op("math.exp " + b.op("arith.subf " + a.get(0) + ", " + a.get(1) + " : " + e) + " : " + e);
                return List.of(b.op("arith.select " + attended(b, b.index(3), b.index(4), o, l) + ", " + v + ", " + b.cst(d, 0) + " : " + e));
            });
            return reshape(out, ex, t.shape());
        }

        V attentionProduct(String out, V a, V b, AttnOpts o, AttentionProduct.Form form, TensorType t) {
            return switch (form) {
                case QK -> reshape(out, masked(dots(a, b, o), o), t.shape());          // q·k where attended, else +0.0
                case PK -> unqueries(out, bmm(batched(masked(probs5(a, o), o)), keys(b, o, false)), o, t);   // Σ_j p[t, j] k[j]
                case PQ -> {                                    // Σ_{g, t} p[t, j] q[t]: (masked p)ᵀ @ q per kv head
                    V pt = transpose(batched(masked(probs5(a, o), o)), 0, 2, 1);
                    V y = bmm(pt, queries(b, o));              // [B·KV, L, hd]
                    Shape s = t.shape();
                    int r = s.rank();
                    long bsz = s.prefix(r - 2).vol(), l = s.dim(r - 2), kv = o.kvHeads(), hd = s.dim(r - 1) / kv;
                    V y4 = reshape(fresh("keys"), y, Shape.of(bsz, kv, l, hd));
                    yield reshape(out, transpose(y4, 0, 2, 1, 3), s);
                }
            };
        }

        // ---- indexing: a bounds check first, then the read or write

        /** AND-reduces 0 ≤ i &lt; bound over {@code idx} and asserts it: {@code <op> index out of bounds}. */
        V checked(V idx, long bound, String op) {
            int r = idx.type().rank();
            Set<Integer> all = new HashSet<>();
            for (int i = 0; i < r; i++) all.add(i);
            TensorType flag = new TensorType(DType.I1, Shape.of(), idx.type().placement());
            V ok = generic(fresh("inbounds"), r, all, List.of(new Operand(idx, full(r))), List.of(new Operand(filled(flag, 1), "")), (b, a) -> {
                String ge = b.op("arith.cmpi sge, " + a.get(0) + ", " + b.cst(DType.I64, 0) + " : i64");
                String lt = b.op("arith.cmpi slt, " + a.get(0) + ", " + b.cst(DType.I64, bound) + " : i64");
                return List.of(b.op("arith.andi " + a.get(1) + ", " + b.op("arith.andi " + ge + ", " + lt + " : i1") + " : i1"));
            });
            String v = fresh("ok");
            line(v + " = tensor.extract " + ok.ssa() + "[] : tensor<i1>");
            line("cf.assert " + v + ", \"" + op + " index out of bounds\"");
            return idx;
        }

        V gather(String out, V values, V idx, TensorType t) {
            checked(idx, values.type().shape().dim(0), "gather");
            int r = t.rank();
            return generic(out, r, Set.of(), List.of(new Operand(idx, dimList(r - 1))), List.of(new Operand(new V(empty(t), t), full(r))), (b, a) -> {
                String row = b.op("arith.index_cast " + a.get(0) + " : i64 to index");
                return List.of(b.op("tensor.extract " + values.ssa() + "[" + row + ", " + b.index(r - 1) + "] : " + ty(values.type())));
            });
        }

        V takeAlongAxis(String out, V values, V idx, int axis, TensorType t) {
            checked(idx, values.type().shape().dim(axis), "take_along_axis");
            int r = t.rank();
            return generic(out, r, Set.of(), List.of(new Operand(idx, full(r))), List.of(new Operand(new V(empty(t), t), full(r))), (b, a) -> {
                List<String> at = new ArrayList<>();
                for (int k = 0; k <= r; k++)
                    at.add(k < axis ? b.index(k) : k == axis ? b.op("arith.index_cast " + a.get(0) + " : i64 to index") : b.index(k - 1));
                return List.of(b.op("tensor.extract " + values.ssa() + "[" + String.join(", ", at) + "] : " + ty(values.type())));
            });
        }

        /** table with row ids[k] replaced by rows[k]: over (v, d, k), k a reduction that selects. */
        V setRows(String out, V table, V ids, V rows) {
            checked(ids, table.type().shape().dim(0), "set_rows");
            DType d = table.type().dtype();
            return generic(out, 3, Set.of(2), List.of(new Operand(ids, "d2"), new Operand(rows, "d2, d1")),
                    List.of(new Operand(table, "d0, d1")), (b, a) -> {
                        String v = b.op("arith.index_cast " + b.index(0) + " : index to i64");
                        String hit = b.op("arith.cmpi eq, " + a.get(0) + ", " + v + " : i64");
                        return List.of(b.op("arith.select " + hit + ", " + a.get(1) + ", " + a.get(2) + " : " + el(d)));
                    });
        }

        /** Bounds, σ flattened to N, a zero [V, D], out[v, d] += (ids[n] == v) ? upd[n, d] : 0. */
        V scatterAdd(String out, V upd, V idx, TensorType dest) {
            checked(idx, dest.shape().dim(0), "scatter_add");
            int s = idx.type().rank();
            long n = idx.type().shape().vol(), dd = dest.shape().dim(1);
            V flatIdx = idx, flatUpd = upd;
            if (s >= 2) {
                flatIdx = collapse(idx, "[" + range(0, s) + "]", idx.type().withShape(Shape.of(n)));
                flatUpd = collapse(upd, "[" + range(0, s) + ", [" + s + "]]", upd.type().withShape(Shape.of(n, dd)));
            }
            DType d = dest.dtype();
            // kina.scatter: the schedule interchanges the loops to (v, n, d), so the innermost runs along d
            return genericAll(out, 3, Set.of(2), List.of(new Operand(flatIdx, "d2"), new Operand(flatUpd, "d2, d1")),
                    List.of(new Operand(filled(dest, 0), "d0, d1")), ", kina.scatter", (b, a) -> {
                        String v = b.op("arith.index_cast " + b.index(0) + " : index to i64");
                        String hit = b.op("arith.cmpi eq, " + a.get(0) + ", " + v + " : i64");
                        String add = b.op("arith.select " + hit + ", " + a.get(1) + ", " + b.cst(d, 0) + " : " + el(d));
                        return List.of(add(b, d, a.get(2), add));
                    }).getFirst();
        }

        /** Bounds, then over dest σ: (indices == index axis) ? update : 0. */
        V scatterAlongAxis(String out, int axis, V upd, V idx, TensorType dest) {
            checked(idx, dest.shape().dim(axis), "scatter_along_axis");
            int r = dest.rank();
            DType d = dest.dtype();
            return generic(out, r, Set.of(), List.of(new Operand(upd, drop(r, axis)), new Operand(idx, drop(r, axis))),
                    List.of(new Operand(new V(empty(dest), dest), full(r))), (b, a) -> {
                        String c = b.op("arith.index_cast " + b.index(axis) + " : index to i64");
                        String hit = b.op("arith.cmpi eq, " + a.get(1) + ", " + c + " : i64");
                        return List.of(b.op("arith.select " + hit + ", " + a.get(0) + ", " + b.cst(d, 0) + " : " + el(d)));
                    });
        }

        /** {@code [0, 1, …]} groups of one dim each: "[0, 1, 2]" as a reassociation group for dims [from, to). */
        private static String range(int from, int to) {
            List<String> g = new ArrayList<>();
            for (int i = from; i < to; i++) g.add(Integer.toString(i));
            return "[" + String.join(", ", g) + "]";
        }
    }

    /** A generic's body: ops with fresh names from the function's counter. */
    private static final class Body {
        private final FnEmitter f;
        final StringBuilder sb = new StringBuilder();

        Body(FnEmitter f) { this.f = f; }

        String op(String rhs) {
            String n = f.fresh("b");
            sb.append(IND).append("  ").append(n).append(" = ").append(rhs).append('\n');
            return n;
        }

        String cst(DType d, double v) { return op(constant(d, v)); }

        String cst(long v) { return op("arith.constant " + v + " : index"); }

        String index(int dim) { return op("linalg.index " + dim + " : index"); }
    }

    // ---- indexing maps ------------------------------------------------------------------------

    private static String dimList(int n) {
        List<String> d = new ArrayList<>();
        for (int i = 0; i < n; i++) d.add("d" + i);
        return String.join(", ", d);
    }

    private static String full(int r) { return dimList(r); }

    private static String drop(int r, int axis) {
        List<String> d = new ArrayList<>();
        for (int i = 0; i < r; i++) if (i != axis) d.add("d" + i);
        return String.join(", ", d);
    }
}
