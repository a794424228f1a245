/*
 * A/B of the whole train step between builds, as bench/MatmulAB.java does for sgemm: each jar gets
 * its own class loader in one JVM (its own classes, JIT profile and Parallel pool) and its own
 * Bench.Stepper; the steps alternate A, B, B, A, A, B, … so both builds see the same phase of the
 * host (on these shared vCPUs a phase lasts seconds, and separate runs of one build swing ±25 %).
 * Prints per jar the median and best ms/step, and per jar after the first the median over pairs of
 * neighbouring steps of (its step / the first jar's step): below 1 it is faster.
 *
 *   cp target/kina.jar /tmp/old.jar   # before the change; rebuild after it
 *   java --add-modules jdk.incubator.vector bench/StepAB.java THREADS SECONDS CONFIG /tmp/old.jar target/kina.jar
 *   CPU=1 java … bench/StepAB.java 1 SECONDS CONFIG …    (1 thread: CPU time, not wall time, per step)
 *
 * Batch 8, the plan engine. Each build warms up for 5 s of its own steps, then all run in turn
 * until the JIT has finished no compilation for 1 s (at most 60 s), as kina bench's warm-up does.
 * Needs jars that have Bench.Stepper (3ef1cf1 and later).
 */
import java.lang.reflect.*;
import java.net.*;
import java.nio.file.*;
import java.util.*;

/** Train steps of several builds interleaved in one JVM; per-build median, best, and paired ratio against the first. */
public class StepAB {
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: java --add-modules jdk.incubator.vector bench/StepAB.java THREADS SECONDS CONFIG JAR...");
            System.exit(2);
        }
        int threads = Integer.parseInt(args[0]);
        // CPU=1 (1 thread only): each step's CPU time on this thread instead of its wall time, so the
        // time a loaded host gives the core to others is not counted
        boolean cpu = "1".equals(System.getenv("CPU")) && threads == 1;
        java.lang.management.ThreadMXBean thread = java.lang.management.ManagementFactory.getThreadMXBean();
        double secs = Double.parseDouble(args[1]);
        String config = args[2];
        List<Runnable> steps = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (int i = 3; i < args.length; i++) {
            ClassLoader cl = new URLClassLoader(new URL[] {Path.of(args[i]).toUri().toURL()}, StepAB.class.getClassLoader().getParent());
            firstClass(cl, "kina.kernels.Parallel", "kina.eval.Parallel").getMethod("setThreads", int.class).invoke(null, threads);
            Object c = Class.forName("kina.model.Config", true, cl).getMethod("byName", String.class).invoke(null, config);
            Class<?> engine = firstClass(cl, "kina.model.Engine", "kina.model.Trainer$Engine");
            Object plan = engine.getMethod("valueOf", String.class).invoke(null, "PLAN");
            Class<?> st = firstClass(cl, "kina.cli.Bench$Stepper", "kina.model.Bench$Stepper");
            Object stepper = st.getConstructor(Class.forName("kina.model.Config", true, cl), int.class, engine).newInstance(c, 8, plan);
            Method run = st.getMethod("run");
            steps.add(() -> {
                try { run.invoke(stepper); } catch (ReflectiveOperationException e) { throw new RuntimeException(e); }
            });
            names.add(Path.of(args[i]).getFileName().toString());
        }
        int n = steps.size();
        for (Runnable s : steps) {                                   // warm-up: each build alone, 5 s and 3 steps at least
            long end = System.nanoTime() + 5_000_000_000L;
            for (int k = 0; k < 3 || System.nanoTime() < end; k++) s.run();
        }
        java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        if (jit != null && jit.isCompilationTimeMonitoringSupported()) {   // then all in turn until the JIT is quiet for 1 s
            long start = System.nanoTime(), quietFrom = start, seen = jit.getTotalCompilationTime();
            while (System.nanoTime() - quietFrom < 1_000_000_000L && System.nanoTime() - start < 60_000_000_000L) {
                for (Runnable s : steps) s.run();
                long now = jit.getTotalCompilationTime();
                if (now != seen) { seen = now; quietFrom = System.nanoTime(); }
            }
        }
        List<List<Double>> ms = new ArrayList<>();
        for (int j = 0; j < n; j++) ms.add(new ArrayList<>());
        long end = System.nanoTime() + (long) (secs * 1e9);
        for (int it = 0; System.nanoTime() < end || it < 10; it++)
            for (int k = 0; k < n; k++) {
                int j = it % 2 == 0 ? k : n - 1 - k;                 // A B, then B A: neither build always runs first
                long t0 = cpu ? thread.getCurrentThreadCpuTime() : System.nanoTime();
                steps.get(j).run();
                ms.get(j).add(((cpu ? thread.getCurrentThreadCpuTime() : System.nanoTime()) - t0) / 1e6);
            }
        System.out.printf(Locale.ROOT, "config=%s threads=%d steps per build=%d%n", config, threads, ms.get(0).size());
        System.out.printf(Locale.ROOT, "%-20s %9s %9s %14s%n", "jar", "median", "best", "paired/first");
        for (int j = 0; j < n; j++) {
            List<Double> s = new ArrayList<>(ms.get(j)), r = new ArrayList<>();
            for (int i = 0; i < s.size(); i++) r.add(ms.get(j).get(i) / ms.get(0).get(i));
            Collections.sort(s);
            Collections.sort(r);
            System.out.printf(Locale.ROOT, "%-20s %9.1f %9.1f %14s%n", names.get(j), s.get(s.size() / 2), s.get(0),
                    j == 0 ? "" : String.format(Locale.ROOT, "%.3f", r.get(r.size() / 2)));
        }
    }
    /** The first of {@code names} that {@code cl} has: classes moved between packages keep old jars comparable. */
    static Class<?> firstClass(ClassLoader cl, String... names) throws ClassNotFoundException {
        for (String n : names) {
            try { return Class.forName(n, true, cl); } catch (ClassNotFoundException e) { /* an older or newer layout */ }
        }
        throw new ClassNotFoundException(String.join(" or ", names));
    }
}
