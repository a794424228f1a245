/*
 * The native engine's contractions against OpenBLAS's cblas_sgemm on the same shapes, in one JVM,
 * call by call: each shape is a one-line kina program (a @ b, or a.transpose(perm=[1, 0]) @ b for
 * TN) lowered as the native engine lowers the train step (the plan's rewrites, Emitter.emitNative,
 * the schedule of this host's vector width) and built into a shared object; its kina_call is called
 * through the FFM API on native buffers, as is cblas_sgemm, the two alternating so both see the
 * same second of the host. Prints per shape each side's median GFLOP/s and the median over rounds
 * of native time / OpenBLAS time (> 1: native is slower).
 *
 *   java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -cp target/kina.jar \
 *       bench/NativeBlasAB.java THREADS ROUNDS ["M K N NN|TN" ...]
 *
 * Default shapes: the medium train step's (2048 tokens, d 256, SwiGLU 688). The library is Debian's
 * libopenblas0-pthread (OPENBLAS_LIB overrides the path); both sides run on THREADS threads.
 */
import java.lang.foreign.*;
import java.lang.invoke.*;
import java.nio.file.*;
import java.util.*;

public class NativeBlasAB {
    public static void main(String[] args) throws Throwable {
        if (args.length < 2) {
            System.err.println("usage: java ... -cp target/kina.jar bench/NativeBlasAB.java THREADS ROUNDS [\"M K N NN|TN\" ...]");
            System.exit(2);
        }
        int threads = Integer.parseInt(args[0]), rounds = Integer.parseInt(args[1]);
        List<String> shapes = args.length > 2 ? List.of(args).subList(2, args.length)
                : List.of("2048 256 256 NN", "2048 256 688 NN", "2048 688 256 NN", "256 2048 688 TN", "256 2048 256 TN", "688 2048 256 TN");
        String lib = System.getenv().getOrDefault("OPENBLAS_LIB", "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0");
        Linker linker = Linker.nativeLinker();
        SymbolLookup blas = SymbolLookup.libraryLookup(Path.of(lib), Arena.global());
        linker.downcallHandle(blas.find("openblas_set_num_threads").orElseThrow(), FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT)).invoke(threads);
        ValueLayout i32 = ValueLayout.JAVA_INT, f32 = ValueLayout.JAVA_FLOAT, ptr = ValueLayout.ADDRESS;
        MethodHandle sgemm = linker.downcallHandle(blas.find("cblas_sgemm").orElseThrow(),
                FunctionDescriptor.ofVoid(i32, i32, i32, i32, i32, i32, f32, ptr, i32, ptr, i32, f32, ptr, i32));
        System.out.printf("%-18s %14s %14s %10s %10s   (median GFLOP/s over %d rounds, %d thread%s)%n", "M K N", "native", "OpenBLAS", "ratio", "diff",
                rounds, threads, threads == 1 ? "" : "s");
        Arena arena = Arena.global();
        for (String s : shapes) {
            String[] f = s.trim().split("\\s+");
            int m = Integer.parseInt(f[0]), k = Integer.parseInt(f[1]), n = Integer.parseInt(f[2]);
            boolean ta = f[3].equals("TN");
            String src = "let a = tensor<F32, [" + (ta ? k + ", " + m : m + ", " + k) + "], @host> in\n"
                    + "let b = tensor<F32, [" + k + ", " + n + "], @host> in\n"
                    + (ta ? "let at = a.transpose([1, 0]) in\nat @ b\n" : "a @ b\n");
            var checked = kina.check.Checker.check(kina.syntax.Parser.parse("shape.kina", src));
            var planned = kina.plan.Plan.compile(kina.ad.TransformAd.transform(checked)).program();
            Path so = kina.mlir.Toolchain.build(kina.mlir.Emitter.emitNative(planned));
            SymbolLookup obj = SymbolLookup.libraryLookup(so, arena);
            MethodHandle call = linker.downcallHandle(obj.find("kina_call").orElseThrow(), FunctionDescriptor.ofVoid(ptr));
            obj.find("omp_set_num_threads").ifPresent(h -> {
                try {
                    linker.downcallHandle(h, FunctionDescriptor.ofVoid(i32)).invoke(threads);
                } catch (Throwable e) {
                    throw new IllegalStateException(e);
                }
            });
            MemorySegment a = buffer(arena, (long) m * k), b = buffer(arena, (long) k * n), c = buffer(arena, (long) m * n),
                    cb = buffer(arena, (long) m * n);
            MemorySegment argv = arena.allocate(3 * 8L, 8);
            argv.setAtIndex(ValueLayout.ADDRESS, 0, descriptor(arena, a, ta ? k : m, ta ? m : k));
            argv.setAtIndex(ValueLayout.ADDRESS, 1, descriptor(arena, b, k, n));
            argv.setAtIndex(ValueLayout.ADDRESS, 2, descriptor(arena, c, m, n));
            double flop = 2.0 * m * n * k;
            int reps = (int) Math.max(1, 2e8 / flop);
            double[] nat = new double[rounds], ob = new double[rounds], ratio = new double[rounds];
            for (int r = -3; r < rounds; r++) {                 // three rounds of warm-up
                long t0 = System.nanoTime();
                for (int i = 0; i < reps; i++) call.invokeExact(argv);
                long t1 = System.nanoTime();
                for (int i = 0; i < reps; i++)
                    sgemm.invokeExact(101, ta ? 112 : 111, 111, m, n, k, 1f, a, ta ? m : k, b, n, 0f, cb, n);
                long t2 = System.nanoTime();
                if (r < 0) continue;
                nat[r] = flop * reps / (t1 - t0);
                ob[r] = flop * reps / (t2 - t1);
                ratio[r] = (double) (t1 - t0) / (t2 - t1);
            }
            double diff = 0, most = 0;
            for (long i = 0; i < (long) m * n; i++) most = Math.max(most, Math.abs(cb.getAtIndex(ValueLayout.JAVA_FLOAT, i)));
            for (long i = 0; i < (long) m * n; i++)
                diff = Math.max(diff, Math.abs(c.getAtIndex(ValueLayout.JAVA_FLOAT, i) - cb.getAtIndex(ValueLayout.JAVA_FLOAT, i)) / most);
            System.out.printf("%-18s %14.1f %14.1f %10.2f %10.1e%n", s, median(nat), median(ob), median(ratio), diff);
        }
    }

    static MemorySegment buffer(Arena arena, long floats) {
        MemorySegment s = arena.allocate(Math.max(64, floats * 4), 64);
        for (long i = 0; i < floats; i++) s.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) ((i * 7 % 13) - 6) / 7);
        return s;
    }

    /** A rank-2 memref descriptor: allocated, aligned, offset, sizes, strides. */
    static MemorySegment descriptor(Arena arena, MemorySegment data, long rows, long cols) {
        MemorySegment d = arena.allocate(8L * 7, 8);
        d.set(ValueLayout.ADDRESS, 0, data);
        d.set(ValueLayout.ADDRESS, 8, data);
        d.set(ValueLayout.JAVA_LONG, 16, 0L);
        d.set(ValueLayout.JAVA_LONG, 24, rows);
        d.set(ValueLayout.JAVA_LONG, 32, cols);
        d.set(ValueLayout.JAVA_LONG, 40, cols);
        d.set(ValueLayout.JAVA_LONG, 48, 1L);
        return d;
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
