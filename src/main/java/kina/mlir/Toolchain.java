package kina.mlir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The LLVM 19 tools (Debian {@code mlir-19-tools}, {@code clang-19}): validating emitted MLIR with
 * {@code mlir-opt-19}, and building a module into a shared object: {@code mlir-opt-19} (the
 * lowering pipeline below), {@code mlir-translate-19 --mlir-to-llvmir}, {@code clang-19 -O3
 * -march=native -shared}, with a little generated LLVM IR ({@code kina_call}) that takes every
 * memref descriptor through one pointer array, so that a call needs one argument however many
 * inputs and outputs the entry has.
 *
 * <p>Built objects are cached by content: the SHA-256 of the module text, the pipeline, the flags,
 * the tools' version and the CPU, under {@code $KINA_CACHE} (default {@code $XDG_CACHE_HOME/kina},
 * else {@code ~/.cache/kina}) in {@code native/}; a build writes a temporary file and renames it into
 * place, so a reader never sees half an object.
 */
public final class Toolchain {
    private Toolchain() {}

    /** The three tools, by path. */
    public record Tools(Path mlirOpt, Path mlirTranslate, Path clang) {}

    /** The install hint printed with a missing tool. */
    public static final String INSTALL = "apt-get install -y --no-install-recommends mlir-19-tools clang-19";

    private static final String[] NAMES = {"mlir-opt", "mlir-translate", "clang"};

    /** The tools on PATH ({@code mlir-opt-19}, …) or in /usr/lib/llvm-19/bin; empty when one is missing. */
    public static Optional<Tools> find() {
        Path[] found = new Path[3];
        for (int i = 0; i < 3; i++) {
            found[i] = onPath(NAMES[i] + "-19");
            if (found[i] == null) {
                Path p = Path.of("/usr/lib/llvm-19/bin", NAMES[i]);
                if (Files.isExecutable(p)) found[i] = p;
            }
            if (found[i] == null) return Optional.empty();
        }
        return Optional.of(new Tools(found[0], found[1], found[2]));
    }

    /** The tools, or an MlirError naming what to install. */
    public static Tools require() {
        return find().orElseThrow(() -> new MlirError("the native build needs mlir-opt-19, mlir-translate-19 and clang-19 "
                + "(not found on PATH or in /usr/lib/llvm-19/bin; install them: " + INSTALL + ")"));
    }

