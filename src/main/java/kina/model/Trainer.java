package kina.model;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import kina.ad.TransformAd;
import kina.eval.Tensor;
import kina.io.FileCap;
import kina.ir.DType;
import kina.ir.Program;
import kina.ir.TensorType;
import kina.kernels.Parallel;
import kina.plan.Plan;

/**
 * The training loop of a StoryLM decoder: one kina program per step (forward, transform_ad's
 * gradients, clipping and the optimizer update) run with new inputs each step by an {@link Engine}:
 * the compiled plan (the default) or the host interpreter, which give the same bits, or natively.
 * The weights and optimizer moments are carried by the step from run to run ({@link Runner}): with
 * the plan they stay in its float buffers and become Tensors only to validate and to checkpoint.
 * Deterministic: the batch of step s depends only on (seed, s), its dropout masks (with
 * {@link #dropout}) on (seed, s) too, and the learning rate only on (s, steps), so a resumed run
 * repeats an uninterrupted one bit for bit.
 *
 * <p>With {@code microBatches} M ≥ 1 a step is a micro-batch tree instead ({@link MicroBatchJob}):
 * a gradient program per micro-batch, run by {@link GradientWorkers} (in this process, or on a
 * cluster), their sums added by the {@link GradientTree}, and an update program here. The bits
 * then depend on M but not on the workers.
 *
 * <p>The loop's parts live in files of their own: the engines and runners ({@link Engine},
 * {@link Runner}), the starting weights and moments ({@link Init}), the RoPE tables
 * ({@link Rope}), the memory check and peak RSS ({@link MemoryGuard}), a batch's input tensors
 * ({@link Batches#tokens}), the config comparison of a resume ({@link Config#differences}).
 */
public final class Trainer {

    /**
     * What to train and how. {@code resume} may be null; {@code out} receives checkpoints and the plot.
     * {@code microBatches}: 0 for one program per step (the default), else M, the micro-batches of a
     * step ({@link MicroBatchJob}); {@code workers}: who computes their gradients (null: this
     * process, with {@code engine}), used only when M ≥ 1. The config's vocab is the tokenizer's; {@code cap}
     * bounds the size of each file of the checkpoint resumed from.
     */
    public record Options(Config config, int batch, int steps, Optimizer optimizer, double lr, int warmup, long seed,
                          int threads, Path out, int evalEvery, int evalBatches, int checkpointEvery, Path resume,
                          Progress.Mode progress, Engine engine, int microBatches, GradientWorkers.Factory workers,
                          Tokenizer tokenizer, FileCap cap) {
        /** The options with the default size cap on the checkpoint resumed from ({@link FileCap#DEFAULT}). */
        public Options(Config config, int batch, int steps, Optimizer optimizer, double lr, int warmup, long seed,
                       int threads, Path out, int evalEvery, int evalBatches, int checkpointEvery, Path resume,
                       Progress.Mode progress, Engine engine, int microBatches, GradientWorkers.Factory workers,
                       Tokenizer tokenizer) {
            this(config, batch, steps, optimizer, lr, warmup, seed, threads, out, evalEvery, evalBatches, checkpointEvery,
                    resume, progress, engine, microBatches, workers, tokenizer, FileCap.DEFAULT);
        }

        /** The options with one program per step, over {@code tokenizer}'s ids. */
        public Options(Config config, int batch, int steps, Optimizer optimizer, double lr, int warmup, long seed,
                       int threads, Path out, int evalEvery, int evalBatches, int checkpointEvery, Path resume,
                       Progress.Mode progress, Engine engine, Tokenizer tokenizer) {
            this(config, batch, steps, optimizer, lr, warmup, seed, threads, out, evalEvery, evalBatches, checkpointEvery,
                    resume, progress, engine, 0, null, tokenizer);
        }

        /** The options over byte-level text, with micro-batches {@code microBatches} and {@code workers}. */
        public Options(Config config, int batch, int steps, Optimizer optimizer, double lr, int warmup, long seed,
                       int threads, Path out, int evalEvery, int evalBatches, int checkpointEvery, Path resume,
                       Progress.Mode progress, Engine engine, int microBatches, GradientWorkers.Factory workers) {
            this(config, batch, steps, optimizer, lr, warmup, seed, threads, out, evalEvery, evalBatches, checkpointEvery,
                    resume, progress, engine, microBatches, workers, new ByteTokenizer());
        }

        /** The options with one program per step, for byte-level text. */
        public Options(Config config, int batch, int steps, Optimizer optimizer, double lr, int warmup, long seed,
                       int threads, Path out, int evalEvery, int evalBatches, int checkpointEvery, Path resume,
                       Progress.Mode progress, Engine engine) {
            this(config, batch, steps, optimizer, lr, warmup, seed, threads, out, evalEvery, evalBatches, checkpointEvery,
                    resume, progress, engine, 0, null, new ByteTokenizer());
        }

        /** The options with the default engine (the compiled plan), for byte-level text. */
        public Options(Config config, int batch, int steps, Optimizer optimizer, double lr, int warmup, long seed,
                       int threads, Path out, int evalEvery, int evalBatches, int checkpointEvery, Path resume,
                       Progress.Mode progress) {
            this(config, batch, steps, optimizer, lr, warmup, seed, threads, out, evalEvery, evalBatches, checkpointEvery,
                    resume, progress, Engine.PLAN);
        }
    }

