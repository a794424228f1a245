/*
 * A/B of the plan's attention kernels between builds, as bench/MatmulAB.java does for sgemm: each
 * jar gets its own class loader in one JVM and the calls alternate, so both sides see the same
 * machine load. One causal layer of a StoryLM config (default medium: batch 8, 256 rows and keys,
 * 8 heads of 32); prints per-call median and (best) µs of the layer's forward and backward for each
 * jar.
 *
 *   cp target/kina.jar /tmp/old.jar   # before the change; rebuild after it
 *   java --add-modules jdk.incubator.vector bench/AttentionAB.java THREADS SECONDS /tmp/old.jar target/kina.jar
 *   GEOMETRY=2x1024x8x32 java ...     (batch x rows x heads x head width)
 *   CPU=1 java ... 1 SECONDS ...        (1 thread: the calling thread's CPU time instead of wall time)
 */
import java.lang.reflect.*;
import java.net.*;
import java.nio.file.*;
import java.util.*;

/**
 * The attention layer's forward and backward kernels, as the plan runs them in a train step, per
 * call, jars interleaved. Blockwise builds: FlashAttention.forward (output and lse) and
 * FlashAttention.backward (dq, dk, dv). Earlier builds: PlanKernels.attention writing P
 * (attention_with_probs) and AttentionProducts.qkSoftmaxGrad with dq, dk and dv inside.
 */
public class AttentionAB {
    interface Call { void run() throws Exception; }

    private static final java.lang.management.ThreadMXBean THREAD = java.lang.management.ManagementFactory.getThreadMXBean();

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        // CPU=1: the calling thread's CPU time, not wall time (1 thread only: the time a loaded host
        // takes the core away is not counted)
        boolean cpu = "1".equals(System.getenv("CPU")) && threads == 1;
        double secs = Double.parseDouble(args[1]);
        String[] d = System.getenv().getOrDefault("GEOMETRY", "8x256x8x32").split("x");
        int b = Integer.parseInt(d[0]), t = Integer.parseInt(d[1]), h = Integer.parseInt(d[2]), hd = Integer.parseInt(d[3]);
        Random r = new Random(1);
        float[] q = new float[b * t * h * hd], k = new float[q.length], v = new float[q.length], gy = new float[q.length];
        for (float[] x : new float[][] {q, k, v, gy}) for (int i = 0; i < x.length; i++) x[i] = r.nextFloat() * 2 - 1;
        String[] kernels = {"forward", "backward"};
        List<String> names = new ArrayList<>();
        List<Call[]> calls = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            ClassLoader cl = new URLClassLoader(new URL[] {Path.of(args[i]).toUri().toURL()}, AttentionAB.class.getClassLoader().getParent());
            firstClass(cl, "kina.kernels.Parallel", "kina.eval.Parallel").getMethod("setThreads", int.class).invoke(null, threads);
            Class<?> attn = firstClass(cl, "kina.kernels.PlanKernels$Attn", "kina.plan.PlanKernels$Attn");
            Constructor<?> ctor = attn.getDeclaredConstructors()[0];
            ctor.setAccessible(true);
            Object g = ctor.newInstance(b, t, t, hd, h, h, 0, 0, 0, (float) (1 / Math.sqrt(hd)), 0f);
            float[] y = new float[q.length], dq = new float[q.length], dk = new float[q.length], dv = new float[q.length];
            Class<?> flash = optionalClass(cl, "kina.kernels.FlashAttention");
            if (flash == null) flash = optionalClass(cl, "kina.plan.FlashAttention");
            if (flash != null) {
                Method fwd = find(flash, "forward", 7), bwd = find(flash, "backward", 10);
                float[] lse = new float[b * t * h], dd = new float[lse.length];
                fwd.invoke(null, g, q, k, v, null, y, lse);
                for (int row = 0; row < dd.length; row++) {               // d = Σ g ⊙ out per head, as the VJP makes it
                    float acc = 0;
                    for (int e = 0; e < hd; e++) acc += gy[row * hd + e] * y[row * hd + e];
                    dd[row] = acc;
                }
                calls.add(new Call[] {
                    () -> fwd.invoke(null, g, q, k, v, null, y, lse),
                    () -> bwd.invoke(null, g, q, k, v, gy, lse, dd, dq, dk, dv)});
            } else {
                Class<?> ap = firstClass(cl, "kina.kernels.AttentionProducts", "kina.plan.AttentionProducts"),
                        pk = firstClass(cl, "kina.kernels.PlanKernels", "kina.plan.PlanKernels");
                Method fwd = find(pk, "attention", 9), merged = find(ap, "qkSoftmaxGrad", 12);
                float[] probs = new float[b * h * t * t];
                calls.add(new Call[] {
                    () -> fwd.invoke(null, g, q, k, v, null, y, probs, null, true),
                    () -> merged.invoke(null, g, gy, v, probs, null, null, k, dq, q, dk, dv, true)});
            }
            names.add(Path.of(args[i]).getFileName().toString());
        }
        StringBuilder hdr = new StringBuilder(String.format("%-24s", "µs p50(min)"));
        StringBuilder[] sb = new StringBuilder[names.size()];
        for (int j = 0; j < sb.length; j++) sb[j] = new StringBuilder(String.format("%-24s", names.get(j)));
        for (int pass = 0; pass < 2; pass++)
            for (int c = 0; c < kernels.length; c++) {
                List<List<Long>> times = new ArrayList<>();
                for (int j = 0; j < names.size(); j++) times.add(new ArrayList<>());
                long end = System.nanoTime() + (long) (secs * (pass == 0 ? 0.5 : 1) * 1e9);
                for (int it = 0; System.nanoTime() < end || it < 20; it++)
                    for (int j = 0; j < names.size(); j++) {
                        int jj = it % 2 == 0 ? j : names.size() - 1 - j;           // A B, then B A
                        long t0 = cpu ? THREAD.getCurrentThreadCpuTime() : System.nanoTime();
                        calls.get(jj)[c].run();
                        long t1 = cpu ? THREAD.getCurrentThreadCpuTime() : System.nanoTime();
                        if (it >= 5) times.get(jj).add(t1 - t0);
                    }
                if (pass == 0) continue;
                hdr.append(String.format("%20s", kernels[c]));
                for (int j = 0; j < names.size(); j++) {
                    List<Long> ts = times.get(j);
                    Collections.sort(ts);
                    sb[j].append(String.format("%13.0f(%5.0f)", ts.get(ts.size() / 2) / 1e3, ts.get(0) / 1e3));
                }
            }
        System.out.println(hdr);
        for (StringBuilder s : sb) System.out.println(s);
    }

    private static Method find(Class<?> c, String name, int params) {
        for (Method m : c.getDeclaredMethods())
            if (m.getName().equals(name) && m.getParameterCount() == params) { m.setAccessible(true); return m; }
        throw new IllegalArgumentException(c + "." + name + " with " + params + " parameters");
    }

    private static Class<?> optionalClass(ClassLoader cl, String name) {
        try { return Class.forName(name, true, cl); } catch (ClassNotFoundException e) { return null; }
    }

    /** The first of {@code names} that {@code cl} has: classes moved between packages keep old jars comparable. */
    static Class<?> firstClass(ClassLoader cl, String... names) throws ClassNotFoundException {
        for (String n : names) {
            try { return Class.forName(n, true, cl); } catch (ClassNotFoundException e) { /* an older or newer layout */ }
        }
        throw new ClassNotFoundException(String.join(" or ", names));
    }
}
