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
 * inputs and outputs the entry has, and kina's allocator for the step's buffers ({@code alloc.c}: a
 * freed buffer is kept for the next allocation of its size, so a steady step neither calls malloc
 * nor faults pages in).
 *
 * <p>Built objects are cached by content: the SHA-256 of the module text, the schedule (its tiles
 * follow the host's vector width, {@link Schedule#vectorBits}), the pipeline, the flags, the
 * allocator, the tools' version and the CPU, under {@code $KINA_CACHE} (default {@code $XDG_CACHE_HOME/kina},
 * else {@code ~/.cache/kina}) in {@code native/}; a build writes a temporary file and renames it into
 * place, so a reader never sees half an object.
 */
public final class Toolchain {
    private Toolchain() {}

    /** The three tools, by path. */
    public record Tools(Path mlirOpt, Path mlirTranslate, Path clang) {}

    /** The install hint printed with a missing tool. */
    public static final String INSTALL = "apt-get install -y --no-install-recommends mlir-19-tools clang-19 libomp-19-dev";

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
    static String pipeline(Path schedule, boolean openmp) {
        // No linalg-fuse-elementwise-ops: the plan's fusions are one generic each already, and the
        // pass replaces a generic's destination by a new tensor when the body does not read it, which
        // undoes the writes of step results into their output buffers (Lowering#dest).
        // No cse before eliminate-empty-tensors: merged tensor.empty ops with several users were all
        // replaced by the first result's destination (MLIR 19), so later ops overwrote that result.
        // hoist-static-allocs: a func's result buffer is its caller's (no copy into an out-parameter);
        // it needs results that are neither arguments nor repeated (Lowering.Returns ensures both).
        // Canonicalize after cse as well: self-copies (memref.copy %x, %x) are left by a first
        // canonicalization and by cse; a later one removes them.
        // The polynomial approximations of exp, log, tanh (F32) leave loops without calls, which LLVM vectorizes.
        // OpenMP: the parallel loops (scf.forall) become omp.wsloop; memrefs go to LLVM before the
        // scf-to-cf conversion (else memref.alloca_scope meets more than one block).
        return "builtin.module(symbol-dce,canonicalize,"
                + "transform-preload-library{transform-library-paths=" + schedule + "},transform-interpreter,canonicalize,"
                + "func.func(eliminate-empty-tensors),"
                + "one-shot-bufferize{bufferize-function-boundaries=1 function-boundary-type-conversion=identity-layout-map},"
                + "drop-equivalent-buffer-results,buffer-results-to-out-params{hoist-static-allocs=1},canonicalize,canonicalize,cse,canonicalize,"
                + "buffer-deallocation-pipeline,convert-bufferization-to-memref,"
                + (openmp ? "scf-forall-to-parallel,convert-scf-to-openmp," : "scf-forall-to-for,")
                + "convert-vector-to-scf{full-unroll=1},convert-linalg-to-loops,expand-strided-metadata,lower-affine,"
                + (openmp ? "finalize-memref-to-llvm{use-generic-functions=1}," : "")
                + "convert-scf-to-cf,func.func(test-math-polynomial-approximation),"
                + "convert-vector-to-llvm,convert-ub-to-llvm,convert-math-to-llvm,convert-math-to-libm,convert-arith-to-llvm,"
                + "convert-index-to-llvm,lower-affine," + (openmp ? "convert-openmp-to-llvm," : "finalize-memref-to-llvm{use-generic-functions=1},")
                + "convert-func-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts)";
    }

    /**
     * Whether objects use threads: LLVM 19's OpenMP runtime is installed (Debian {@code libomp-19-dev})
     * and the system property {@code kina.native.openmp} is not {@code false}; then the step's
     * parallel loops run on threads, else the object runs on the calling thread.
     */
    static boolean openmp() {
        return !"false".equals(System.getProperty("kina.native.openmp")) && Files.isRegularFile(Path.of("/usr/lib/llvm-19/lib/libomp.so"));
    }

    static final List<String> CLANG = List.of("-O3", "-march=native", "-shared", "-fPIC", "-Wno-override-module");

    /** The step's allocator (the resource kina/mlir/alloc.c): freed buffers kept for reuse by size. */
    static final String ALLOC = resource("alloc.c");

