package kina.mlir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import kina.ir.Block;
import kina.ir.DType;
import kina.ir.Let;
import kina.ir.Program;
import kina.ir.Rhs;
import kina.ir.TensorType;
import kina.ir.Type;
import kina.ir.Var;

/**
 * The C header of a shared object that {@link Toolchain#build} made: what a C or C++ host needs to
 * call {@code kina_call} with no JVM. It states the calling convention (memref descriptors of the
 * inputs, then of the outputs, through one pointer array), names every input and output with its
 * dtype and shape (as a comment, as {@code #define}s, and as a table a generic host can walk),
 * declares a descriptor struct per rank the entry uses and a helper that fills any descriptor, and
 * checks indices before a call: the object itself {@code cf.assert}s every index it reads, which
 * prints a line and aborts the process, so {@code PREFIX_check_indices} checks the index inputs
 * first, as the JVM host does ({@link IndexChecks}), and answers {@code KINA_ERR_INDEX} instead.
 * docs/native.md explains the header and shows a host.
 *
 * <p>Every name is prefixed with the header's prefix (lower case for functions, upper case for
 * macros), so the headers of several programs can be included in one translation unit; the types
 * common to all of them ({@code kina_arg}, {@code kina_memref_2d}, …) are guarded.
 */
public final class CHeader {
    private CHeader() {}

    /** The alignment the header asks of every buffer, in bytes. */
    static final int ALIGNMENT = 64;

    /** One argument of {@code kina_call}: its argv index, name, C name (upper case), and type. */
    private record Arg(int argv, String name, String macro, TensorType type, boolean output) {}

    /**
     * A C identifier made from a header's file name: {@code step.h} gives {@code step},
     * {@code my-lib.h} {@code my_lib}, {@code 2.h} {@code k2}.
     */
    public static String prefix(Path header) {
        String stem = header.getFileName().toString().replaceFirst("\\.(h|hpp|hh)$", "");
        String id = stem.replaceAll("[^A-Za-z0-9_]", "_").toLowerCase(Locale.ROOT);
        return id.isEmpty() || !Character.isLetter(id.charAt(0)) ? "k" + id : id;
    }