    /**
     * The outcome of a run: it trained from step {@code fromStep} (0, or the resumed checkpoint's
     * step) to step {@code steps}; {@code tokens} counts only the steps this run trained.
     * {@code arenaBytes}: the train step's compiled arena (its reused buffers, as {@code kina bench}
     * reports it), and {@code validationArenaBytes} the validation plan's, each −1 with the
     * interpreter; {@code peakRssBytes}: the process's peak resident set, −1 where the system does
     * not tell it.
     */
    public record Summary(Config config, long fromStep, long steps, long tokens, double trainLoss, double valLoss, double baseline,
                          Duration time, Path checkpoint, Path plot, List<double[]> trainCurve, List<double[]> valCurve,
                          long arenaBytes, long validationArenaBytes, long peakRssBytes) {
        public String line() {
            // A resumed run says both ends, so the token count is plainly this run's share.
            String what = fromStep == 0
                    ? String.format(Locale.ROOT, "for %d steps (%,d tokens)", steps, tokens)
                    : String.format(Locale.ROOT, "from step %d to step %d (%d step%s, %,d tokens)", fromStep, steps,
                            steps - fromStep, steps - fromStep == 1 ? "" : "s", tokens);
            String memory = (arenaBytes >= 0 ? String.format(Locale.ROOT, "; arena %s", MemoryGuard.mib(arenaBytes)) : "")
                    + (validationArenaBytes >= 0 ? String.format(Locale.ROOT, " (validation %s)", MemoryGuard.mib(validationArenaBytes)) : "")
                    + (peakRssBytes > 0 ? String.format(Locale.ROOT, "; peak RSS %s", MemoryGuard.mib(peakRssBytes)) : "");
            return String.format(Locale.ROOT,
                    "trained %s %s in %s: train loss %.4f, validation loss %.4f nats/byte "
                            + "(unigram baseline %.4f); checkpoint %s; loss curve %s%s",
                    config.name(), what, human(time), trainLoss, valLoss, baseline, checkpoint, plot, memory);
        }
    }

    private final Options o;
    private final Corpus corpus;
    private final Config c;
    private final List<StoryLm.Weight> weights;
    private final Tensor cos, sin;

