package kina.cli;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import kina.kernels.Parallel;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Program;
import kina.ir.TensorType;
import kina.model.Config;
import kina.model.Engine;
import kina.model.Init;
import kina.model.MemoryGuard;
import kina.model.Optimizer;
import kina.model.Rope;
import kina.model.Runner;
import kina.model.StoryLm;
import kina.model.Trainer;
import kina.plan.Plan;

/**
 * Times the AdamW training step of a config on random byte batches: warm-up steps (at least
 * {@link #WARMUP} and the caller's warm-up time, at most {@link #MAX_WARMUP}; the toy:
 * {@link #TOY_WARMUP} steps), then N timed
 * steps, each fed the previous step's weights and moments (carried by the step, as training does). With the plan engine
 * it can also time every step by instruction kind.
 */
public final class Bench {
    private Bench() {}

    /**
     * The timings of one bench run; {@code profile} is empty unless asked for (plan engine only);
     * {@code stepMs} holds every timed step's milliseconds in the order they ran, {@code jitMs} the JIT's
     * compilation time during each (empty where the JVM does not tell it); {@code heapBytesPerStep} the
     * heap the JVM's threads allocated per timed step, on average (−1 where the JVM does not tell it).
     */
    public record Result(Config config, int batch, int threads, Engine engine, int steps, double minMs, double medianMs,
                         double maxMs, List<String> profile, double[] stepMs, double[] jitMs, double heapBytesPerStep, long arenaBytes) {
        /**
         * The one result line: {@code kina bench: config=… batch=… threads=… engine=… steps=… ms/step min=… median=…
         * max=… tokens/s=… peak_rss_mb=… heap_kb_per_step=…}; peak_rss_mb (the process's peak resident set, as
         * bench/torch_reference.py prints it) only where /proc/self/status tells it, {@code arena_mb} (the plan's arena, the step's reused buffers, from
         * {@code arenaBytes}; with the interpreter, which has none, it is left out), heap_kb_per_step (the heap the
         * JVM's threads allocate per timed step; with the plan engine the arena and the kernels' scratch are reused,
         * so it is the outputs, the pool's bookkeeping and code C2 has not compiled yet) only where the JVM tells it.
         */
        public String line() {
            double tokensPerSecond = (double) batch * config.seq() / (medianMs / 1000);
            return String.format(Locale.ROOT, "kina bench: config=%s batch=%d seq=%d threads=%d engine=%s steps=%d ms/step min=%s median=%s max=%s tokens/s=%.0f",
                    config.name(), batch, config.seq(), threads, engine.name().toLowerCase(Locale.ROOT), steps, ms(minMs, config.toy()), ms(medianMs, config.toy()), ms(maxMs, config.toy()), tokensPerSecond)
                    + rssField()
                    + (arenaBytes >= 0 ? String.format(Locale.ROOT, " arena_mb=%.1f", arenaBytes / (1024.0 * 1024)) : "")
                    + (heapBytesPerStep >= 0 ? String.format(Locale.ROOT, " heap_kb_per_step=%.1f", heapBytesPerStep / 1024) : "");
        }

        /** {@code steps_ms: t1 t2 …}: every timed step in the order it ran (shows whether slow steps come in phases). */
        public String stepsLine() {
            StringBuilder b = new StringBuilder("steps_ms:");
            for (double v : stepMs) b.append(' ').append(ms(v, config.toy()));
            return b.toString();
        }

        /**
         * {@code jit_ms: c1 c2 …}: the JIT compilers' time during each timed step (their threads share the
         * cores with the step), or null where the JVM does not tell it.
         */
        public String jitLine() {
            if (jitMs.length == 0) return null;
            StringBuilder b = new StringBuilder("jit_ms:");
            for (double v : jitMs) b.append(' ').append(String.format(Locale.ROOT, "%.0f", v));
            return b.toString();
        }
    }

    /** {@code " peak_rss_mb=N"} (MiB, as bench/torch_reference.py prints it), or "" where the system does not tell it. */
    static String rssField() {
        long b = MemoryGuard.peakRssBytes();
        return b > 0 ? String.format(Locale.ROOT, " peak_rss_mb=%.0f", b / (1024.0 * 1024)) : "";
    }

    private static final java.lang.management.ThreadMXBean THREADS = java.lang.management.ManagementFactory.getThreadMXBean();

