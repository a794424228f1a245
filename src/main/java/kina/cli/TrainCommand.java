package kina.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import kina.model.BpeTokenizer;
import kina.model.ByteTokenizer;
import kina.model.Checkpoint;
import kina.model.Config;
import kina.model.Corpus;
import kina.model.Engine;
import kina.model.GradientWorkers;
import kina.model.Optimizer;
import kina.model.Progress;
import kina.model.Tokenizer;
import kina.model.Trainer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code kina train}: train a StoryLM decoder on byte-level text (the embedded Brown excerpt by default). */
@Command(name = "train", description = "Train a StoryLM decoder on UTF-8 text (default: an embedded 1 MB excerpt of the Brown corpus).")
final class TrainCommand implements Callable<Integer> {
    @Option(names = "--config", paramLabel = "NAME|FILE.json", description = "tiny, small, medium, long, stories15m, or a JSON config (default: ${DEFAULT-VALUE}).", defaultValue = "tiny")
    String config;
    @Option(names = "--data", paramLabel = "FILE", description = "A UTF-8 text file (default: the embedded corpus).")
    Path data;
    @Option(names = "--seq", paramLabel = "T", description = "Sequence length instead of the config's, up to 4096 (e.g. long at 4096).") Integer seq;
    @Option(names = "--steps", description = "Optimizer steps (default: ${DEFAULT-VALUE}).", defaultValue = "2000") int steps;
    @Option(names = "--batch", description = "Sequences per step (default: ${DEFAULT-VALUE}).", defaultValue = "8") int batch;
    @Option(names = "--lr", description = "Peak learning rate (default: 3e-3 for adamw, 0.5 for sgd).") Double lr;
    @Option(names = "--warmup", description = "Linear warm-up steps (default: steps / 10, at most 100).") Integer warmup;
    @Option(names = "--optimizer", description = "adamw or sgd (default: ${DEFAULT-VALUE}).", defaultValue = "adamw") String optimizer;
    @Option(names = "--momentum", description = "SGD momentum (default: ${DEFAULT-VALUE}).", defaultValue = "0.9") double momentum;
    @Option(names = "--weight-decay", description = "AdamW decoupled weight decay (default: ${DEFAULT-VALUE}).", defaultValue = "0.01") double weightDecay;
    @Option(names = "--clip", description = "Global gradient-norm clip, 0 for none (default: ${DEFAULT-VALUE}).", defaultValue = "1.0") double clip;
    @Option(names = "--seed", description = "Seed of the initial weights and the batches (default: ${DEFAULT-VALUE}).", defaultValue = "1") long seed;
    @Option(names = "--threads", description = "Worker threads (default: the number of processors).") Integer threads;
    @Option(names = "--out", paramLabel = "DIR", description = "Checkpoints and the loss plot, a directory holding no other run (default: a new runs/run-NNNN, "
            + "which runs/latest then points to; with --resume, the resumed run's directory).") Path out;
    @Option(names = "--eval-every", description = "Validate every N steps (default: ${DEFAULT-VALUE}).", defaultValue = "100") int evalEvery;
    @Option(names = "--eval-batches", description = "Validation batches (default: ${DEFAULT-VALUE}).", defaultValue = "4") int evalBatches;
    @Option(names = "--checkpoint-every", description = "Checkpoint every N steps (default: ${DEFAULT-VALUE}).", defaultValue = "500") int checkpointEvery;
    @Option(names = "--resume", paramLabel = "DIR", description = "Continue from a checkpoint (a run directory or one of its step directories).") Path resume;
    @Option(names = "--engine", description = "plan (the compiled plan) or interpreter, the same bits; or native (built through MLIR and LLVM 19, within rounding) (default: ${DEFAULT-VALUE}).", defaultValue = "plan") String engine;
    @Option(names = "--no-progress", description = "Plain log lines instead of a progress bar.") boolean noProgress;
    @Option(names = "--micro-batches", paramLabel = "M", description = "Cut each step's batch into M micro-batches (a power of two "
            + "dividing --batch) summed by a fixed tree: gradient accumulation, and the bits a --spark run reproduces (default: one program per step).")
    Integer microBatches;
    @Option(names = "--spark", paramLabel = "MASTER", description = "Compute the micro-batch gradients on Apache Spark: local[N], "
            + "local-cluster[n,c,mb] or spark://host:port (needs the kina-spark module: bin/build-spark).")
    String spark;
    @Option(names = "--workers", paramLabel = "N", description = "With --spark: Spark tasks per step, a power of two dividing M "
            + "(default: the N of local[N], else M).")
    Integer workers;
    @Option(names = "--tokenizer", paramLabel = "byte|bpe", description = "byte: one token per UTF-8 byte; bpe: a byte-level BPE trained on the training text, stored in the checkpoint (default: byte; with --resume, the checkpoint's).") String tokenizer;
    @Option(names = "--vocab", paramLabel = "N", description = "The BPE's vocabulary size, at least 260 (default: ${DEFAULT-VALUE}); the config's vocab becomes N.", defaultValue = "1024") int vocab;
    @Option(names = "--dropout", paramLabel = "P", description = "Dropout rate after each layer's attention and MLP, in [0, 1); the masks are keyed by "
            + "--seed and the step, so a resumed run and any --threads give the same bits (default: none; with --resume, the checkpoint's).")
    Double dropout;
    @Option(names = "--detect-anomaly", description = "Check the weights and moments for NaN and Inf after every step (not only before a checkpoint); stop at the first step that makes one.")
    boolean detectAnomaly;
    @Mixin Main.Common common;
    @Spec picocli.CommandLine.Model.CommandSpec spec;