    public Trainer(Options options, Corpus corpus) {
        this.o = options;
        this.corpus = corpus;
        this.c = options.config();
        if (c.toy()) throw new ConfigError(c.name(), "the toy config is StoryLM-0 (vocab 8, four tokens); train on text needs a byte-level config (tiny, small, medium, long, stories15m or --config FILE.json)");
        Tokenizer tok = options.tokenizer();
        if (c.vocab() != tok.vocab())
            throw new ConfigError(c.name(), "vocab must be " + tok.vocab() + " for the " + (tok instanceof ByteTokenizer ? "byte-level" : "BPE")
                    + " tokenizer, got " + c.vocab());
        if (o.microBatches() < 0) throw new kina.ir.KinaException(null, "--micro-batches " + o.microBatches() + ": must be a power of two (1, 2, 4, …)");
        if (o.microBatches() > 0) MicroBatchJob.check(o.batch(), o.microBatches());
        else if (o.workers() != null) throw new IllegalArgumentException("workers need micro-batches (M >= 1)");
        if (o.microBatches() > 0 && !(tok instanceof ByteTokenizer))
            throw new kina.ir.KinaException(null, "--micro-batches with --tokenizer bpe: the micro-batch tree reads byte-level text only; train the BPE without --micro-batches");
        this.weights = StoryLm.weights(c);
        Tensor[] tables = Rope.tables(c);
        this.cos = tables[0];
        this.sin = tables[1];
    }

    /** Learning rate of step s (0-based): linear warm-up, then cosine decay to a tenth. */
    public double lrAt(long s) {
        if (s < o.warmup()) return o.lr() * (s + 1) / o.warmup();
        double progress = (double) (s - o.warmup()) / Math.max(1, o.steps() - o.warmup());
        return o.lr() * (0.1 + 0.9 * 0.5 * (1 + Math.cos(Math.PI * Math.min(1, progress))));
    }

    /** A checked StoryLM program after transform_ad, ready for an engine. */
    public static Program compile(Program checked) {
        return TransformAd.transform(checked);
    }

    private volatile String stopRequest;
    private boolean detectAnomaly;
    /** The dropout rate asked for (null: not given: 0, or a resumed checkpoint's), and the one this run trains with. */
    private Double dropout;
    private double rate;

    /**
     * Trains with dropout at rate {@code p} (0 ≤ p &lt; 1; not given: none, or the resumed
     * checkpoint's rate) after each layer's attention and MLP ({@link StoryLm#dropoutSites}). The
     * masks are keyed by the seed, the step and the site ({@link #dropoutKeys}), so a resumed run
     * and a run on any number of threads give the same bits; validation runs without dropout.
     */
    public Trainer dropout(double p) {
        dropout = p;
        return this;
    }

    /**
     * The keys of step {@code step}'s dropout sites, I64 [sites, 2]: row i is [K, step · sites + i]
     * with K = {@link Batches#mix}(seed, −2), a Philox key and stream that no other (step, site) of
     * the run shares.
     */
    public static Tensor dropoutKeys(long seed, long step, int sites) {
        long[] k = new long[2 * sites];
        for (int i = 0; i < sites; i++) {
            k[2 * i] = Batches.mix(seed, -2);
            k[2 * i + 1] = step * sites + i;
        }
        return Tensor.ofInts(TensorType.host(DType.I64, sites, 2), k);
    }

    /**
     * With {@code on}, the weights and optimizer moments are checked for NaN and ±Inf after every
     * step, not only before a checkpoint: the first step that makes one stops the run, naming it.
     */
    public Trainer detectAnomaly(boolean on) {
        detectAnomaly = on;
        return this;
    }

    /** The first weight or moment of {@code ts} holding a NaN or ±Inf, as a one-line error of step {@code step}; nothing when all are finite. */
    private static void requireFinite(long step, Map<String, Tensor> ts, boolean saving) {
        for (var e : ts.entrySet()) {
            Tensor t = e.getValue();
            for (int i = 0; i < t.size(); i++)
                if (!Double.isFinite(t.get(i)))
                    throw new kina.ir.KinaException(null, "training diverged at step " + step + ": " + e.getKey() + " holds " + t.get(i)
                            + " at element " + i + (saving ? "; its checkpoint was not written" : "") + " (lower --lr, or a smaller --clip)");
        }
    }

