package kina.model;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import kina.eval.Interpreter;
import kina.eval.Kernels;
import kina.eval.Parallel;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Program;
import kina.ir.TensorType;
import kina.plan.Plan;

/**
 * Times the AdamW training step of a config on random byte batches: 2 warm-up steps, then N timed
 * steps, each fed the previous step's weights and moments (as training does). With the plan engine
 * it can also time every step by instruction kind.
 */
public final class Bench {
    private Bench() {}

    /** The timings of one bench run; {@code profile} is empty unless asked for (plan engine only). */
    public record Result(Config config, int batch, int threads, Trainer.Engine engine, int steps, double minMs, double medianMs,
                         double maxMs, List<String> profile) {
        /** The one result line: {@code kina bench: config=… batch=… threads=… engine=… steps=… ms/step min=… median=… max=… tokens/s=…}. */
        public String line() {
            double tokensPerSecond = (double) batch * config.seq() / (medianMs / 1000);
            return String.format(Locale.ROOT, "kina bench: config=%s batch=%d threads=%d engine=%s steps=%d ms/step min=%.1f median=%.1f max=%.1f tokens/s=%.0f",
                    config.name(), batch, threads, engine.name().toLowerCase(Locale.ROOT), steps, minMs, medianMs, maxMs, tokensPerSecond);
        }
    }

    public static final int WARMUP = 2;

    public static Result run(Config c, int batch, int steps, int threads, Trainer.Engine engine, boolean profile) {
        if (c.toy()) throw new ConfigError(c.name(), "bench runs byte-level configs (tiny, small, medium or a JSON config)");
        if (steps < 1 || batch < 1) throw new kina.ir.KinaException(null, "--steps and --batch must be >= 1");
        Parallel.setThreads(threads);
        Optimizer.AdamW opt = new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0);
        Program p = Trainer.compile("<storylm " + c.name() + " train step>", StoryLm.trainStep(c, batch, opt));
        Plan plan = engine == Trainer.Engine.PLAN ? Plan.compile(p) : null;
        List<StoryLm.Weight> ws = StoryLm.weights(c);
        Map<String, Tensor> w = Trainer.init(c, 1), state = new LinkedHashMap<>();
        for (String st : opt.state())
            for (StoryLm.Weight wt : ws) state.put(st + "_" + wt.name(), Kernels.fill(TensorType.host(DType.F32, wt.shape()), 0.0));
        Tensor[] tables = Trainer.ropeTables(c);
        SplittableRandom rng = new SplittableRandom(42);
        double[] ms = new double[steps];
        for (int s = 0; s < WARMUP + steps; s++) {
            if (plan != null && profile && s == WARMUP) plan.profile(true);
            Map<String, Tensor> in = new HashMap<>(w);
            in.putAll(state);
            long[] ids = new long[batch * c.seq()], tg = new long[batch * c.seq()];
            for (int i = 0; i < ids.length; i++) { ids[i] = rng.nextInt(256); tg[i] = rng.nextInt(256); }
            in.put("ids", Tensor.ofInts(TensorType.host(DType.I64, batch, c.seq()), ids));
            in.put("targets", Tensor.ofInts(TensorType.host(DType.I64, (long) batch * c.seq()), tg));
            in.put("cos", tables[0]);
            in.put("sin", tables[1]);
            in.put("lr", Trainer.scalar(1e-3));
            in.put("bc1", Trainer.scalar(1 / (1 - Math.pow(opt.beta1(), s + 1))));
            in.put("bc2", Trainer.scalar(1 / (1 - Math.pow(opt.beta2(), s + 1))));
            long t0 = System.nanoTime();
            List<Tensor> out = plan != null ? plan.run(in) : Trainer.flatten(new Interpreter(in).run(p));
            long t1 = System.nanoTime();
            if (s >= WARMUP) ms[s - WARMUP] = (t1 - t0) / 1e6;
            int k = 0;
            for (StoryLm.Weight wt : ws) w.put(wt.name(), out.get(k++));
            for (String st : opt.state()) for (StoryLm.Weight wt : ws) state.put(st + "_" + wt.name(), out.get(k++));
        }
        double[] sorted = ms.clone();
        Arrays.sort(sorted);
        double median = steps % 2 == 1 ? sorted[steps / 2] : (sorted[steps / 2 - 1] + sorted[steps / 2]) / 2;
        List<String> prof = plan != null && profile ? plan.profileReport() : new ArrayList<>();
        return new Result(c, batch, threads, engine, steps, sorted[0], median, sorted[steps - 1], prof);
    }

    /**
     * transform_ad and planning time against program size: medium-like train steps (d 256, 8 heads,
     * seq 256, SwiGLU 688, batch 8, AdamW) of 1 to 32 layers; best of 5 runs each. One line per size.
     */
    public static List<String> scaling() {
        List<String> out = new ArrayList<>();
        for (int layers : new int[] {1, 2, 4, 8, 16, 32}) {
            Config c = new Config("medium-" + layers, 256, 256, 8, 8, 256, layers, 688, Config.ROPE_BASE, Config.EPS, false);
            String src = StoryLm.trainStep(c, 8, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0));
            kina.ir.Program checked = kina.check.Checker.check(kina.syntax.Parser.parse("<scaling>", src));
            long bestAd = Long.MAX_VALUE, bestPlan = Long.MAX_VALUE;
            int forward = 0, total = 0;
            for (int r = 0; r < 5; r++) {
                long t0 = System.nanoTime();
                kina.ir.Program t = kina.ad.TransformAd.transform(checked);
                long t1 = System.nanoTime();
                kina.plan.Plan.compile(t);
                long t2 = System.nanoTime();
                bestAd = Math.min(bestAd, t1 - t0);
                bestPlan = Math.min(bestPlan, t2 - t1);
                forward = count(checked.body());
                total = count(t.body());
            }
            out.add(String.format(java.util.Locale.ROOT,
                    "scaling: layers=%d instructions=%d after_transform=%d transform_ad_ms=%.1f plan_ms=%.1f",
                    layers, forward, total, bestAd / 1e6, bestPlan / 1e6));
        }
        return out;
    }

    private static int count(kina.ir.Block b) {
        int n = 0;
        for (kina.ir.Let l : b.lets()) {
            n++;
            if (l.rhs() instanceof kina.ir.Rhs.Fn f) n += count(f.body());
        }
        return n;
    }
}
