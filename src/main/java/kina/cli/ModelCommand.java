package kina.cli;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import kina.ir.Printer;
import kina.ir.Program;
import kina.model.BatchFile;
import kina.model.ByteTokenizer;
import kina.model.Checkpoint;
import kina.model.Config;
import kina.model.Corpus;
import kina.model.Init;
import kina.model.Optimizer;
import kina.model.StoryLm;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code kina model print --config NAME}: the StoryLM training step as a .kina program; {@code model
 * init} and {@code model batches}: the initial weights and the token batches {@code kina train}
 * would use, for a host that runs the compiled step without the JVM (docs/native.md).
 */
@Command(name = "model", description = "Show a StoryLM decoder as a kina program (print), or write what a host needs to train it "
        + "without the JVM: its initial weights as a checkpoint (init --out DIR) or its token batches (batches --steps N --out FILE).")
final class ModelCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "print|init|batches", description = "What to do: print the program, write the initial "
            + "weights (a step-0 checkpoint, as train --seed makes them), or write the batches of train's first --steps steps.") String action;
    @Option(names = "--config", paramLabel = "NAME|FILE.json", defaultValue = "tiny", description = "tiny, small, medium, long, stories15m, storylm0, or a JSON config (default: ${DEFAULT-VALUE}).")
    String config;
    @Option(names = "--batch", defaultValue = "2", description = "Sequences per step (default: ${DEFAULT-VALUE}).") int batch;
    @Option(names = "--optimizer", defaultValue = "adamw", description = "adamw or sgd (default: ${DEFAULT-VALUE}).") String optimizer;
    @Option(names = "--what", defaultValue = "train-step", description = "train-step, loss, logits, or the two halves of a --micro-batches step: "
            + "gradient (one micro-batch of --batch sequences) and update (its scale for a step of --batch sequences) (default: ${DEFAULT-VALUE}).") String what;
    @Option(names = "--seed", defaultValue = "1", description = "init and batches: the seed of train's initial weights and batches (default: ${DEFAULT-VALUE}).")
    long seed;
    @Option(names = "--steps", description = "batches: how many steps' batches to write.") Integer steps;
    @Option(names = "--data", paramLabel = "FILE", description = "batches: the UTF-8 text train reads (default: the embedded corpus).") Path data;
    @Option(names = "--out", paramLabel = "PATH", description = "init: the checkpoint directory to write; batches: the file to write.") Path out;
    @Mixin Main.Common common;
    @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

    @Override public Integer call() {
        OptionRange.atLeast("--batch", batch, 1, "sequences per step");
        Config c = config.endsWith(".json") ? Config.load(Path.of(config), common.cap) : Config.byName(config);
        return switch (action) {
            case "print" -> print(c);
            case "init" -> init(c);
            case "batches" -> batches(c);
            default -> throw new kina.ir.KinaException(null, "model " + action + ": unknown action (print, init or batches)");
        };
    }

    /** A step-0 checkpoint of Init.weights, without moments (a resumed run starts them at +0.0, as a fresh one). */
    private int init(Config c) {
        Path dir = required(out, "init", "DIR", "the checkpoint directory to write");
        byteLevel(c, "init");
        Runs.requireNoOtherRun(dir, null);
        Checkpoint.State st = new Checkpoint.State(c, "none", Map.of(), 0, seed, "none", "", List.of(), List.of(),
                Map.of("initialized", "kina model init --seed " + seed));
        Path step = Checkpoint.save(dir, st, Init.weights(c, seed), Map.of());
        println("wrote " + step + ": the initial weights of " + c.name() + " (seed " + seed + ") and no optimizer moments "
                + "(they start at +0.0); train from it with kina train --resume " + dir);
        return 0;
    }

    /** train's batches of steps [0, steps): BatchFile's format. */
    private int batches(Config c) {
        Path file = required(out, "batches", "FILE", "the file to write");
        if (steps == null) throw new kina.ir.KinaException(null, "model batches: give --steps N, how many steps' batches to write");
        OptionRange.atLeast("--steps", steps, 1, "steps");
        byteLevel(c, "batches");
        Corpus corpus = data != null ? Corpus.load(data, common.cap) : Corpus.embedded();
        BatchFile.write(file, corpus.trainBatches(batch, c.seq(), seed), steps);
        println("wrote " + file + ": the batches of steps 1 to " + steps + " (" + batch + " × " + c.seq() + " ids and targets, I64) from "
                + corpus.name() + ", seed " + seed);
        return 0;
    }

    private static Path required(Path p, String what, String label, String why) {
        if (p == null) throw new kina.ir.KinaException(null, "model " + what + ": give --out " + label + ", " + why);
        return p;
    }

    private static void byteLevel(Config c, String what) {
        if (c.toy() || c.vocab() != ByteTokenizer.VOCAB)
            throw new kina.ir.KinaException(null, "model " + what + ": config " + c.name() + " is not a byte-level decoder (vocab "
                    + ByteTokenizer.VOCAB + "); init and batches write what train uses for text");
    }

    private void println(String line) {
        spec.commandLine().getOut().println(line);
        spec.commandLine().getOut().flush();
    }

    private int print(Config c) {
        Optimizer opt = optimizer.equals("sgd") ? new Optimizer.Sgd(0.9, 1.0) : new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0);
        String header = switch (what) {
            case "train-step" -> c.toy() ? "// StoryLM-0 '" + c.name() + "' (the toy decoder) SGD step on the mean NLL, built by kina.model.StoryLm\n"
                    : StoryLm.header(c, batch, opt);
            case "loss" -> "// StoryLM '" + c.name() + "' validation loss, built by kina.model.StoryLm\n";
            case "logits" -> "// StoryLM '" + c.name() + "' logits for sampling, built by kina.model.StoryLm\n";
            case "gradient" -> "// StoryLM '" + c.name() + "' micro-batch gradient of the summed NLL, built by kina.model.StoryLm: "
                    + batch + " sequences of " + c.seq() + "\n";
            case "update" -> "// StoryLM '" + c.name() + "' update from a micro-batch tree's gradient sum, built by kina.model.StoryLm; "
                    + opt.describe() + "\n";
            default -> throw new kina.ir.KinaException(null, "--what " + what + ": unknown (train-step, loss, logits, gradient or update)");
        };
        if (c.toy() && !what.equals("train-step"))
            throw new kina.ir.KinaException(null, "config " + c.name() + " is the toy decoder StoryLM-0: only --what train-step is written for it");
        Program p = switch (what) {
            case "train-step" -> c.toy() ? StoryLm.toyTrainStep(c) : StoryLm.trainStep(c, batch, opt);
            case "loss" -> StoryLm.lossOnly(c, batch);
            case "gradient" -> StoryLm.gradientStep(c, batch);
            case "update" -> StoryLm.updateStep(c, opt, 1.0 / ((double) batch * c.seq()));
            default -> StoryLm.logits(c);
        };
        System.out.print(header + Printer.print(p));
        return 0;
    }
}