    /**
     * Asks a running {@link #run} to stop after the step in progress: it checkpoints that step
     * (when there is an --out) and throws {@link Stopped}. Safe to call from a signal handler's
     * thread; {@code why} names the cause (e.g. {@code SIGTERM}).
     */
    public void requestStop(String why) { stopRequest = why; }

    /**
     * Training stopped on request after step {@code step} (of {@code steps}); {@code checkpoint} is
     * where that step was saved, or null without --out. One line, with how to resume.
     */
    public static final class Stopped extends kina.ir.KinaException {
        private final String why;
        private final long step;
        private final Path checkpoint;

        Stopped(String why, long step, long steps, Path checkpoint) {
            super(null, "stopped by " + why + " after step " + step + " of " + steps
                    + (checkpoint == null ? " (no --out, so nothing was saved)"
                       : "; checkpoint " + checkpoint + "; resume with: kina train --resume " + checkpoint.getParent()
                         + " --steps " + steps));
            this.why = why;
            this.step = step;
            this.checkpoint = checkpoint;
        }

        /** What asked for the stop. */
        public String why() { return why; }

        /** The last completed step. */
        public long step() { return step; }

        /** Where that step was saved, or null. */
        public Path checkpoint() { return checkpoint; }
    }

    /** Trains; prints progress and notes to {@code log}; returns the summary. */
    public Summary run(PrintStream log) {
        return run(log, log);
    }