    private static Path onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) return null;
        for (String dir : path.split(java.io.File.pathSeparator)) {
            if (dir.isEmpty()) continue;
            Path p = Path.of(dir, name);
            if (Files.isExecutable(p)) return p;
        }
        return null;
    }

    /** What a tool run gave: exit status and its standard error. */
    public record Outcome(int rc, String stderr) {}

    /** Runs {@code mlir-opt-19} on {@code text} (parse and verify only). */
    public static Outcome verify(Tools t, String text) {
        try {
            Path dir = Files.createTempDirectory("kina-verify");
            try {
                Path in = dir.resolve("module.mlir");
                Files.writeString(in, text, StandardCharsets.UTF_8);
                return exec(List.of(t.mlirOpt().toString(), in.toString(), "-o", "/dev/null"), dir);
            } finally {
                deleteTree(dir);
            }
        } catch (IOException e) {
            throw new MlirError("mlir-opt: cannot run (" + e.getMessage() + ")");
        }
    }

    /**
     * Runs {@code mlir-opt-19 --split-input-file} once on all of {@code modules} (joined by the
     * {@code // -----} separator): rc 0 when every one parses and verifies.
     */
    public static Outcome verifyAll(Tools t, List<String> modules) {
        try {
            Path dir = Files.createTempDirectory("kina-verify");
            try {
                Path in = dir.resolve("modules.mlir");
                Files.writeString(in, String.join("\n// -----\n", modules), StandardCharsets.UTF_8);
                return exec(List.of(t.mlirOpt().toString(), "--split-input-file", in.toString(), "-o", "/dev/null"), dir);
            } finally {
                deleteTree(dir);
            }
        } catch (IOException e) {
            throw new MlirError("mlir-opt: cannot run (" + e.getMessage() + ")");
        }
    }

    // ---- the build ------------------------------------------------------------------------------

    /**
     * The lowering: tile and vectorize the contractions ({@link Schedule}), bufferize across the
     * functions (the kina fns and the parts of long ones stay functions: see Emitter), then loops,
     * LLVM. Every pass is MLIR 19's own.
     */
    static String pipeline(Path schedule) {
        // No cse before eliminate-empty-tensors: merged tensor.empty ops with several users were all
        // replaced by the first result's destination (MLIR 19), so later ops overwrote that result.
        return "builtin.module(symbol-dce,canonicalize,func.func(linalg-fuse-elementwise-ops),canonicalize,"
                + (schedule != null ? "transform-preload-library{transform-library-paths=" + schedule + "},transform-interpreter,canonicalize," : "")
                + "func.func(eliminate-empty-tensors),"
                + "one-shot-bufferize{bufferize-function-boundaries=1 function-boundary-type-conversion=identity-layout-map},"
                + "drop-equivalent-buffer-results,buffer-results-to-out-params,cse,canonicalize,buffer-deallocation-pipeline,convert-bufferization-to-memref,convert-vector-to-scf{full-unroll=1},convert-linalg-to-loops,expand-strided-metadata,lower-affine,"
                + "convert-scf-to-cf,convert-vector-to-llvm,convert-ub-to-llvm,convert-math-to-llvm,convert-math-to-libm,"
                + "convert-arith-to-llvm,convert-index-to-llvm,finalize-memref-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,"
                + "reconcile-unrealized-casts)";
    }

    static final List<String> CLANG = List.of("-O3", "-march=native", "-shared", "-fPIC", "-Wno-override-module");

    /** Where a build says that it starts and how long it took (the kina command: stderr); none by default. */
    private static volatile java.util.function.Consumer<String> notices = _ -> { };

    /**
     * Sends the build's two lines to {@code to} (null: nowhere): one as a build starts, since a
     * StoryLM train step takes 30–70 s, and one when it is done. An object taken from the cache says nothing.
     */
    public static void notices(java.util.function.Consumer<String> to) {
        notices = to != null ? to : _ -> { };
    }

    /**
     * The shared object for {@code m}: from the cache, or built (and cached). Its exported function
     * {@code kina_call(void **descriptors)} calls the entry on the inputs' descriptors then the
     * outputs'.
     *
     * @throws MlirError when a tool is missing or a step fails (with its first error line)
     */
    public static Path build(Emitter.Module m) {
        Tools t = require();
        String sched = Schedule.text(m);
        String key = sha256(String.join("\n", "v1", m.text(), sched == null ? "" : sched, pipeline(Path.of("schedule.mlir")),
                String.join(" ", CLANG), glue(m.entry()), version(t), cpu()));
        Path dir = cacheDir();
        Path so = dir.resolve(key + ".so");
        if (Files.isRegularFile(so)) return so;
        long t0 = System.nanoTime();
        notices.accept("kina: building native code with mlir-opt-19, mlir-translate-19 and clang-19 (a StoryLM train step takes "
                + "30–70 s); the result is cached in " + dir + ", so the same program starts at once next time");
        try {
            Files.createDirectories(dir);
            Path work = Files.createTempDirectory(dir, "build-");
            try {
                Path in = work.resolve("module.mlir"), llvm = work.resolve("module.llvm.mlir"), ll = work.resolve("module.ll");
                Path glue = work.resolve("glue.ll"), out = work.resolve("lib.so");
                Files.writeString(in, m.text(), StandardCharsets.UTF_8);
                Files.writeString(glue, glue(m.entry()), StandardCharsets.UTF_8);
                Path schedule = null;
                if (sched != null) {
                    schedule = work.resolve("schedule.mlir");
                    Files.writeString(schedule, sched, StandardCharsets.UTF_8);
                }
                step("mlir-opt", List.of(t.mlirOpt().toString(), in.toString(), "--pass-pipeline=" + pipeline(schedule), "-o", llvm.toString()), work);
                step("mlir-translate", List.of(t.mlirTranslate().toString(), "--mlir-to-llvmir", llvm.toString(), "-o", ll.toString()), work);
                List<String> cc = new ArrayList<>(List.of(t.clang().toString()));
                cc.addAll(CLANG);
                cc.addAll(List.of(ll.toString(), glue.toString(), "-o", out.toString(), "-lm"));
                step("clang", cc, work);
                Files.move(out, so, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } finally {
                deleteTree(work);
            }
        } catch (IOException e) {
            throw new MlirError("native build in " + dir + ": " + e.getMessage());
        }
        notices.accept(String.format(java.util.Locale.ROOT, "kina: native code built in %.1f s", (System.nanoTime() - t0) / 1e9));
        return so;
    }

    /** {@code kina_call(argv)}: loads each descriptor pointer and calls {@code _mlir_ciface_kina_entry}. */
    static String glue(Emitter.Entry e) {
        int n = e.inputs().size() + e.outputs().size();
        StringBuilder b = new StringBuilder("; kina: one pointer array for every memref descriptor of the entry\n");
        List<String> ps = new ArrayList<>();
        for (int i = 0; i < n; i++) ps.add("ptr");
        b.append("declare void @_mlir_ciface_").append(Emitter.ENTRY).append('(').append(String.join(", ", ps)).append(")\n");
        b.append("define void @kina_call(ptr %argv) {\n");
        List<String> args = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            b.append("  %p").append(i).append(" = getelementptr inbounds ptr, ptr %argv, i64 ").append(i).append('\n');
            b.append("  %a").append(i).append(" = load ptr, ptr %p").append(i).append('\n');
            args.add("ptr %a" + i);
        }
        b.append("  call void @_mlir_ciface_").append(Emitter.ENTRY).append('(').append(String.join(", ", args)).append(")\n");
        b.append("  ret void\n}\n");
        return b.toString();
    }

    private static void step(String tool, List<String> cmd, Path dir) throws IOException {
        Outcome o = exec(cmd, dir);
        if (o.rc() != 0) {
            String first = o.stderr().lines().filter(l -> l.contains("error")).findFirst()
                    .orElse(o.stderr().lines().findFirst().orElse("exit status " + o.rc()));
            throw new MlirError("native build: " + tool + " failed: " + first.replace(dir + "/", ""));
        }
    }

    private static Outcome exec(List<String> cmd, Path dir) throws IOException {
        Path err = Files.createTempFile(dir, "stderr", ".txt");
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(err.toFile()).start();
        try {
            if (!p.waitFor(600, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new MlirError(cmd.getFirst() + ": no answer after 600 s");
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new MlirError(cmd.getFirst() + ": interrupted");
        }
        String text = Files.readString(err);
        Files.deleteIfExists(err);
        return new Outcome(p.exitValue(), text);
    }

    /** Where built objects are kept: {@code $KINA_CACHE/native}, else under the XDG cache or ~/.cache. */
    public static Path cacheDir() {
        String k = System.getenv("KINA_CACHE");
        if (k != null && !k.isBlank()) return Path.of(k, "native");
        String x = System.getenv("XDG_CACHE_HOME");
        Path base = x != null && !x.isBlank() ? Path.of(x) : Path.of(System.getProperty("user.home"), ".cache");
        return base.resolve("kina").resolve("native");
    }

    private static String version(Tools t) {
        try {
            Path dir = Files.createTempDirectory("kina-version");
            try {
                Path out = dir.resolve("v.txt");
                Process p = new ProcessBuilder(t.clang().toString(), "--version").redirectErrorStream(true).redirectOutput(out.toFile()).start();
                p.waitFor(60, TimeUnit.SECONDS);
                return Files.readString(out).lines().findFirst().orElse("?") + " " + t;
            } finally {
                deleteTree(dir);
            }
        } catch (IOException e) {
            return t.toString();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return t.toString();
        }
    }

    /** -march=native makes an object specific to the CPU: its model and flags are part of the key. */
    private static String cpu() {
        try {
            StringBuilder b = new StringBuilder(System.getProperty("os.arch"));
            for (String l : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (l.startsWith("model name") || l.startsWith("flags")) b.append('\n').append(l);
                if (l.isEmpty()) break;
            }
            return b.toString();
        } catch (IOException | RuntimeException e) {
            return System.getProperty("os.arch");
        }
    }

    static String sha256(String s) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) return;
        try (var s = Files.walk(dir)) {
            for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        }
    }
}