    /**
     * The header of the object built from {@code p}.
     *
     * @param p      the program after transform_ad, as it was emitted: its result names the outputs
     *               (a tuple of lets by their names, {@code out<k>} for a value without one), and its
     *               indexing instructions give the index checks
     * @param entry  the entry {@link Emitter#emit} made of p
     * @param prefix a C identifier ({@link #prefix})
     * @param object the shared object's file name and {@code source} the program's, for the comment
     */
    public static String of(Program p, Emitter.Entry entry, String prefix, String object, String source) {
        List<Arg> args = args(p, entry);
        String lo = prefix.toLowerCase(Locale.ROOT), up = prefix.toUpperCase(Locale.ROOT);
        String checkable;
        List<IndexChecks.Check> checks;
        try {
            checks = dedupe(IndexChecks.of(p));
            checkable = null;
        } catch (MlirError e) {
            checks = List.of();
            checkable = e.getMessage();
        }
        StringBuilder b = new StringBuilder();
        comment(b, lo, up, object, source, entry, args, checks, checkable);
        String guard = up + "_KINA_H";
        b.append("#ifndef ").append(guard).append("\n#define ").append(guard).append("\n\n");
        b.append("#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n\n");
        b.append("#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
        b.append(CHeaderText.COMMON);
        Set<Integer> ranks = new TreeSet<>();
        for (Arg a : args) ranks.add(a.type().rank());
        for (int r : ranks) b.append(CHeaderText.memref(r));
        macros(b, up, entry, args);
        table(b, lo, up, args);
        if (checkable == null) checks(b, lo, up, args, checks);
        b.append("#ifdef __cplusplus\n}\n#endif\n\n#endif /* ").append(guard).append(" */\n");
        return b.toString();
    }

    // ---- the arguments and their names ------------------------------------------------------------

    private static List<Arg> args(Program p, Emitter.Entry entry) {
        List<Arg> args = new ArrayList<>();
        Set<String> taken = new HashSet<>();
        int i = 0;
        for (Emitter.Arg a : entry.inputs()) {
            args.add(new Arg(i, a.name(), macro("IN_", a.name(), i, a.type().rank(), taken), a.type(), false));
            i++;
        }
        List<String> names = outputNames(p.body(), entry.outputs().size());
        for (int k = 0; k < names.size(); k++, i++)
            args.add(new Arg(i, names.get(k), macro("OUT_", names.get(k), i, entry.outputs().get(k).rank(), taken), entry.outputs().get(k), true));
        return args;
    }

    /**
     * The flattened result's names: a tuple's elements in order, each a let's name; the value of a
     * call without a name of its own (a tuple, or a parser temporary such as a handle's) named as
     * the callee's body names its result; else a let's name, {@code out<k>} for a parser temporary.
     * Repeated names get their index appended; a count that differs from the entry's gives
     * {@code out<k>} throughout.
     */
    static List<String> outputNames(Block top, int n) {
        List<String> names = new ArrayList<>();
        collect(top, top.result(), names);
        if (names.size() != n) {
            names.clear();
            for (int k = 0; k < n; k++) names.add("out" + k);
        }
        Set<String> seen = new HashSet<>();
        for (int k = 0; k < n; k++) if (!seen.add(names.get(k))) names.set(k, names.get(k) + "_" + k);
        return names;
    }

    private static void collect(Block b, Var v, List<String> out) {
        Let l = b.binding(v);
        boolean whole = l != null && !l.destructure();
        if (whole && l.rhs() instanceof Rhs.Tuple(var elems)) {
            for (Var e : elems) collect(b, e, out);
        } else if (whole && (v.temporary() || l.type() instanceof Type.Tuple) && l.rhs() instanceof Rhs.Call(var fn, var ignored)
                   && b.binding(fn) != null && b.binding(fn).rhs() instanceof Rhs.Fn callee) {
            collect(callee.body(), callee.body().result(), out);
        } else if (whole && l.type() instanceof Type.Tuple tu) {
            for (int i = 0; i < tu.elems().size(); i++) out.add(v.temporary() ? "out" + out.size() : v.name() + "_" + i);
        } else {
            out.add(v.temporary() ? "out" + out.size() : v.name());
        }
    }

    /**
     * The macro stem of an argument ({@code IN_IDS}); made unique against every macro already
     * generated (the stem, its _RANK, _DIMi, _ELEMENTS, _DTYPE) by appending the argv index.
     */
    private static String macro(String kind, String name, int argv, int rank, Set<String> taken) {
        String stem = kind + name.replaceAll("[^A-Za-z0-9_]", "_").toUpperCase(Locale.ROOT);
        while (true) {
            List<String> all = new ArrayList<>(List.of(stem, stem + "_RANK", stem + "_ELEMENTS", stem + "_DTYPE"));
            for (int d = 0; d < rank; d++) all.add(stem + "_DIM" + d);
            if (all.stream().noneMatch(taken::contains)) {
                taken.addAll(all);
                return stem;
            }
            stem = stem + "_" + argv;
        }
    }

    /** One check per (input, bound): the first instruction that reads it names it. */
    private static List<IndexChecks.Check> dedupe(List<IndexChecks.Check> checks) {
        Map<String, IndexChecks.Check> m = new LinkedHashMap<>();
        for (IndexChecks.Check c : checks) m.putIfAbsent(c.input() + "\u0000" + c.bound(), c);
        return List.copyOf(m.values());
    }

    // ---- the text ---------------------------------------------------------------------------------

    private static void comment(StringBuilder b, String lo, String up, String object, String source, Emitter.Entry entry,
                                List<Arg> args, List<IndexChecks.Check> checks, String checkable) {
        int ni = entry.inputs().size(), no = entry.outputs().size();
        b.append("/* The C interface of ").append(safe(object)).append(", built by `kina compile` from ").append(safe(source)).append(".\n");
        b.append(" *\n");
        b.append(" *     void kina_call(void **argv);\n");
        b.append(" *\n");
        b.append(" * argv holds ").append(up).append("_ARGS pointers to memref descriptors: the ").append(ni).append(" inputs' first (")
                .append(up).append("_INPUTS),\n");
        b.append(" * then the ").append(no).append(" outputs' (").append(up).append("_OUTPUTS), in the order listed below; ").append(up)
                .append("_IN_<NAME>\n");
        b.append(" * and ").append(up).append("_OUT_<NAME> are these argv indices. The ABI (docs/native.md in kina):\n");
        for (String line : CHeaderText.ABI) b.append(" *  ").append(line).append('\n');
        b.append(" *\n * Inputs:\n");
        for (Arg a : args) {
            if (a.argv() == ni) b.append(" *\n * Outputs:\n");
            b.append(String.format(Locale.ROOT, " *   %4d  %-24s %-4s %s%n", a.argv(), safe(a.name()), a.type().dtype(), a.type().shape()));
        }
        b.append(" *\n * Index checks: ");
        if (checkable != null) {
            b.append("none can be made before the call, so an index out of range aborts the process:\n *   ")
                    .append(safe(checkable)).append('\n');
        } else if (checks.isEmpty()) {
            b.append("none (the program reads no index); ").append(lo).append("_check_indices answers KINA_OK.\n");
        } else {
            b.append(lo).append("_check_indices(argv, &err) checks, before a call, every index the program reads:\n");
            for (IndexChecks.Check c : checks)
                b.append(" *   ").append(safe(c.input())).append(" in [0, ").append(c.bound()).append("), read by ").append(c.op())
                        .append(" at let ").append(safe(c.at().displayName())).append(" (").append(safe(c.at().pos().toString())).append(")\n");
        }
        b.append(" */\n\n");
    }

    private static void macros(StringBuilder b, String up, Emitter.Entry entry, List<Arg> args) {
        b.append("#define ").append(up).append("_INPUTS ").append(entry.inputs().size()).append('\n');
        b.append("#define ").append(up).append("_OUTPUTS ").append(entry.outputs().size()).append('\n');
        b.append("#define ").append(up).append("_ARGS ").append(args.size()).append("\n\n");
        for (Arg a : args) {
            String m = up + "_" + a.macro();
            TensorType t = a.type();
            b.append("/* ").append(a.output() ? "output " : "input ").append(safe(a.name())).append(": ").append(t.dtype()).append(' ')
                    .append(t.shape()).append(" */\n");
            b.append("#define ").append(m).append(' ').append(a.argv()).append('\n');
            b.append("#define ").append(m).append("_DTYPE ").append(dtype(t.dtype())).append('\n');
            b.append("#define ").append(m).append("_RANK ").append(t.rank()).append('\n');
            for (int d = 0; d < t.rank(); d++) b.append("#define ").append(m).append("_DIM").append(d).append(' ').append(t.shape().dim(d)).append('\n');
            b.append("#define ").append(m).append("_ELEMENTS ").append(t.shape().vol()).append('\n');
        }
        b.append('\n');
    }

    private static void table(StringBuilder b, String lo, String up, List<Arg> args) {
        b.append("/* Every argument in argv order: ").append(lo).append("_args()[").append(up).append("_IN_X] describes input X. */\n");
        b.append("static inline const kina_arg *").append(lo).append("_args(void) {\n");
        for (Arg a : args)
            if (a.type().rank() > 0) {
                List<String> dims = new ArrayList<>();
                for (long d : a.type().shape().dims()) dims.add(Long.toString(d));
                b.append("    static const int64_t s").append(a.argv()).append("[] = {").append(String.join(", ", dims)).append("};\n");
            }
        b.append("    static const kina_arg args[").append(args.size()).append("] = {\n");
        for (Arg a : args) {
            TensorType t = a.type();
            b.append("        {").append(string(a.name())).append(", ").append(a.output() ? 1 : 0).append(", ").append(dtype(t.dtype()))
                    .append(", ").append(t.rank()).append(", ").append(t.rank() > 0 ? "s" + a.argv() : "NULL").append(", ")
                    .append(t.shape().vol()).append(", ").append(t.shape().vol() * bytes(t.dtype())).append("},\n");
        }
        b.append("    };\n    return args;\n}\n\n");
    }

    private static void checks(StringBuilder b, String lo, String up, List<Arg> args, List<IndexChecks.Check> checks) {
        Map<String, Integer> argv = new LinkedHashMap<>();
        for (Arg a : args) if (!a.output()) argv.put(a.name(), a.argv());
        b.append("""
                /*
                 * KINA_OK when every index input is in range; else KINA_ERR_INDEX with the first index out
                 * of range in *err (err may be NULL). Reads the inputs' descriptors in argv; calls nothing.
                 */
                """);
        b.append("static inline int ").append(lo).append("_check_indices(void *const *argv, kina_index_error *err) {\n");
        if (checks.isEmpty()) {
            b.append("    (void)argv;\n    (void)err;\n    return KINA_OK;\n}\n\n");
        } else {
            b.append("    static const struct { int arg; int64_t bound; const char *op; const char *let; } checks[] = {\n");
            for (IndexChecks.Check c : checks)
                b.append("        {").append(argv.get(c.input())).append(", ").append(c.bound()).append(", ").append(string(c.op()))
                        .append(", ").append(string(c.at().displayName() + " (" + c.at().pos() + ")")).append("},\n");
            b.append("    };\n");
            b.append("    for (size_t c = 0; c < sizeof checks / sizeof checks[0]; c++) {\n");
            b.append("        const int64_t *v = (const int64_t *)kina_memref_data(argv[checks[c].arg], KINA_I64);\n");
            b.append("        int64_t n = ").append(lo).append("_args()[checks[c].arg].elements;\n");
            b.append("        for (int64_t i = 0; i < n; i++)\n");
            b.append("            if (v[i] < 0 || v[i] >= checks[c].bound) {\n");
            b.append("                if (err) {\n");
            b.append("                    err->arg = checks[c].arg;\n                    err->element = i;\n                    err->value = v[i];\n");
            b.append("                    err->bound = checks[c].bound;\n                    err->op = checks[c].op;\n                    err->let = checks[c].let;\n");
            b.append("                }\n                return KINA_ERR_INDEX;\n            }\n    }\n    return KINA_OK;\n}\n\n");
        }
        b.append("/* ").append(lo).append("_check_indices, then call(argv) when it answers KINA_OK; its answer. */\n");
        b.append("static inline int ").append(lo).append("_call_checked(kina_call_fn call, void **argv, kina_index_error *err) {\n");
        b.append("    int rc = ").append(lo).append("_check_indices(argv, err);\n");
        b.append("    if (rc != KINA_OK) return rc;\n    call(argv);\n    return KINA_OK;\n}\n\n");
    }

    private static String dtype(DType d) { return "KINA_" + d.spelling(); }

    /** Bytes per element in the object's buffers. */
    static long bytes(DType d) {
        return switch (d) {
            case F32 -> 4;
            case F64, I64 -> 8;
            case I1 -> 1;
            case BF16, F16, F8E4M3, F8E5M2 -> throw new MlirError("the native engine runs F32, F64, I64 and I1 tensors, not " + d);
        };
    }

    /** A C string literal. */
    static String string(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (byte x : s.getBytes(java.nio.charset.StandardCharsets.UTF_8)) {
            int ch = x & 0xff;
            if (ch == '"' || ch == '\\') b.append('\\').append((char) ch);
            else if (ch >= 0x20 && ch < 0x7f && ch != '?') b.append((char) ch);      // '?' could start a trigraph
            else b.append(String.format(Locale.ROOT, "\\%03o", ch));
        }
        return b.append('"').toString();
    }

    /** Text safe inside a C comment: no comment end, printable ASCII. */
    private static String safe(String s) {
        return s.replace("*/", "* /").replaceAll("[^\\x20-\\x7e]", "?");
    }
}