    /**
     * Trains; prints progress to {@code log} and notes (a resume that stretches the schedule) to
     * {@code notes}; returns the summary. Before any work, and before {@code out} is created: a
     * CheckpointError when the resumed checkpoint does not fit the config (weights, moments), a
     * KinaException when it is already at or beyond {@code steps} or when {@code out} cannot be a directory.
     */
    public Summary run(PrintStream log, PrintStream notes) {
        Parallel.setThreads(o.threads());
        long t0 = System.nanoTime();
        Checkpoint.Loaded ck = o.resume() != null ? Checkpoint.load(o.resume(), o.cap()) : null;
        if (ck != null) {
            if (!ck.state().config().equals(c))
                throw new CheckpointError(ck.dir(), ck.state().config().name().equals(c.name())
                        ? "was trained with config " + c.name() + " but " + ck.state().config().differences(c)
                          + " (resume with the checkpoint's --seq, or without --seq)"
                        : "was trained with config " + ck.state().config().name() + ", not " + c.name());
            ck.requireWeights(types(""));
            if (!(ck.moments().isEmpty() && ck.state().step() == 0)) ck.requireMoments(stateTypes());   // an import has none yet
            if (!Checkpoint.sameTokenizer(ck.tokenizer(), o.tokenizer()))
                throw new CheckpointError(ck.dir(), "was trained with a " + ck.tokenizer().kind() + " tokenizer of " + ck.tokenizer().vocab()
                        + " ids, not the one given (resume with the checkpoint's tokenizer)");
            long at = ck.state().step();
            if (o.steps() <= at)
                throw new kina.ir.KinaException(null, "--steps " + o.steps() + " is not beyond the checkpoint's step " + at
                        + " (" + ck.dir() + "): nothing to train");
            // lrAt depends on (s, steps): another total re-times the cosine decay from here on.
            Double was = ck.state().hyper().get("steps");
            if (was != null && was.doubleValue() != o.steps())
                notes.printf(Locale.ROOT, "note: the schedule was for %d steps; continuing to %d %s it "
                        + "(losses will differ from an uninterrupted %d-step run)%n", was.longValue(), o.steps(),
                        was.doubleValue() < o.steps() ? "stretches" : "shortens", o.steps());
            double had = ck.state().hyper().getOrDefault("dropout", 0.0);
            if (dropout != null && dropout != had)
                notes.printf(Locale.ROOT, "note: the checkpoint's steps had dropout %s; these have %s (losses will differ from an uninterrupted run)%n",
                        had, dropout);
            // The micro-batch count decides the order of the gradient's additions (0: one program per step).
            double m = ck.state().hyper().getOrDefault("micro_batches", 0.0);
            if (m != o.microBatches())
                notes.printf(Locale.ROOT, "note: the checkpoint's steps were %s; these are %s (losses will differ from an uninterrupted run)%n",
                        stepKind((int) m), stepKind(o.microBatches()));
        }
        rate = dropout != null ? dropout : ck != null ? ck.state().hyper().getOrDefault("dropout", 0.0) : 0;
        if (!(rate >= 0 && rate < 1)) throw new kina.ir.KinaException(null, "--dropout " + rate + ": must be in [0, 1)");
        if (rate > 0 && o.microBatches() > 0)
            throw new kina.ir.KinaException(null, "--dropout with --micro-batches: the micro-batch tree has no dropout yet; train without one of them");
        // Validation runs at the micro-batch size too, so a large batch needs no large forward pass.
        Runner eval = o.engine().compile(compile(StoryLm.lossOnly(c, o.batch() / pieces())));
        Batches valid = o.tokenizer() instanceof ByteTokenizer ? corpus.validBatches(o.batch(), c.seq(), o.seed())
                : corpus.validBatches(o.tokenizer(), o.batch(), c.seq(), o.seed());
        Step steps = o.microBatches() == 0 ? new WholeStep() : new TreeStep();   // closed with the progress bar
        Runner step = steps.state();
        // Weights and moments are carried by the step from run to run (in the plan's float buffers,
        // outside its arena); they come out as Tensors only to validate and to save.
        step.carry(carried(c, o.optimizer()));
        long arena, validationArena;
        try {
            arena = MemoryGuard.requireMemory(c, o.batch(), o.optimizer(), step, eval);   // before the plans allocate their arenas
            validationArena = eval instanceof Runner.PlanRunner(Plan p) ? p.arenaBytes() : -1;
            if (validationArena >= 0) arena -= validationArena;              // the step's own, as bench reports it
        } catch (RuntimeException e) {
            steps.close();
            throw e;
        }
        if (o.out() != null) requireOutDir(o.out());   // created only once the checkpoint and the step are known to fit
        double baseline = corpus.unigramEntropyNats();

        Map<String, Tensor> w = new LinkedHashMap<>();
        Map<String, Tensor> state = new LinkedHashMap<>();
        List<double[]> trainCurve = new ArrayList<>(), valCurve = new ArrayList<>();
        long start = 0;
        if (ck != null) {
            w.putAll(ck.weights());
            state.putAll(ck.moments().isEmpty() ? Init.moments(c, o.optimizer()) : ck.moments());
            start = ck.state().step();
            trainCurve.addAll(ck.state().trainLoss());
            valCurve.addAll(ck.state().valLoss());
            log.printf(Locale.ROOT, "resuming %s from %s at step %d%n", c.name(), ck.dir(), start);
        } else {
            w.putAll(Init.weights(c, o.seed()));
            state.putAll(Init.moments(c, o.optimizer()));
        }
        log.printf(Locale.ROOT, "kina train: %s (%s), corpus %s: %,d bytes train, %,d validation; unigram baseline %.4f nats/byte; %d threads, engine %s%s%n",
                c.name(), o.optimizer().describe(), corpus.name(), corpus.trainSize(), corpus.validSize(), baseline, Parallel.threads(),
                o.engine().name().toLowerCase(Locale.ROOT), steps.describe() + (rate > 0 ? "; dropout " + rate : ""));
        w.forEach(step::set);
        state.forEach(step::set);
        List<String> wNames = List.copyOf(w.keySet()), stateNames = List.copyOf(state.keySet());   // the order checkpoints are written in
        w = null;                                        // the Tensors are garbage from here on (the checkpoint's too)
        ck = null;
        state = null;
        Path lastCk = null;
        double lastLoss = Double.NaN, lastVal = valCurve.isEmpty() ? Double.NaN : valCurve.getLast()[1];
        long tokensPerStep = (long) o.batch() * c.seq();
        try (steps; Progress bar = new Progress(o.progress(), "train " + c.name(), start, o.steps(), tokensPerStep,
                Math.max(1, o.steps() / 50), log)) {
            for (long s = start; s < o.steps(); s++) {
                Map<String, Tensor> in = new HashMap<>();
                double lr = lrAt(s);
                in.put("lr", scalar(lr));
                if (o.optimizer() instanceof Optimizer.AdamW a) {
                    in.put("bc1", scalar(1 / (1 - Math.pow(a.beta1(), s + 1))));
                    in.put("bc2", scalar(1 / (1 - Math.pow(a.beta2(), s + 1))));
                } else {
                    in.put("bc1", scalar(1));
                    in.put("bc2", scalar(1));
                }
                lastLoss = steps.run(s, in);
                if (!Double.isFinite(lastLoss))
                    throw new kina.ir.KinaException(null, "training diverged at step " + (s + 1) + ": loss " + lastLoss + " (lower --lr)");
                trainCurve.add(new double[] {s + 1, lastLoss});
                boolean last = s + 1 == o.steps();
                boolean evaluate = (s + 1) % o.evalEvery() == 0 || last;
                boolean checkpoint = o.out() != null && ((s + 1) % o.checkpointEvery() == 0 || last);
                Map<String, Tensor> now = evaluate || checkpoint || detectAnomaly ? fetch(step, wNames) : null;
                if (detectAnomaly) {
                    requireFinite(s + 1, now, checkpoint);
                    requireFinite(s + 1, fetch(step, stateNames), checkpoint);
                }
                if (evaluate) {
                    lastVal = validate(eval, valid, now);
                    valCurve.add(new double[] {s + 1, lastVal});
                }
                bar.update(s + 1, lastLoss, lastVal);
                String stop = stopRequest;
                if (stop != null && !checkpoint && o.out() != null) {     // the step just completed, saved before stopping
                    now = fetch(step, wNames);
                    checkpoint = true;
                }
                if (checkpoint) {
                    Map<String, Tensor> moments = fetch(step, stateNames);
                    requireFinite(s + 1, now, true);                  // never a checkpoint of non-finite weights
                    requireFinite(s + 1, moments, true);
                    lastCk = save(s + 1, now, moments, trainCurve, valCurve);
                }
                if (stop != null && !last) throw new Stopped(stop, s + 1, o.steps(), o.out() == null ? null : lastCk);
            }
        }
        Path plot = null;
        if (o.out() != null) {
            plot = o.out().resolve("loss.png");
            LossPlot.write(plot, trainCurve, valCurve, baseline);
        }
        long done = Math.max(0, o.steps() - start);
        return new Summary(c, start, o.steps(), done * tokensPerStep, lastLoss, lastVal, baseline,
                Duration.ofNanos(System.nanoTime() - t0), lastCk, plot, trainCurve, valCurve, arena, validationArena, MemoryGuard.peakRssBytes());
    }

