package kina.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import kina.model.Checkpoint;
import kina.model.Config;
import kina.model.Corpus;
import kina.model.Optimizer;
import kina.model.Progress;
import kina.model.Trainer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code kina train}: train a StoryLM decoder on byte-level text (the embedded Brown excerpt by default). */
@Command(name = "train", description = "Train a StoryLM decoder on UTF-8 text (default: an embedded 1 MB excerpt of the Brown corpus).")
final class TrainCommand implements Callable<Integer> {
    @Option(names = "--config", paramLabel = "NAME|FILE.json", description = "tiny, small, medium, or a JSON config (default: ${DEFAULT-VALUE}).", defaultValue = "tiny")
    String config;
    @Option(names = "--data", paramLabel = "FILE", description = "A UTF-8 text file (default: the embedded corpus).")
    Path data;
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
    @Option(names = "--out", paramLabel = "DIR", description = "Checkpoints and the loss plot (default: runs/latest; with --resume, the resumed run's directory).") Path out;
    @Option(names = "--eval-every", description = "Validate every N steps (default: ${DEFAULT-VALUE}).", defaultValue = "100") int evalEvery;
    @Option(names = "--eval-batches", description = "Validation batches (default: ${DEFAULT-VALUE}).", defaultValue = "4") int evalBatches;
    @Option(names = "--checkpoint-every", description = "Checkpoint every N steps (default: ${DEFAULT-VALUE}).", defaultValue = "500") int checkpointEvery;
    @Option(names = "--resume", paramLabel = "DIR", description = "Continue from a checkpoint (a run directory or one of its step directories).") Path resume;
    @Option(names = "--engine", description = "plan (the compiled plan) or interpreter, the same bits; or native (built through MLIR and LLVM 19, within rounding) (default: ${DEFAULT-VALUE}).", defaultValue = "plan") String engine;
    @Option(names = "--no-progress", description = "Plain log lines instead of a progress bar.") boolean noProgress;
    @Mixin Main.Common common;
    @Spec picocli.CommandLine.Model.CommandSpec spec;

    /** The text the user gave for an option (as typed, not as parsed). */
    private String given(String option) {
        var m = spec.commandLine().getParseResult().matchedOption(option);
        return m == null ? "(default)" : String.join(",", m.stringValues());
    }

    @Override public Integer call() {
        Config c = config.endsWith(".json") ? Config.load(Path.of(config)) : Config.byName(config);
        if (steps < 1 || batch < 1 || evalEvery < 1 || evalBatches < 1 || checkpointEvery < 1)
            throw new kina.ir.KinaException(null, "--steps, --batch, --eval-every, --eval-batches and --checkpoint-every must be >= 1");
        Optimizer opt = switch (optimizer) {
            case "adamw" -> new Optimizer.AdamW(0.9, 0.95, 1e-8, weightDecay, clip);
            case "sgd" -> new Optimizer.Sgd(momentum, clip);
            default -> throw new kina.ir.KinaException(null, "--optimizer " + optimizer + ": unknown (adamw or sgd)");
        };
        double peak = lr != null ? lr : opt instanceof Optimizer.AdamW ? 3e-3 : 0.5;
        int wu = warmup != null ? warmup : Math.min(100, steps / 10);
        int th = threads != null ? threads : Runtime.getRuntime().availableProcessors();
        if (th < 1) throw new kina.ir.KinaException(null, "--threads must be >= 1");
        if (wu < 0) throw new kina.ir.KinaException(null, "--warmup must be >= 0 (learning-rate warm-up steps)");
        // NaN fails every comparison below, so each check is written as "not in range". The options an
        // optimizer does not use (--momentum for adamw, --weight-decay for sgd) are not checked.
        if (!(peak > 0 && peak < Double.POSITIVE_INFINITY))
            throw new kina.ir.KinaException(null, "--lr " + given("--lr") + ": the peak learning rate must be a positive finite number");
        if (opt instanceof Optimizer.Sgd && !(momentum >= 0 && momentum < 1))
            throw new kina.ir.KinaException(null, "--momentum " + given("--momentum") + ": must be in [0, 1)");
        if (opt instanceof Optimizer.AdamW && !(weightDecay >= 0 && weightDecay < Double.POSITIVE_INFINITY))
            throw new kina.ir.KinaException(null, "--weight-decay " + given("--weight-decay") + ": must be a finite number >= 0");
        if (!(clip >= 0 && clip < Double.POSITIVE_INFINITY))
            throw new kina.ir.KinaException(null, "--clip " + given("--clip") + ": must be a finite number >= 0 (0: no clipping)");
        Corpus corpus = data != null ? Corpus.load(data) : Corpus.embedded();
        // A resumed run continues in its own directory unless told otherwise, not in runs/latest.
        Path dir = out != null ? out : resume != null ? Checkpoint.runDir(resume) : Path.of("runs/latest");
        Trainer.Options o = new Trainer.Options(c, batch, steps, opt, peak, wu, seed, th, dir, evalEvery, evalBatches,
                checkpointEvery, resume, noProgress ? Progress.Mode.LINES : Progress.Mode.auto(), Trainer.Engine.parse(engine));
        Trainer.Summary s = new Trainer(o, corpus).run(System.out, System.err);
        System.out.println(s.line());
        return 0;
    }
}
