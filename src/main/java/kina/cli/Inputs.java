package kina.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kina.eval.Tensor;
import kina.io.FileCap;
import kina.io.Npy;
import kina.io.TensorJson;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.KinaException;
import kina.ir.Let;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Var;

/**
 * The inputs of a program, by name: every input let ({@code let x = tensor<…> in}, at any depth),
 * and the parameters of the fn a program ends in. Loads them from .npy / .json files, or makes
 * random ones: floats uniform in [-1, 1), indices uniform in [0, bound) where bound is the size
 * of the axis they index (rows of a gather's values, the class axis of take_along_axis).
 */
final class Inputs {
    private Inputs() {}

    /** Input lets by name, in program order. */
    static Map<String, TensorType> declared(Program p) {
        Map<String, TensorType> m = new LinkedHashMap<>();
        collect(p.body(), m);
        return m;
    }

    private static void collect(Block b, Map<String, TensorType> m) {
        for (Let l : b.lets()) {
            if (l.rhs() instanceof Instr.Input in) m.put(l.var().name(), in.type());
            if (l.rhs() instanceof Rhs.Fn fn) collect(fn.body(), m);
        }
    }

    /** Reads {@code NAME=PATH} as a tensor of the declared type; a file over {@code cap} is refused. */
    static Tensor load(String name, Path path, TensorType expected, FileCap cap) {
        if (!Files.exists(path)) throw new KinaException(null, "--input " + name + "=" + path + ": no such file");
        String f = path.getFileName().toString().toLowerCase(java.util.Locale.ROOT);
        if (f.endsWith(".npy")) return Npy.read(path, expected, cap);
        if (f.endsWith(".json")) return TensorJson.read(path, expected, cap);
        throw new KinaException(null, "--input " + name + "=" + path + ": unknown format (use .npy or .json)");
    }

    /**
     * A random tensor of type {@code t} for input {@code name}; {@code bound} is the index range for
     * I64 (≥ 1). A dtype the host does not run (BF16, F16, F8) is a one-line KinaException.
     */
    static Tensor random(String name, TensorType t, long bound, SplittableRandom rng) {
        if (!t.dtype().hostRunnable())
            throw new KinaException(null, "--random-inputs: input " + name + " is " + t + ", and the host interpreter runs F32, F64, I64 and I1 only; "
                    + t.dtype() + " programs type-check, print and plan, but run them on the host written in F32 or F64");
        int n = Math.toIntExact(t.shape().vol());
        if (t.dtype().floating()) {
            double[] d = new double[n];
            for (int i = 0; i < n; i++) d[i] = rng.nextDouble() * 2 - 1;
            return Tensor.ofFloats(t, d);
        }
        long[] l = new long[n];
        long hi = t.dtype() == DType.I1 ? 2 : Math.max(1, bound);
        for (int i = 0; i < n; i++) l[i] = rng.nextLong(hi);
        return Tensor.ofInts(t, l);
    }

    /**
     * For each discrete input name, the smallest size of an axis it indexes anywhere (following
     * call and handle arguments into fn parameters); absent when it indexes nothing.
     */
    static Map<String, Long> indexBounds(Program p) {
        Map<String, Long> out = new HashMap<>();
        Map<Var, Rhs.Fn> fns = new HashMap<>();
        bounds(p.body(), fns, new HashMap<>(), out, null);
        return out;
    }

    /** Walks a block; {@code alias} maps a var of this block to the input name it stands for. */
    private static void bounds(Block b, Map<Var, Rhs.Fn> fns, Map<Var, String> alias, Map<String, Long> out,
                               Map<Var, TensorType> outerTypes) {
        Map<Var, TensorType> types = new HashMap<>();
        if (outerTypes != null) types.putAll(outerTypes);
        Map<Var, Rhs.Fn> scopeFns = new HashMap<>(fns);
        for (Let l : b.lets()) {
            if (l.rhs() instanceof Instr.Input) alias.put(l.var(), l.var().name());
            if (!l.destructure() && l.type() instanceof TensorType t) types.put(l.var(), t);
            switch (l.rhs()) {
                case Rhs.Fn fn -> scopeFns.put(l.var(), fn);
                case Instr.Gather(var values, var ids) -> note(alias.get(ids), types.get(values) == null ? -1 : types.get(values).shape().dim(0), out);
                case Instr.TakeAlongAxis(var values, var ids, var axis) ->
                        note(alias.get(ids), types.get(values) == null ? -1 : types.get(values).shape().dim(axis), out);
                case Rhs.Call c -> into(scopeFns.get(c.fn()), c.args(), alias, scopeFns, out);
                case Rhs.Handle h -> into(scopeFns.get(h.fn()), h.args(), alias, scopeFns, out);
                default -> { }
            }
        }
    }

    private static void into(Rhs.Fn fn, List<Var> args, Map<Var, String> alias, Map<Var, Rhs.Fn> fns, Map<String, Long> out) {
        if (fn == null) return;
        Map<Var, String> inner = new HashMap<>();
        Map<Var, TensorType> types = new HashMap<>();
        for (int i = 0; i < args.size() && i < fn.params().size(); i++) {
            String a = alias.get(args.get(i));
            if (a != null) inner.put(fn.params().get(i).name(), a);
            types.put(fn.params().get(i).name(), fn.params().get(i).type());
        }
        bounds(fn.body(), fns, inner, out, types);
    }

    private static void note(String name, long bound, Map<String, Long> out) {
        if (name == null || bound < 1) return;
        out.merge(name, bound, Math::min);
    }
}