    /** The heap bytes all the JVM's threads have allocated so far, or −1 where it does not tell (com.sun.management). */
    static long allocatedBytes() {
        return THREADS instanceof com.sun.management.ThreadMXBean t && t.isThreadAllocatedMemorySupported() && t.isThreadAllocatedMemoryEnabled()
                ? t.getTotalThreadAllocatedBytes() : -1;
    }

    private static final java.lang.management.CompilationMXBean JIT = java.lang.management.ManagementFactory.getCompilationMXBean();

    /** Whether the JVM reports the JIT compilers' time. */
    static boolean jitKnown() { return JIT != null && JIT.isCompilationTimeMonitoringSupported(); }

    /** The JIT compilers' accumulated time in ms (0 where the JVM does not monitor it). */
    static long jitMillis() { return jitKnown() ? JIT.getTotalCompilationTime() : 0; }

    /** Warm-up steps at least (the first runs also bind the plan's buffers)… */
    public static final int WARMUP = 2;
    /**
     * … and the caller's warm-up time at least (the CLI's --warmup-seconds, default 5), then, when that
     * time is not zero, on until the JIT has compiled nothing for {@link #JIT_QUIET_NANOS} of steps;
     * at most this many steps and {@link #MAX_WARMUP_NANOS} past the caller's time. Until C2 has
     * compiled a kernel, its Vector API code runs boxed, many times slower: the small step needs
     * about 4 s of steps before its per-step allocation and time settle, but a fused group that runs
     * once per step (FusedCode) can wait 10–20 s in C2's queue on 2 cores, and after a fixed 5 s its
     * groups still took 0.5–0.8 ms a step each against under 0.1 once compiled. Training pays this once per run; the bench times the steady state that the rest of a
     * run sees.
     */
    public static final int MAX_WARMUP = 400;
    /** A quiet JIT for this long ends the warm-up (where the JVM reports compilation time; else the time alone does). */
    public static final long JIT_QUIET_NANOS = 1_000_000_000L;
    /** The longest warm-up past the caller's time while the JIT keeps compiling. */
    public static final long MAX_WARMUP_NANOS = 60_000_000_000L;

    /**
     * Whether the warm-up ends before step {@code s} (0-based): {@link #WARMUP} steps and the caller's
     * {@code warmupNanos} are done and, when that time is not 0 and the JVM reports JIT time
     * ({@code jitKnown}), the JIT has compiled nothing for {@link #JIT_QUIET_NANOS}
     * ({@code sinceJit}: since the end of the last step during which a compilation finished, or since
     * the start; the JVM counts finished compilations, in whole milliseconds);
     * or {@link #MAX_WARMUP} steps or {@link #MAX_WARMUP_NANOS} past the caller's time have run.
     */
    static boolean warmUpOver(int s, long elapsed, long sinceJit, long warmupNanos, boolean jitKnown) {
        if (s < WARMUP) return false;
        if (s >= MAX_WARMUP || elapsed - warmupNanos >= MAX_WARMUP_NANOS) return true;
        return elapsed >= warmupNanos && (warmupNanos == 0 || !jitKnown || sinceJit >= JIT_QUIET_NANOS);
    }

    /** What {@code kina bench} profiles: nothing, the time by instruction kind, or every step of the schedule in order. */
    public enum Profile { OFF, KINDS, STEPS }

    /**
     * The result of the timed steps' {@code ms} (and the JIT's time during each, {@code jit}): min,
     * median and max; with a plan and a profile asked for, its lines: {@code warmUp} and what the
     * times below it are, the arena (the step's reused buffers), then the plan's profile by kind or
     * by step in schedule order.
     */
    private static Result result(Config c, int batch, int threads, Engine engine, Plan plan, Profile profile, String warmUp,
                                 double[] ms, double[] jit, long heapBytes) {
        int steps = ms.length;
        double[] sorted = ms.clone();
        Arrays.sort(sorted);
        double median = steps % 2 == 1 ? sorted[steps / 2] : (sorted[steps / 2 - 1] + sorted[steps / 2]) / 2;
        List<String> prof = new ArrayList<>();
        if (plan != null && profile != Profile.OFF) {
            prof.add(warmUp + (profile == Profile.STEPS ? "; times below: mean per train step over the " : "; times below summed over the ")
                    + steps + " timed ones");
            prof.add(String.format(Locale.ROOT, "arena %.1f MB in %d buffers (%.1f MB without reuse), constants %.1f MB, %d of %d carried values updated in place",
                    plan.arenaBytes() / 1e6, plan.arenaBuffers(), plan.slotBytes() / 1e6, plan.constantBytes() / 1e6,
                    plan.carriedInPlace(), plan.carried().size()));
            prof.addAll(profile == Profile.STEPS ? plan.profileSteps() : plan.profileReport());
        }
        return new Result(c, batch, threads, engine, steps, sorted[0], median, sorted[steps - 1], prof, ms, jit,
                heapBytes < 0 ? -1 : (double) heapBytes / steps, plan == null ? -1 : plan.arenaBytes());
    }
    /** Warm-up steps of the toy (storylm0) step: it takes microseconds, so the JIT needs many more. */
    public static final int TOY_WARMUP = 2000;

