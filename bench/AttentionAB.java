/*
 * A/B of the plan's attention kernels between builds, as bench/MatmulAB.java does for sgemm: each
 * jar gets its own class loader in one JVM and the calls alternate, so both sides see the same
 * machine load. One causal layer of a StoryLM config (default medium: batch 8, 256 rows and keys,
 * 8 heads of 32); prints per-call median and (best) µs for each kernel and jar.
 *
 *   cp target/kina.jar /tmp/old.jar   # before the change; rebuild after it
 *   java --add-modules jdk.incubator.vector bench/AttentionAB.java THREADS SECONDS /tmp/old.jar target/kina.jar
 *   GEOMETRY=8x128x4x32 java ...      (batch x rows x heads x head width)
 */
import java.lang.reflect.*;
import java.net.*;
import java.nio.file.*;
import java.util.*;

/**
 * A/B of PlanKernels.attention (with and without its output y), qkSoftmaxGrad (with dq),
 * AttentionProducts.qk / pk / pq, and the backward's attention-shaped work (qkSoftmaxGrad with dq,
 * then dK and dV by pq; or, in builds that have it, the one kernel doing all three) per call, jars
 * interleaved.
 */
public class AttentionAB {
    interface Call { void run() throws Exception; }

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        double secs = Double.parseDouble(args[1]);
        String[] d = System.getenv().getOrDefault("GEOMETRY", "8x256x8x32").split("x");
        int b = Integer.parseInt(d[0]), t = Integer.parseInt(d[1]), h = Integer.parseInt(d[2]), hd = Integer.parseInt(d[3]);
        Random r = new Random(1);
        float[] q = new float[b * t * h * hd], k = new float[q.length], v = new float[q.length], y = new float[q.length], dq = new float[q.length];
        for (float[] x : new float[][] {q, k, v}) for (int i = 0; i < x.length; i++) x[i] = r.nextFloat() * 2 - 1;
        float[] probs = new float[b * h * t * t], ds = new float[probs.length];
        String[] kernels = {"attention", "qkSoftmaxGrad+pk", "qk", "probsOnly", "pk", "pq", "backward"};
        List<String> names = new ArrayList<>();
        List<Call[]> calls = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            ClassLoader cl = new URLClassLoader(new URL[] {Path.of(args[i]).toUri().toURL()}, AttentionAB.class.getClassLoader().getParent());
            firstClass(cl, "kina.kernels.Parallel", "kina.eval.Parallel").getMethod("setThreads", int.class).invoke(null, threads);
            Class<?> attn = Class.forName("kina.plan.PlanKernels$Attn", true, cl), ap = Class.forName("kina.plan.AttentionProducts", true, cl),
                    pk = Class.forName("kina.plan.PlanKernels", true, cl);
            Constructor<?> ctor = attn.getDeclaredConstructors()[0];
            ctor.setAccessible(true);
            Object g = ctor.newInstance(b, t, t, hd, h, h, 0, 0, 0, (float) (1 / Math.sqrt(hd)), 0f);
            Method fwd = find(pk, "attention", 9), qk = find(ap, "qk", 4), pkm = find(ap, "pk", 4), pq = find(ap, "pq", 4);
            // qkSoftmaxGrad: 9 parameters before 19a9714; since then 12, with dK and dV inside (ds unstored)
            Method merged = findOptional(ap, "qkSoftmaxGrad", 12), qsg9 = merged == null ? find(ap, "qkSoftmaxGrad", 9) : null;
            float[] dk = new float[q.length], dv = new float[q.length];
            fwd.invoke(null, g, q, k, v, null, y, probs, null, true);
            calls.add(new Call[] {
                () -> fwd.invoke(null, g, q, k, v, null, y, probs, null, true),
                () -> { if (merged != null) merged.invoke(null, g, q, v, probs, ds, null, k, dq, null, null, null, true);
                        else qsg9.invoke(null, g, q, v, probs, ds, null, k, dq, true); },
                () -> qk.invoke(null, g, q, k, ds),
                () -> fwd.invoke(null, g, q, k, v, null, null, probs, null, true),
                () -> pkm.invoke(null, g, probs, k, dq),
                () -> pq.invoke(null, g, probs, q, dq),
                () -> {                                                 // the attention backward's attention-shaped work, either way
                    if (merged != null) merged.invoke(null, g, q, v, probs, null, null, k, dq, q, dk, dv, true);
                    else { qsg9.invoke(null, g, q, v, probs, ds, null, k, dq, true); pq.invoke(null, g, ds, q, dk); pq.invoke(null, g, probs, q, dv); }
                }});
            names.add(Path.of(args[i]).getFileName().toString());
        }
        StringBuilder hdr = new StringBuilder(String.format("%-14s", "µs p50(min)"));
        StringBuilder[] sb = new StringBuilder[names.size()];
        for (int j = 0; j < sb.length; j++) sb[j] = new StringBuilder(String.format("%-14s", names.get(j)));
        for (int pass = 0; pass < 2; pass++)
            for (int c = 0; c < kernels.length; c++) {
                List<List<Long>> times = new ArrayList<>();
                for (int j = 0; j < names.size(); j++) times.add(new ArrayList<>());
                long end = System.nanoTime() + (long) (secs * (pass == 0 ? 0.5 : 1) * 1e9);
                for (int it = 0; System.nanoTime() < end || it < 20; it++)
                    for (int j = 0; j < names.size(); j++) {
                        long t0 = System.nanoTime();
                        calls.get(j)[c].run();
                        if (it >= 5) times.get(j).add(System.nanoTime() - t0);
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
        Method m = findOptional(c, name, params);
        if (m == null) throw new IllegalArgumentException(c + "." + name + " with " + params + " parameters");
        return m;
    }

    private static Method findOptional(Class<?> c, String name, int params) {
        for (Method m : c.getDeclaredMethods())
            if (m.getName().equals(name) && m.getParameterCount() == params) { m.setAccessible(true); return m; }
        return null;
    }
    /** The first of {@code names} that {@code cl} has: classes moved between packages keep old jars comparable. */
    static Class<?> firstClass(ClassLoader cl, String... names) throws ClassNotFoundException {
        for (String n : names) {
            try { return Class.forName(n, true, cl); } catch (ClassNotFoundException e) { /* an older or newer layout */ }
        }
        throw new ClassNotFoundException(String.join(" or ", names));
    }
}