    /** Creates {@code out} (and its parents) up front, so a bad --out fails before training, not at the first checkpoint. */
    private static void requireOutDir(Path out) {
        if (Files.exists(out) && !Files.isDirectory(out))
            throw new kina.ir.KinaException(null, "--out " + out + ": not a directory");
        try {
            Files.createDirectories(out);
        } catch (IOException e) {
            String why = e instanceof java.nio.file.AccessDeniedException ? "permission denied"
                    : e instanceof java.nio.file.FileSystemException f && f.getReason() != null ? f.getReason()
                    : e.getClass().getSimpleName();
            throw new kina.ir.KinaException(null, "--out " + out + ": cannot create the directory: " + why);
        }
        if (!Files.isWritable(out)) throw new kina.ir.KinaException(null, "--out " + out + ": directory not writable");
    }

    /**
     * The inputs a train step carries from run to run (name → index): the weights, then each
     * optimizer state's moments ({@code state_weight}), in the order checkpoints write them.
     */
    public static Map<String, Integer> carried(Config c, Optimizer opt) {
        Map<String, Integer> m = new LinkedHashMap<>();
        List<StoryLm.Weight> ws = StoryLm.weights(c);
        for (StoryLm.Weight wt : ws) m.put(wt.name(), m.size());
        for (String st : opt.state()) for (StoryLm.Weight wt : ws) m.put(st + "_" + wt.name(), m.size());
        return m;
    }

