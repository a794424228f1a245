package kina.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import kina.ir.Printer;
import kina.ir.Program;
import kina.model.Config;
import kina.model.Optimizer;
import kina.model.StoryLm;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code kina model print --config NAME}: the StoryLM training step as a .kina program. */
@Command(name = "model", description = "Show a StoryLM decoder as a kina program.")
final class ModelCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "print", description = "What to do (print).") String action;
    @Option(names = "--config", paramLabel = "NAME|FILE.json", defaultValue = "tiny", description = "tiny, small, medium, long, stories15m, storylm0, or a JSON config (default: ${DEFAULT-VALUE}).")
    String config;
    @Option(names = "--batch", defaultValue = "2", description = "Sequences per step (default: ${DEFAULT-VALUE}).") int batch;
    @Option(names = "--optimizer", defaultValue = "adamw", description = "adamw or sgd (default: ${DEFAULT-VALUE}).") String optimizer;
    @Option(names = "--what", defaultValue = "train-step", description = "train-step, loss, logits, or the two halves of a --micro-batches step: "
            + "gradient (one micro-batch of --batch sequences) and update (its scale for a step of --batch sequences) (default: ${DEFAULT-VALUE}).") String what;
    @Mixin Main.Common common;

    @Override public Integer call() {
        if (!action.equals("print")) throw new kina.ir.KinaException(null, "model " + action + ": unknown action (print)");
        OptionRange.atLeast("--batch", batch, 1, "sequences per step");
        Config c = config.endsWith(".json") ? Config.load(Path.of(config), common.cap) : Config.byName(config);
        Optimizer opt = optimizer.equals("sgd") ? new Optimizer.Sgd(0.9, 1.0) : new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0);
        String header = switch (what) {
            case "train-step" -> c.toy() ? "// StoryLM-0 '" + c.name() + "' (the seeds' toy) SGD step on the mean NLL, built by kina.model.StoryLm\n"
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
            throw new kina.ir.KinaException(null, "config " + c.name() + " is the seeds' toy: only --what train-step is written for it");
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