    /** Milliseconds with one decimal, or four for the toy (its step takes microseconds). */
    static String ms(double v, boolean toy) { return String.format(Locale.ROOT, toy ? "%.4f" : "%.1f", v); }

    /**
     * Times {@code steps} train steps of {@code c} after the warm-up ({@link #WARMUP} steps and
     * {@code warmupNanos} (negative counts as 0), then until the JIT is quiet unless {@code warmupNanos}
     * is 0; at most {@link #MAX_WARMUP} steps and {@link #MAX_WARMUP_NANOS} past {@code warmupNanos};
     * the toy: {@link #TOY_WARMUP} steps); see {@link #warmUpOver}.
     *
     * @throws kina.ir.KinaException when steps or batch is below 1
     */
    public static Result run(Config c, int batch, int steps, int threads, Engine engine, Profile profile, long warmupNanos) {
        if (steps < 1 || batch < 1) throw new kina.ir.KinaException(null, "--steps and --batch must be >= 1");
        if (c.toy()) return runToy(c, steps, threads, engine, profile);
        Parallel.setThreads(threads);
        warmupNanos = Math.max(0, warmupNanos);
        Stepper step = new Stepper(c, batch, engine);
        Plan plan = step.plan;
        double[] ms = new double[steps], jit = new double[jitKnown() ? steps : 0];
        long warmFrom = System.nanoTime(), lastJit = warmFrom;   // elapsed times are compared: a huge warm-up must not overflow
        int warm = -1;                                   // steps of warm-up, once they are over
        long warmNanos = 0, heap = allocatedBytes() < 0 ? -1 : 0;
        for (int s = 0; warm < 0 || s < warm + steps; s++) {
            long now = System.nanoTime();
            if (warm < 0 && warmUpOver(s, now - warmFrom, now - lastJit, warmupNanos, jit.length > 0)) {
                warm = s;
                warmNanos = now - warmFrom;
                if (plan != null && profile != Profile.OFF) plan.profile(true);
            }
            Map<String, Tensor> in = step.next();            // built outside the timed window
            long a0 = heap < 0 ? 0 : allocatedBytes(), c0 = jitMillis(), t0 = System.nanoTime();
            step.run(in);
            long t1 = System.nanoTime();
            if (warm >= 0 && heap >= 0) heap += allocatedBytes() - a0;
            if (warm < 0 && jitMillis() > c0) lastJit = t1;
            if (warm >= 0) ms[s - warm] = (t1 - t0) / 1e6;
            if (warm >= 0 && jit.length > 0) jit[s - warm] = jitMillis() - c0;
        }
        return result(c, batch, threads, engine, plan, profile, String.format(Locale.ROOT, "warm-up: %d train steps in %.1f s", warm, warmNanos / 1e9), ms, jit, heap);
    }

    /**
     * One config's AdamW train step, ready to run again and again: weights and moments initialised and
     * carried by the step, as training does; each {@link #run} feeds a fresh random byte batch (seeded,
     * the same sequence in every process) and the bias corrections of the next step number. Used by
     * {@link #run} and by bench/StepAB.java, which drives two builds' steppers side by side in one JVM.
     */
    public static final class Stepper {
        private final Config c;
        private final int batch;
        private final Optimizer.AdamW opt = new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0);
        private final Runner step;
        private final Tensor[] tables;
        private final SplittableRandom rng = new SplittableRandom(42);
        private int s;
        /** The compiled plan, or null with the interpreter. */
        final Plan plan;

