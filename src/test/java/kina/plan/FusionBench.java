package kina.plan;

import java.lang.reflect.Field;
import java.util.List;
import java.util.SplittableRandom;
import kina.eval.Parallel;
import kina.ir.Program;

/** Not a test: times one fused AdamW-like pass (main; run with test classes on the class path). */
final class FusionBench {
    static final String ADAMW = """
            let p = tensor<F32, [172, 256], @host> in
            let g = tensor<F32, [172, 256], @host> in
            let m = tensor<F32, [172, 256], @host> in
            let v = tensor<F32, [172, 256], @host> in
            let b1 = tensor<F32, [1, 1], @host> in
            let c1 = tensor<F32, [1, 1], @host> in
            let b2 = tensor<F32, [1, 1], @host> in
            let c2 = tensor<F32, [1, 1], @host> in
            let k1 = tensor<F32, [1, 1], @host> in
            let k2 = tensor<F32, [1, 1], @host> in
            let eps = tensor<F32, [1, 1], @host> in
            let lr = tensor<F32, [1, 1], @host> in
            let wd = tensor<F32, [1, 1], @host> in
            let S = [172, 256] in
            let m2 = b1.broadcast([172, 256]) * m + c1.broadcast([172, 256]) * g in
            let v2 = b2.broadcast([172, 256]) * v + c2.broadcast([172, 256]) * (g * g) in
            let mh = m2 / k1.broadcast([172, 256]) in
            let vh = v2 / k2.broadcast([172, 256]) in
            let u = mh / (vh.sqrt() + eps.broadcast([172, 256])) in
            let p2 = p - lr.broadcast([172, 256]) * (u + wd.broadcast([172, 256]) * p) in
            (p2, m2, v2)
            """;

    public static void main(String[] a) throws Exception {
        Parallel.setThreads(a.length > 0 ? Integer.parseInt(a[0]) : 1);
        Program prog = PlanTest.transformed("adamw", ADAMW.replace("let S = [172, 256] in\n", ""));
        Plan plan = Plan.compile(prog);
        Field f = Plan.class.getDeclaredField("ops");
        f.setAccessible(true);
        @SuppressWarnings("unchecked") List<Plan.Op> ops = (List<Plan.Op>) f.get(plan);
        Fusion.Group g = null;
        for (Plan.Op op : ops) if (op.group() != null) { if (g != null) throw new AssertionError("two groups"); g = op.group(); }
        int maxSlot = 0;
        for (int s : g.inputs()) maxSlot = Math.max(maxSlot, s);
        for (int s : g.outs()) maxSlot = Math.max(maxSlot, s);
        for (Fusion.Leaf l : g.leaves()) maxSlot = Math.max(maxSlot, l.src());
        Object[] buf = new Object[maxSlot + 1];
        SplittableRandom r = new SplittableRandom(1);
        for (int s : g.inputs()) { float[] x = new float[g.n()]; for (int i = 0; i < x.length; i++) x[i] = (float) r.nextDouble(0.1, 1); buf[s] = x; }
        for (int s : g.outs()) buf[s] = new float[g.n()];
        for (Fusion.Leaf l : g.leaves()) buf[l.src()] = new float[] {(float) r.nextDouble(0.5, 1)};
        System.out.printf("group: n=%d steps=%d regs=%d inputs=%d outs=%d leaves=%d%n", g.n(), g.steps(), g.regs(),
                g.inputs().length, g.outs().length, g.leaves().length);
        Runnable pass = Fusion.bind(g, buf);
        for (int rep = 0; rep < 8; rep++) {
            int iters = 2000;
            long t0 = System.nanoTime();
            for (int i = 0; i < iters; i++) pass.run();
            long t = System.nanoTime() - t0;
            System.out.printf("%.1f us/pass  %.2f ns/elem%n", t / 1e3 / iters, (double) t / iters / g.n());
        }
        int h = 0;
        for (int s : g.outs()) for (float x : (float[]) buf[s]) h = 31 * h + Float.floatToRawIntBits(x);
        System.out.println("hash " + Integer.toHexString(h));
    }
}
