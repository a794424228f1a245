/*
 * A/B of Matmul.sgemm between builds: each jar gets its own class loader in one JVM and the calls
 * alternate per shape, so both sides see the same machine load (on the shared 2 vCPUs, separate
 * runs swing ±50 %). Prints per-call median and (best) GFLOP/s; compare the best.
 *
 *   cp target/kina.jar /tmp/old.jar   # before the change; rebuild after it
 *   java --add-modules jdk.incubator.vector bench/MatmulAB.java THREADS SECONDS /tmp/old.jar target/kina.jar
 *   SHAPES="k32 32 128 32 128 NT,up 1 1024 128 344 NN" java ... (name batch m k n NN|NT|TN|TT)
 *   FLUSH_MB=64 java ...   # writes over that many MB between calls (untimed): operands start cold
 */
import java.lang.invoke.*;
import java.net.*;
import java.nio.file.*;
import java.util.*;

/** A/B sgemm per call, both jars in one JVM (separate class loaders), interleaved; reports min and median GFLOP/s. */
public class MatmulAB {
    public static void main(String[] args) throws Throwable {
        int threads = Integer.parseInt(args[0]);
        double secs = Double.parseDouble(args[1]);
        List<MethodHandle> mm = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            ClassLoader cl = new URLClassLoader(new URL[] {Path.of(args[i]).toUri().toURL()}, MatmulAB.class.getClassLoader().getParent());
            Class<?> c = firstClass(cl, "kina.kernels.Matmul", "kina.eval.Matmul"), p = firstClass(cl, "kina.kernels.Parallel", "kina.eval.Parallel");
            p.getMethod("setThreads", int.class).invoke(null, threads);
            mm.add(MethodHandles.publicLookup().findStatic(c, "sgemm", MethodType.methodType(void.class, float[].class, boolean.class,
                    float[].class, boolean.class, float[].class, int.class, int.class, int.class, int.class)));
            names.add(Path.of(args[i]).getFileName().toString());
        }
        String[] shapes = {"up 1 1024 128 344 NN", "up_dw 1 128 1024 344 TN", "up_dx 1 1024 344 128 NT",
            "qkv 1 1024 128 128 NN", "qkv_dx 1 1024 128 128 NT", "qkv_dw 1 128 1024 128 TN",
            "att_dv 32 128 128 32 TN", "att_qk 32 128 32 128 NT", "att_pv 32 128 128 32 NN"};
        if (System.getenv("SHAPES") != null) shapes = System.getenv("SHAPES").split(",");
        Random r = new Random(1);
        float[] flush = System.getenv("FLUSH_MB") == null ? null : new float[Integer.parseInt(System.getenv("FLUSH_MB")) << 18];
        StringBuilder[] sb = new StringBuilder[mm.size()];
        for (int v = 0; v < sb.length; v++) sb[v] = new StringBuilder(String.format("%-10s", names.get(v)));
        StringBuilder hdr = new StringBuilder(String.format("%-10s", "p50(min)"));
        for (int pass = 0; pass < 2; pass++)
        for (String s : shapes) {
            String[] f = s.split(" ");
            int batch = Integer.parseInt(f[1]), m = Integer.parseInt(f[2]), k = Integer.parseInt(f[3]), n = Integer.parseInt(f[4]);
            boolean ta = f[5].charAt(0) == 'T', tb = f[5].charAt(1) == 'T';
            float[] a = new float[batch * m * k], b = new float[batch * k * n], o = new float[batch * m * n];
            for (int i = 0; i < a.length; i++) a[i] = r.nextFloat() - 0.5f;
            for (int i = 0; i < b.length; i++) b[i] = r.nextFloat() - 0.5f;
            double flop = 2.0 * batch * m * k * n;
            List<List<Long>> times = new ArrayList<>();
            for (int v = 0; v < mm.size(); v++) times.add(new ArrayList<>());
            long end = System.nanoTime() + (long) (secs * (pass == 0 ? 0.5 : 1) * 1e9);
            for (int it = 0; System.nanoTime() < end || it < 20; it++) {
                for (int v = 0; v < mm.size(); v++) {
                    if (flush != null) { for (int i = 0; i < flush.length; i += 16) flush[i] += 1; }
                    long t0 = System.nanoTime();
                    mm.get(v).invokeExact(a, ta, b, tb, o, batch, m, k, n);
                    long t = System.nanoTime() - t0;
                    if (it >= 10) times.get(v).add(t);
                }
            }
            if (pass == 0) continue;
            hdr.append(String.format("%13s", f[0]));
            for (int v = 0; v < mm.size(); v++) {
                List<Long> t = times.get(v); Collections.sort(t);
                sb[v].append(String.format("%7.1f(%4.0f)", flop / t.get(t.size() / 2), flop / t.get(0)));
            }
        }
        System.out.println(hdr);
        for (StringBuilder s : sb) System.out.println(s);
    }
    /** The first of {@code names} that {@code cl} has: classes moved between packages keep old jars comparable. */
    static Class<?> firstClass(ClassLoader cl, String... names) throws ClassNotFoundException {
        for (String n : names) {
            try { return Class.forName(n, true, cl); } catch (ClassNotFoundException e) { /* an older or newer layout */ }
        }
        throw new ClassNotFoundException(String.join(" or ", names));
    }
}