    /** The current values of carried inputs {@code names}, as Tensors. */
    private static Map<String, Tensor> fetch(Runner r, Iterable<String> names) {
        Map<String, Tensor> m = new LinkedHashMap<>();
        for (String name : names) m.put(name, r.get(name));
        return m;
    }

    /**
     * Mean validation loss over the fixed validation batches (each in {@link #pieces} equal parts),
     * in nats per byte: for bytes the mean of the parts' losses; for a BPE the summed NLL over the
     * bytes the targets stand for.
     */
    double validate(Runner eval, Batches valid, Map<String, Tensor> w) {
        double sum = 0, nll = 0, bytes = 0;
        int n = pieces(), rows = o.batch() / n;
        for (int i = 0; i < o.evalBatches(); i++)
            for (int j = 0; j < n; j++) {
                Map<String, Tensor> in = new HashMap<>(w);
                Batches.Batch b = valid.rows(i, j * rows, (j + 1) * rows);
                batchInputs(b, in);
                double loss = eval.run(in).getFirst().floats()[0];
                sum += loss;
                nll += loss * ((long) rows * c.seq());
                bytes += b.targetBytes();
            }
        return o.tokenizer() instanceof ByteTokenizer ? sum / ((double) o.evalBatches() * n) : nll / bytes;
    }

    /** A batch's mean NLL per token in nats per byte (bytes: as it is). */
    private double perByte(double lossPerToken, Batches.Batch b) {
        return o.tokenizer() instanceof ByteTokenizer ? lossPerToken : lossPerToken * ((long) o.batch() * c.seq()) / b.targetBytes();
    }

    private static String stepKind(int microBatches) {
        return microBatches == 0 ? "one program each" : "trees of " + microBatches + " micro-batch" + (microBatches == 1 ? "" : "es");
    }

    /** The parts a batch is run in: its micro-batches, or 1 with one program per step. */
    private int pieces() { return Math.max(1, o.microBatches()); }

    /** One optimizer step as the loop sees it: the weights and moments are carried by {@link #state}. */
    private interface Step extends AutoCloseable {
        /** The program that carries the weights and moments (set, get). */
        Runner state();

        /** Runs step s with the step scalars (lr, bc1, bc2) in {@code in}; answers the step's mean loss. */
        double run(long s, Map<String, Tensor> in);

        /** For the first log line: empty, or how a step's gradients are computed. */
        String describe();

        @Override void close();
    }

    /** One program per step: forward, gradients, clipping and update together. */
    private final class WholeStep implements Step {
        final Runner step = o.engine().compile(compile(StoryLm.trainStep(c, o.batch(), o.optimizer(), rate)));
        final Batches train = o.tokenizer() instanceof ByteTokenizer ? corpus.trainBatches(o.batch(), c.seq(), o.seed())
                : corpus.trainBatches(o.tokenizer(), o.batch(), c.seq(), o.seed());

        public Runner state() { return step; }

        public double run(long s, Map<String, Tensor> in) {
            Batches.Batch batch = train.at(s);
            batchInputs(batch, in);
            if (rate > 0) in.put(StoryLm.DROPOUT_KEYS, dropoutKeys(o.seed(), s, StoryLm.dropoutSites(c)));
            return perByte(step.run(in).getFirst().floats()[0], batch);   // (loss, grad_norm): the rest is carried
        }