        /**
         * Compiles the train step of {@code c} (batch sequences per step) for {@code engine}.
         *
         * @throws IllegalArgumentException for the toy config (its step is {@link #runToy}'s) or batch &lt; 1
         * @throws kina.ir.KinaException (one line) when the plan would not fit in the JVM's heap ({@link Trainer#requireMemory})
         */
        public Stepper(Config c, int batch, Engine engine) {
            if (c.toy()) throw new IllegalArgumentException("the toy config has its own step (runToy)");
            if (batch < 1) throw new IllegalArgumentException("batch must be >= 1, got " + batch);
            this.c = c;
            this.batch = batch;
            Program p = Trainer.compile(StoryLm.trainStep(c, batch, opt));
            step = engine.compile(p);
            plan = step instanceof Runner.PlanRunner(Plan pl) ? pl : null;
            step.carry(Trainer.carried(c, opt));          // weights and moments, as training carries them
            MemoryGuard.requireMemory(c, batch, opt, step);     // before the first run allocates the arena
            Init.weights(c, 1).forEach(step::set);
            Init.moments(c, opt).forEach(step::set);
            tables = Rope.tables(c);
        }

        /** The next step's inputs: a fresh random batch and the bias corrections of the next step number. */
        public Map<String, Tensor> next() {
            Map<String, Tensor> in = new HashMap<>();
            long[] ids = new long[batch * c.seq()], tg = new long[batch * c.seq()];
            for (int i = 0; i < ids.length; i++) { ids[i] = rng.nextInt(256); tg[i] = rng.nextInt(256); }
            in.put("ids", Tensor.ofInts(TensorType.host(DType.I64, batch, c.seq()), ids));
            in.put("targets", Tensor.ofInts(TensorType.host(DType.I64, (long) batch * c.seq()), tg));
            in.put("cos", tables[0]);
            in.put("sin", tables[1]);
            in.put("lr", Trainer.scalar(1e-3));
            in.put("bc1", Trainer.scalar(1 / (1 - Math.pow(opt.beta1(), s + 1))));
            in.put("bc2", Trainer.scalar(1 / (1 - Math.pow(opt.beta2(), s + 1))));
            s++;
            return in;
        }

        /** Runs one train step on {@code in} (from {@link #next}). */
        public void run(Map<String, Tensor> in) { step.run(in); }

