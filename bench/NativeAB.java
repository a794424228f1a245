/*
 * The native engine against the plan, side by side in one JVM: a Bench.Stepper per engine (the
 * same config, batch 8, AdamW), the steps alternating plan, native, native, plan, … so both see
 * the same phase of the host. Prints per engine the median and best of the wall time and of the
 * process CPU time per step (on these shared vCPUs the CPU time is the steadier of the two: other
 * tenants slow the wall clock, not the work), and the ratio native / plan of each.
 *
 *   bin/kina bench --config tiny --engine native --steps 1    # builds (or finds) the shared object first
 *   java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -cp target/kina.jar \
 *       bench/NativeAB.java THREADS SECONDS CONFIG
 *
 * Both engines run on THREADS threads (the plan's worker pool; the native object's OpenMP threads).
 * The CPU time is the calling thread's: with THREADS = 1 the whole step's, with more the wall time is
 * the measure. Each engine warms up for 5 s of its own steps first.
 */
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import kina.model.Engine;

public class NativeAB {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: java ... -cp target/kina.jar bench/NativeAB.java THREADS SECONDS CONFIG");
            System.exit(2);
        }
        int threads = Integer.parseInt(args[0]);
        double secs = Double.parseDouble(args[1]);
        kina.model.Config c = kina.model.Config.byName(args[2]);
        kina.kernels.Parallel.setThreads(threads);
        kina.model.Engine[] engines = {kina.model.Engine.PLAN, kina.model.Engine.NATIVE};
        kina.cli.Bench.Stepper[] st = new kina.cli.Bench.Stepper[2];
        for (int e = 0; e < 2; e++) {
            st[e] = new kina.cli.Bench.Stepper(c, 8, engines[e]);
            long end = System.nanoTime() + 5_000_000_000L;
            while (System.nanoTime() < end) st[e].run();
        }
        // The thread's CPU time: with THREADS = 1 the plan runs on the calling thread, as the native step does.
        var tm = ManagementFactory.getThreadMXBean();
        List<List<double[]>> times = List.of(new ArrayList<>(), new ArrayList<>());
        long end = System.nanoTime() + (long) (secs * 1e9);
        for (int i = 0; System.nanoTime() < end; i++) {
            int e = (i % 4 == 0 || i % 4 == 3) ? 0 : 1;
            var in = st[e].next();
            long c0 = tm.getCurrentThreadCpuTime(), t0 = System.nanoTime();
            st[e].run(in);
            long t1 = System.nanoTime(), c1 = tm.getCurrentThreadCpuTime();
            times.get(e).add(new double[] {(t1 - t0) / 1e6, (c1 - c0) / 1e6});
        }
        double[][] med = new double[2][2], best = new double[2][2];
        for (int e = 0; e < 2; e++)
            for (int k = 0; k < 2; k++) {
                final int kk = k;
                double[] v = times.get(e).stream().mapToDouble(x -> x[kk]).sorted().toArray();
                med[e][k] = v[v.length / 2];
                best[e][k] = v[0];
            }
        for (int e = 0; e < 2; e++)
            System.out.printf("%-6s %s threads=%d steps=%d  wall ms median %.1f best %.1f   cpu ms median %.1f best %.1f%n",
                    engines[e].name().toLowerCase(), c.name(), threads,
                    times.get(e).size(), med[e][0], best[e][0], med[e][1], best[e][1]);
        System.out.printf("native/plan: wall median %.2f best %.2f   cpu median %.2f best %.2f%n",
                med[1][0] / med[0][0], best[1][0] / best[0][0], med[1][1] / med[0][1], best[1][1] / best[0][1]);
    }
}