        public String describe() { return ""; }

        public void close() { }
    }

    /**
     * A micro-batch tree ({@link MicroBatchJob}): the workers' parts summed by the tree here, then
     * the update program, which carries the weights and moments.
     */
    private final class TreeStep implements Step {
        final MicroBatchJob job = MicroBatchJob.of(c, corpus, o.batch(), o.microBatches(), o.seed());
        final ParameterLayout layout = new ParameterLayout(c);
        final Runner update = o.engine().compile(compile(StoryLm.updateStep(c, o.optimizer(), job.scale())));
        final GradientWorkers workers = (o.workers() != null ? o.workers() : GradientWorkers.inProcess(o.engine())).open(job);

        public Runner state() { return update; }

        public double run(long s, Map<String, Tensor> in) {
            GradientTree.Subtree g = GradientTree.sum(workers.gradients(s, layout.flatten(update::get)));
            if (g.from() != 0 || g.to() != job.microBatches())
                throw new IllegalStateException("the workers summed micro-batches [" + g.from() + ", " + g.to() + ") of " + job.microBatches());
            in.putAll(layout.tensors(g.gradient(), "gsum_"));
            update.run(in);                                  // (grad_norm): the rest is carried
            return g.lossSum() * (float) job.scale();
        }

        public String describe() { return "; " + job.describe() + ", gradients " + workers.describe(); }

        public void close() { workers.close(); }
    }

    private void batchInputs(Batches.Batch b, Map<String, Tensor> in) {
        Batches.tokens(b, c.seq(), in);
        in.put("cos", cos);
        in.put("sin", sin);
    }

    private Path save(long step, Map<String, Tensor> w, Map<String, Tensor> state, List<double[]> train, List<double[]> val) {
        Map<String, Double> hyper = new LinkedHashMap<>();
        hyper.put("lr", o.lr());
        hyper.put("warmup", (double) o.warmup());
        hyper.put("steps", (double) o.steps());
        hyper.put("batch", (double) o.batch());
        hyper.put("clip", o.optimizer().clip());
        if (o.microBatches() > 0) hyper.put("micro_batches", (double) o.microBatches());
        if (rate > 0) hyper.put("dropout", rate);
        switch (o.optimizer()) {
            case Optimizer.Sgd sgd -> hyper.put("momentum", sgd.momentum());
            case Optimizer.AdamW a -> {
                hyper.put("beta1", a.beta1());
                hyper.put("beta2", a.beta2());
                hyper.put("eps", a.eps());
                hyper.put("weight_decay", a.weightDecay());
            }
        }
        Checkpoint.State st = new Checkpoint.State(c, o.optimizer() instanceof Optimizer.AdamW ? "adamw" : "sgd", hyper, step,
                o.seed(), corpus.name(), corpus.sha256(), train, val, Map.of("optimizer", o.optimizer().describe()));
        return Checkpoint.save(o.out(), st, w, state, o.tokenizer());
    }

    Map<String, TensorType> types(String prefix) {
        Map<String, TensorType> m = new LinkedHashMap<>();
        for (StoryLm.Weight wt : weights) m.put(prefix + wt.name(), TensorType.host(DType.F32, wt.shape()));
        return m;
    }

    Map<String, TensorType> stateTypes() {
        Map<String, TensorType> m = new LinkedHashMap<>();
        for (String st : o.optimizer().state()) m.putAll(types(st + "_"));
        return m;
    }

    /** A [1, 1] F32 scalar. */
    public static Tensor scalar(double v) { return Tensor.ofFloats(TensorType.host(DType.F32, 1, 1), new double[] {v}); }

    static String human(Duration d) {
        long s = d.toSeconds();
        return s >= 60 ? (s / 60) + "m" + String.format("%02d", s % 60) + "s" : String.format(Locale.ROOT, "%.1fs", d.toMillis() / 1000.0);
    }
}