        /** Runs the next train step: {@code run(next())}. */
        public void run() { run(next()); }
    }

    /**
     * The toy's SGD step (StoryLm.toyTrainStep, batch 1): token_ids and targets [1, T] random in
     * [0, vocab), weights N(0, 0.3) rounded to float, mask 0 on and below the diagonal and -1e9 above,
     * scale 1/√hd, lr 0.1; every step is fed the previous step's 10 updated parameters. {@link #TOY_WARMUP}
     * warm-up steps, then {@code steps} timed ones.
     */
    static Result runToy(Config c, int steps, int threads, Engine engine, Profile profile) {
        Parallel.setThreads(threads);
        Program p = Trainer.compile(StoryLm.toyTrainStep(c));
        Runner step = engine.compile(p);
        Plan plan = step instanceof Runner.PlanRunner(Plan pl) ? pl : null;
        int v = c.vocab(), d = c.dModel(), t = c.seq();
        SplittableRandom init = new SplittableRandom(1);
        String[] names = {"emb", "mask", "scale", "wq", "wk", "wv", "wo", "lm_head"};
        long[][] shapes = {{v, d}, {1, 1, t, t}, {1, 1, 1, 1}, {d, d}, {d, d}, {d, d}, {d, d}, {d, v}};
        Map<String, Tensor> w = new LinkedHashMap<>();
        for (int k = 0; k < names.length; k++) {
            int n = Math.toIntExact(new kina.ir.Shape(shapes[k]).vol());
            double[] x = new double[n];
            for (int i = 0; i < n; i++)
                x[i] = switch (names[k]) {
                    case "mask" -> i % t > i / t ? (double) (float) -1e9 : 0.0;
                    case "scale" -> (double) (float) (1 / Math.sqrt(c.headDim()));
                    default -> (double) (float) (0.3 * init.nextGaussian());
                };
            w.put(names[k], Tensor.ofFloats(TensorType.host(DType.F32, shapes[k]), x));
        }
        Map<String, Integer> carried = new LinkedHashMap<>();      // result k feeds names[k]
        for (int k = 0; k < names.length; k++) carried.put(names[k], k);
        step.carry(carried);
        w.forEach(step::set);
        Tensor lr = Trainer.scalar((double) (float) 0.1);
        SplittableRandom rng = new SplittableRandom(42);
        double[] ms = new double[steps], jit = new double[jitKnown() ? steps : 0];
        long heap = allocatedBytes() < 0 ? -1 : 0;
        for (int s = 0; s < TOY_WARMUP + steps; s++) {
            if (plan != null && profile != Profile.OFF && s == TOY_WARMUP) plan.profile(true);
            Map<String, Tensor> in = new HashMap<>();
            long[] ids = new long[t], tg = new long[t];
            for (int i = 0; i < t; i++) { ids[i] = rng.nextInt(v); tg[i] = rng.nextInt(v); }
            in.put("token_ids", Tensor.ofInts(TensorType.host(DType.I64, 1, t), ids));
            in.put("targets", Tensor.ofInts(TensorType.host(DType.I64, 1, t), tg));
            in.put("lr", lr);
            long a0 = heap < 0 ? 0 : allocatedBytes(), c0 = jitMillis(), t0 = System.nanoTime();
            step.run(in);
            long t1 = System.nanoTime();
            if (s >= TOY_WARMUP && heap >= 0) heap += allocatedBytes() - a0;
            if (s >= TOY_WARMUP) ms[s - TOY_WARMUP] = (t1 - t0) / 1e6;
            if (s >= TOY_WARMUP && jit.length > 0) jit[s - TOY_WARMUP] = jitMillis() - c0;
        }
        return result(c, 1, threads, engine, plan, profile, "warm-up: " + TOY_WARMUP + " train steps", ms, jit, heap);
    }

    /**
     * Times {@code steps} KV-cache decode steps of {@code c} (initial weights; random tokens at
     * positions cycling through the window) after the warm-up of {@link #run}, or with
     * {@code fullWindow} the window program a token costs without the cache: one line, {@code kina
     * bench: config=… decode threads=… steps=… ms/token min=… median=… max=… tokens/s=… peak_rss_mb=…} (tokens/s: the
     * median's; peak_rss_mb where the system tells it).
     */
    public static String decode(Config c, int steps, int threads, long warmupNanos, boolean fullWindow) {
        if (steps < 1) throw new kina.ir.KinaException(null, "--steps must be >= 1");
        if (c.toy()) throw new kina.ir.KinaException(null, "--decode: the toy config has no decode step (no norms, no RoPE)");
        Parallel.setThreads(threads);
        kina.model.Sampler s = new kina.model.Sampler(c, Init.weights(c, 1),
                fullWindow ? kina.model.Sampler.Mode.FULL_WINDOW : kina.model.Sampler.Mode.KV_CACHE);
        SplittableRandom rng = new SplittableRandom(42);
        int[] text = new int[c.seq()];
        for (int i = 0; i < text.length; i++) text[i] = rng.nextInt(c.vocab());
        s.prefill(text, 0, 1);
        double[] ms = new double[steps];
        long warmFrom = System.nanoTime(), lastJit = warmFrom;
        int warm = -1;
        warmupNanos = Math.max(0, warmupNanos);
        for (int i = 0; warm < 0 || i < warm + steps; i++) {
            long now = System.nanoTime();
            if (warm < 0 && warmUpOver(i, now - warmFrom, now - lastJit, warmupNanos, jitKnown())) warm = i;
            int id = rng.nextInt(c.vocab()), pos = 1 + i % (c.seq() - 1);
            long c0 = jitMillis(), t0 = System.nanoTime();
            if (fullWindow) s.prefill(text, 0, pos + 1);
            else s.decode(id, pos);
            long t1 = System.nanoTime();
            if (warm < 0 && jitMillis() > c0) lastJit = t1;
            if (warm >= 0) ms[i - warm] = (t1 - t0) / 1e6;
        }
        double[] sorted = ms.clone();
        Arrays.sort(sorted);
        double median = steps % 2 == 1 ? sorted[steps / 2] : (sorted[steps / 2 - 1] + sorted[steps / 2]) / 2;
        return String.format(Locale.ROOT, "kina bench: config=%s decode%s threads=%d steps=%d ms/token min=%.3f median=%.3f max=%.3f tokens/s=%.0f",
                c.name(), fullWindow ? "=full-window" : "", threads, steps, sorted[0], median, sorted[steps - 1], 1000 / median) + rssField();
    }

    /**
     * transform_ad and planning time against program size: medium-like train steps (d 256, 8 heads,
     * seq 256, SwiGLU 688, batch 8, AdamW) of 1 to 32 layers; best of 5 runs each. One line per size.
     */
    public static List<String> scaling() {
        List<String> out = new ArrayList<>();
        for (int layers : new int[] {1, 2, 4, 8, 16, 32}) {
            Config c = new Config("medium-" + layers, 256, 256, 8, 8, 256, layers, 688, Config.ROPE_BASE, Config.EPS, false);
            kina.ir.Program checked = StoryLm.trainStep(c, 8, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0));
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