    private static String resource(String name) {
        try (var in = Toolchain.class.getResourceAsStream(name)) {
            if (in == null) throw new IllegalStateException("kina.mlir resource " + name + " is missing from the build");
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("kina.mlir resource " + name + ": " + e.getMessage(), e);
        }
    }

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
        String sched = Schedule.text(m, Schedule.vectorBits());
        boolean omp = openmp();
        Path dir = cacheDir();
        Path so = dir.resolve(key(m, t, sched, omp) + ".so");
        if (Files.isRegularFile(so)) return so;
        long t0 = System.nanoTime();
        notices.accept("kina: building native code with mlir-opt-19, mlir-translate-19 and clang-19 (a StoryLM train step takes "
                + "30–70 s); the result is cached in " + dir + ", so the same program starts at once next time");
        try {
            Files.createDirectories(dir);
            Path work = Files.createTempDirectory(dir, "build-");
            try {
                Path ll = lower(t, m, sched, omp, work);
                Path glue = work.resolve("glue.ll"), alloc = work.resolve("alloc.c"), out = work.resolve("lib.so");
                Files.writeString(alloc, ALLOC, StandardCharsets.UTF_8);
                Files.writeString(glue, glue(m.entry()), StandardCharsets.UTF_8);
                List<String> cc = new ArrayList<>(List.of(t.clang().toString()));
                cc.addAll(CLANG);
                cc.addAll(List.of(ll.toString(), glue.toString(), alloc.toString(), "-o", out.toString(), "-lm", "-lpthread"));
                if (omp) cc.add("-fopenmp");
                step("clang", cc, work);
                Files.move(out, so, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } finally {
                keep(work);
                deleteTree(work);
            }
        } catch (IOException e) {
            throw new MlirError("native build in " + dir + ": " + e.getMessage());
        }
        notices.accept(String.format(java.util.Locale.ROOT, "kina: native code built in %.1f s", (System.nanoTime() - t0) / 1e9));
        return so;
    }

    /** The cache key of {@code m}'s object: everything the build reads. */
    private static String key(Emitter.Module m, Tools t, String sched, boolean omp) {
        return sha256(String.join("\n", "v1", m.text(), sched, pipeline(Path.of("schedule.mlir"), omp),
                String.join(" ", CLANG), glue(m.entry()), ALLOC, version(t), cpu()));
    }

    /** The cache key {@link #build} gives {@code m} on this host (tests: what the key follows). */
    static String key(Emitter.Module m) {
        return key(m, require(), Schedule.text(m, Schedule.vectorBits()), openmp());
    }

    /** mlir-opt (the pipeline) and mlir-translate on {@code m} in {@code work}: the LLVM IR file. */
    private static Path lower(Tools t, Emitter.Module m, String sched, boolean omp, Path work) throws IOException {
        Path in = work.resolve("module.mlir"), llvm = work.resolve("module.llvm.mlir"), ll = work.resolve("module.ll");
        Files.writeString(in, m.text(), StandardCharsets.UTF_8);
        Path schedule = work.resolve("schedule.mlir");
        Files.writeString(schedule, sched, StandardCharsets.UTF_8);
        step("mlir-opt", List.of(t.mlirOpt().toString(), in.toString(), "--pass-pipeline=" + pipeline(schedule, omp), "-o", llvm.toString()), work);
        step("mlir-translate", List.of(t.mlirTranslate().toString(), "--mlir-to-llvmir", llvm.toString(), "-o", ll.toString()), work);
        return ll;
    }

    /**
     * The LLVM IR {@link #build} compiles for {@code m} (not cached): for reading what the pipeline
     * leaves, e.g. which calls a step makes.
     *
     * @throws MlirError when a tool is missing or a step fails
     */
    public static String llvmIr(Emitter.Module m) {
        Tools t = require();
        try {
            Path work = Files.createTempDirectory("kina-llvm");
            try {
                return Files.readString(lower(t, m, Schedule.text(m, Schedule.vectorBits()), openmp(), work));
            } finally {
                deleteTree(work);
            }
        } catch (IOException e) {
            throw new MlirError("native build: " + e.getMessage());
        }
    }

    /**
     * With {@code KINA_NATIVE_KEEP=DIR} set, a build's intermediate files (the module, the schedule,
     * the lowered module, the LLVM IR; what a failed build got to) are copied into DIR, for reading
     * what the pipeline made.
     */
    private static void keep(Path work) throws IOException {
        String k = System.getenv("KINA_NATIVE_KEEP");
        if (k == null || k.isBlank()) return;
        Path to = Path.of(k);
        Files.createDirectories(to);
        try (var s = Files.list(work)) {
            for (Path p : s.toList())
                if (!p.getFileName().toString().equals("lib.so")) Files.copy(p, to.resolve(p.getFileName()), StandardCopyOption.REPLACE_EXISTING);
        }
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