    /** The distributed engine on the class path (bin/kina puts the kina-spark module there once it is built). */
    private static GradientWorkers.Provider provider() {
        return java.util.ServiceLoader.load(GradientWorkers.Provider.class).findFirst().orElseThrow(() -> new kina.ir.KinaException(null,
                "--spark needs the kina-spark module, which is not built: run bin/build-spark (it downloads Apache Spark 4.2.0 "
                        + "from Maven Central once, about 220 MB), then run this again"));
    }

    @Override public Integer call() {
        boolean configGiven = spec.commandLine().getParseResult().hasMatchedOption("--config");
        Checkpoint.Loaded ck = resume != null ? Checkpoint.load(resume, common.cap) : null;
        // a resumed run keeps its checkpoint's config and tokenizer unless told otherwise
        Config c = ck != null && !configGiven ? ck.state().config()
                : config.endsWith(".json") ? Config.load(Path.of(config), common.cap) : Config.byName(config);
        if (seq != null) c = c.withSeq(seq);
        if (tokenizer != null && !tokenizer.equals("byte") && !tokenizer.equals("bpe"))
            throw new kina.ir.KinaException(null, "--tokenizer " + tokenizer + ": unknown (byte or bpe)");
        boolean vocabGiven = spec.commandLine().getParseResult().hasMatchedOption("--vocab");
        if (vocabGiven && !"bpe".equals(tokenizer) && ck == null)
            throw new kina.ir.KinaException(null, "--vocab is the BPE's size: give it with --tokenizer bpe");
        if (ck != null && (tokenizer != null && !tokenizer.equals(ck.tokenizer().kind()) || vocabGiven && vocab != ck.tokenizer().vocab()))
            throw new kina.ir.KinaException(null, "--resume " + resume + ": the checkpoint has a " + ck.tokenizer().kind() + " tokenizer of "
                    + ck.tokenizer().vocab() + " ids; leave --tokenizer and --vocab out to keep it");
        if ("bpe".equals(tokenizer) && ck == null)
            OptionRange.within("--vocab", vocab, kina.model.BpeTokenizer.FIRST_PIECE + 1, 1 << 20,
                    "a byte-level BPE's ids: 3 specials, 256 bytes and the space, then its pieces");
        OptionRange.atLeast("--steps", steps, 1, "optimizer steps");
        OptionRange.atLeast("--batch", batch, 1, "sequences per step");
        OptionRange.atLeast("--eval-every", evalEvery, 1, "steps between validations");
        OptionRange.atLeast("--eval-batches", evalBatches, 1, "validation batches");
        OptionRange.atLeast("--checkpoint-every", checkpointEvery, 1, "steps between checkpoints");
        if (warmup != null) OptionRange.atLeast("--warmup", warmup, 0, "learning-rate warm-up steps");
        if (threads != null) OptionRange.within("--threads", threads, 1, 4096, "worker threads");
        Optimizer opt = switch (optimizer) {
            case "adamw" -> new Optimizer.AdamW(0.9, 0.95, 1e-8, weightDecay, clip);
            case "sgd" -> new Optimizer.Sgd(momentum, clip);
            default -> throw new kina.ir.KinaException(null, "--optimizer " + optimizer + ": unknown (adamw or sgd)");
        };
        double peak = lr != null ? lr : opt instanceof Optimizer.AdamW ? 3e-3 : 0.5;
        int wu = warmup != null ? warmup : Math.min(100, steps / 10);
        int th = threads != null ? threads : Runtime.getRuntime().availableProcessors();
        // The options an optimizer does not use (--momentum for adamw, --weight-decay for sgd) are not checked.
        OptionRange.positive("--lr", peak, OptionRange.typed(spec, "--lr"), "the peak learning rate");
        if (opt instanceof Optimizer.Sgd) OptionRange.halfOpen("--momentum", momentum, OptionRange.typed(spec, "--momentum"), 0, 1, "SGD momentum");
        if (opt instanceof Optimizer.AdamW) OptionRange.nonNegative("--weight-decay", weightDecay, OptionRange.typed(spec, "--weight-decay"), "AdamW decoupled weight decay");
        OptionRange.nonNegative("--clip", clip, OptionRange.typed(spec, "--clip"), "the global gradient-norm clip; 0: no clipping");
        if (dropout != null) OptionRange.halfOpen("--dropout", dropout, OptionRange.typed(spec, "--dropout"), 0, 1, "the dropout rate");
        if (microBatches != null && microBatches < 1)
            throw new kina.ir.KinaException(null, "--micro-batches " + microBatches + ": must be a power of two (1, 2, 4, …)");
        if (workers != null) OptionRange.atLeast("--workers", workers, 1, "Spark tasks per step");
        if (spark == null && workers != null) throw new kina.ir.KinaException(null, "--workers needs --spark MASTER (the workers are Spark tasks)");
        int m = microBatches != null ? microBatches : 0;
        GradientWorkers.Factory cluster = null;
        if (spark != null) {
            GradientWorkers.Provider p = provider();
            int n = workers != null ? workers : p.workers(spark);
            if (m == 0 && n == 0)
                throw new kina.ir.KinaException(null, "--spark " + spark + ": give --workers N or --micro-batches M (the master does not say how many tasks)");
            if (m == 0) m = n;                           // one micro-batch per task unless told otherwise
            if (n == 0) n = m;
            cluster = p.connect(spark, n);
        }
        Corpus corpus = data != null ? Corpus.load(data, common.cap) : Corpus.embedded();
        Tokenizer tok;
        if (ck != null) {
            tok = ck.tokenizer();
        } else if ("bpe".equals(tokenizer)) {
            long t0 = System.nanoTime();
            tok = BpeTokenizer.train(java.util.Arrays.copyOf(corpus.bytes(), corpus.trainSize()), vocab);
            System.out.printf(java.util.Locale.ROOT, "kina train: a byte-level BPE of %d ids trained on the training part in %.1f s%n",
                    vocab, (System.nanoTime() - t0) / 1e9);
        } else {
            tok = new ByteTokenizer();
        }
        if (c.vocab() != tok.vocab()) c = c.withVocab(tok.vocab());
        // A resumed run continues in its own directory unless told otherwise; a new one gets a fresh
        // numbered directory under runs/ (runs/latest points to it); an --out holding another run is refused.
        Path resumedRun = resume != null ? Checkpoint.runDir(resume) : null;
        if (out != null) Runs.requireNoOtherRun(out, resumedRun);
        Engine eng = Engine.parse(engine);
        Runs.Claim claim = out == null && resume == null ? Runs.claim(Path.of("runs")) : null;
        Path dir = out != null ? out : claim != null ? claim.dir() : resumedRun;
        if (claim != null) {
            if (claim.note() != null) System.out.println("kina train: " + claim.note());
            System.out.println("kina train: this run writes to " + dir + " (" + claim.latest() + " points to it)");
        }
        Trainer.Summary s;
        try {
            Trainer.Options o = new Trainer.Options(c, batch, steps, opt, peak, wu, seed, th, dir, evalEvery, evalBatches,
                    checkpointEvery, resume, noProgress ? Progress.Mode.LINES : Progress.Mode.auto(), eng, m, cluster, tok, common.cap);
            Trainer trainer = new Trainer(o, corpus).detectAnomaly(detectAnomaly);
            if (dropout != null) trainer.dropout(dropout);
            try (var _ = Interruption.onSignals(trainer::requestStop)) {
                s = trainer.run(System.out, System.err);
            }
        } catch (Trainer.Stopped stopped) {
            System.out.flush();
            System.err.println(stopped.getMessage());
            return 128 + Interruption.number(stopped.why());
        } catch (RuntimeException | Error e) {
            if (claim != null) claim.release();              // refused before it wrote anything: no empty run left behind
            throw e;
        }
        System.out.println(s.line());
        return 0;
    }
}
