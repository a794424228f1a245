/*
 * kina's sgemm against OpenBLAS's in one JVM, call by call: each kina jar gets its own class
 * loader (as bench/MatmulAB.java), OpenBLAS's cblas_sgemm is called through the FFM API on Java heap
 * arrays (a critical downcall: no copies), and every round runs each side once, in an order that
 * rotates, so all sides see the same second of the host (separate runs swing ±25 % here). Each call
 * takes the next of SETS operand sets (same shapes and values), whichever side makes it.
 * Prints per shape each side's median GFLOP/s and, per jar, the median over rounds of its time
 * over OpenBLAS's time in the same round (> 1: kina is slower).
 *
 *   java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED bench/BlasAB.java SETS ROUNDS target/kina.jar [/tmp/old.jar …] ["M K N NN|NT|TN" …]
 *
 * SETS: operand sets per shape, used round robin (1: the same arrays every call, hot in cache; 12:
 * each call's operands were last touched 12 calls ago, as a train step's are). The library is
 * Debian's libopenblas0-pthread (OPENBLAS_LIB overrides the path); it runs on 1 thread, as does kina.
 */
import java.lang.foreign.*;
import java.lang.invoke.*;
import java.net.*;
import java.nio.file.*;
import java.util.*;

/** kina's sgemm (several builds) and OpenBLAS's, interleaved per call; median ratio of times per shape. */
public class BlasAB {
    public static void main(String[] args) throws Throwable {
        if (args.length < 3) {
            System.err.println("usage: java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED bench/BlasAB.java SETS ROUNDS JAR... [\"M K N NN\"...]");
            System.exit(2);
        }
        int sets = count(args[0], "SETS"), rounds = count(args[1], "ROUNDS");
        List<String> jars = new ArrayList<>(), shapes = new ArrayList<>();
        for (int i = 2; i < args.length; i++) (args[i].endsWith(".jar") ? jars : shapes).add(args[i]);
        if (shapes.isEmpty()) shapes = List.of("2048 256 256 NN", "2048 256 688 NN", "2048 688 256 NT", "256 2048 688 TN", "256 2048 256 TN");
        List<MethodHandle> kina = new ArrayList<>();
        for (String j : jars) {
            if (!Files.isRegularFile(Path.of(j))) usage("no jar at " + j + " (build one with: mvn -q package -DskipTests)");
            ClassLoader cl = new URLClassLoader(new URL[] {Path.of(j).toUri().toURL()}, BlasAB.class.getClassLoader().getParent());
            try {
                firstClass(cl, "kina.kernels.Parallel", "kina.eval.Parallel").getMethod("setThreads", int.class).invoke(null, 1);
                kina.add(MethodHandles.publicLookup().findStatic(firstClass(cl, "kina.kernels.Matmul", "kina.eval.Matmul"), "sgemm", MethodType.methodType(void.class,
                        float[].class, boolean.class, float[].class, boolean.class, float[].class, int.class, int.class, int.class, int.class)));
            } catch (ReflectiveOperationException e) {
                usage(j + " is not a kina jar with kina.kernels.Matmul.sgemm (or kina.eval.Matmul.sgemm) (" + e.getClass().getSimpleName() + ")");
            }
        }
        String lib = System.getenv().getOrDefault("OPENBLAS_LIB", "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0");
        if (!Files.isRegularFile(Path.of(lib))) usage("no OpenBLAS at " + lib + " (apt-get install libopenblas0-pthread, or set OPENBLAS_LIB)");
        Linker linker = Linker.nativeLinker();
        SymbolLookup blas = SymbolLookup.libraryLookup(Path.of(lib), Arena.global());
        linker.downcallHandle(blas.find("openblas_set_num_threads").orElseThrow(), FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT)).invoke(1);
        ValueLayout i32 = ValueLayout.JAVA_INT, f32 = ValueLayout.JAVA_FLOAT, ptr = ValueLayout.ADDRESS;
        // cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
        MethodHandle sgemm = linker.downcallHandle(blas.find("cblas_sgemm").orElseThrow(),
                FunctionDescriptor.ofVoid(i32, i32, i32, i32, i32, i32, f32, ptr, i32, ptr, i32, f32, ptr, i32), Linker.Option.critical(true));
        final int rowMajor = 101, noTrans = 111, trans = 112, sides = kina.size() + 1;
        for (String s : shapes) shape(s);                      // every shape checked before any output
        StringBuilder head = new StringBuilder(String.format("%-18s", "M K N (sets " + sets + ")"));
        for (String j : jars) head.append(String.format(" %14s", Path.of(j).getFileName()));
        head.append(String.format(" %14s", "OpenBLAS"));
        for (int q = 0; q < jars.size(); q++) head.append(String.format(" %8s", "ratio" + q));
        System.out.println(head + "   (median GFLOP/s; ratio: kina time / OpenBLAS time, median of rounds)");
        for (String s : shapes) {
            int[] sh = shape(s);
            int m = sh[0], k = sh[1], n = sh[2];
            boolean ta = sh[3] == 1, tb = sh[4] == 1;
            float[][] as = new float[sets][], bs = new float[sets][], os = new float[sets][];
            Random r = new Random(1);
            for (int t = 0; t < sets; t++) {
                as[t] = new float[m * k];
                bs[t] = new float[k * n];
                os[t] = new float[m * n];
                for (int i = 0; i < as[t].length; i++) as[t][i] = r.nextFloat() - 0.5f;
                for (int i = 0; i < bs[t].length; i++) bs[t][i] = r.nextFloat() - 0.5f;
            }
            double[][] gf = new double[sides][rounds], ratio = new double[sides - 1][rounds];
            int[] call = {0};
            // One round: each side once, the order rotated by the round number, each call on the next operand set.
            java.util.function.IntFunction<long[]> oneRound = round -> {
                long[] ns = new long[sides];
                try {
                    for (int q = 0; q < sides; q++) {
                        int who = (q + round) % sides, t = call[0]++ % sets;
                        long t0 = System.nanoTime();
                        if (who < kina.size()) kina.get(who).invoke(as[t], ta, bs[t], tb, os[t], 1, m, k, n);
                        else sgemm.invoke(rowMajor, ta ? trans : noTrans, tb ? trans : noTrans, m, n, k, 1f, MemorySegment.ofArray(as[t]), ta ? m : k,
                                MemorySegment.ofArray(bs[t]), tb ? k : n, 0f, MemorySegment.ofArray(os[t]), n);
                        ns[who] = System.nanoTime() - t0;
                    }
                } catch (Throwable e) {
                    throw new RuntimeException(e);
                }
                return ns;
            };
            long warmEnd = System.nanoTime() + 2_000_000_000L;      // warm-up, untimed: ROUNDS rounds and at least 2 s (the JIT)
            for (int round = 0; round < rounds || System.nanoTime() < warmEnd; round++) oneRound.apply(round);
            for (int round = 0; round < rounds; round++) {
                long[] ns = oneRound.apply(round);
                for (int q = 0; q < sides; q++) gf[q][round] = 2.0 * m * k * n / ns[q];
                for (int q = 0; q < sides - 1; q++) ratio[q][round] = (double) ns[q] / ns[sides - 1];
            }
            StringBuilder line = new StringBuilder(String.format("%-18s", s));
            for (double[] g : gf) line.append(String.format(" %14.1f", median(g)));
            for (double[] x : ratio) line.append(String.format(" %8.3f", median(x)));
            System.out.println(line);
        }
    }

    /** "M K N XY" as {m, k, n, transA, transB} (1 for T), or the usage error naming the shape. */
    static int[] shape(String s) {
        String[] f = s.trim().split("\\s+");
        if (f.length != 4 || !f[3].matches("[NT][NT]")) usage("shape '" + s + "': want \"M K N NN|NT|TN|TT\"");
        int m = count(f[0], "M"), k = count(f[1], "K"), n = count(f[2], "N");
        try {
            Math.multiplyExact(Math.max(m, k), Math.max(k, n));
        } catch (ArithmeticException e) {
            usage("shape '" + s + "': an operand has more than 2^31 - 1 elements");
        }
        return new int[] {m, k, n, f[3].charAt(0) == 'T' ? 1 : 0, f[3].charAt(1) == 'T' ? 1 : 0};
    }

    /** A positive count from the command line, or the usage error naming it. */
    static int count(String text, String what) {
        try {
            int v = Integer.parseInt(text.trim());
            if (v >= 1) return v;
        } catch (NumberFormatException e) {
            // the one-line error below
        }
        usage(what + " must be an integer >= 1, got '" + text + "'");
        return 0;
    }

    static void usage(String why) {
        System.err.println("BlasAB: " + why);
        System.exit(2);
    }

    static double median(double[] x) {
        double[] c = x.clone();
        Arrays.sort(c);
        return c.length % 2 == 1 ? c[c.length / 2] : (c[c.length / 2 - 1] + c[c.length / 2]) / 2;
    }
    /** The first of {@code names} that {@code cl} has: classes moved between packages keep old jars comparable. */
    static Class<?> firstClass(ClassLoader cl, String... names) throws ClassNotFoundException {
        for (String n : names) {
            try { return Class.forName(n, true, cl); } catch (ClassNotFoundException e) { /* an older or newer layout */ }
        }
        throw new ClassNotFoundException(String.join(" or ", names));
    }
}
