package kina.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import kina.model.Config;
import kina.model.Engine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code kina bench}: time the AdamW train step of a config on random byte batches; one result line. */
@Command(name = "bench", description = "Time N train steps (after a warm-up of at least 2 steps and --warmup-seconds; storylm0: 2000 steps) of a StoryLM config on random byte batches.")
final class BenchCommand implements Callable<Integer> {
    @Option(names = "--config", paramLabel = "NAME|FILE.json", defaultValue = "tiny", description = "tiny, small, medium, long, stories15m, or a JSON config (default: ${DEFAULT-VALUE}).")
    String config;
    @Option(names = "--seq", paramLabel = "T", description = "Sequence length instead of the config's, up to 4096 (e.g. long at 2048).") Integer seq;
    @Option(names = "--steps", defaultValue = "20", description = "Timed steps (default: ${DEFAULT-VALUE}).") int steps;
    @Option(names = "--batch", defaultValue = "8", description = "Sequences per step (default: ${DEFAULT-VALUE}).") int batch;
    @Option(names = "--threads", description = "Worker threads (default: the number of processors).") Integer threads;
    @Option(names = "--engine", defaultValue = "plan", description = "plan, interpreter or native (default: ${DEFAULT-VALUE}).") String engine;
    @Option(names = "--warmup-seconds", paramLabel = "SECONDS", defaultValue = "5", description = "Warm-up time before the timed steps, for the JIT to compile the kernels; past it the warm-up goes on until the JIT has compiled nothing for 1 s (at most 60 s more and 400 steps in all), unless it is 0 (default: ${DEFAULT-VALUE}; at least 2 steps either way).") double warmup;
    @Option(names = "--step-times", description = "After the result line, every timed step's milliseconds in order, and the JIT's compilation time during each.") boolean stepTimes;
    @Option(names = "--profile", description = "After the result line, the time by instruction kind (plan engine).") boolean profile;
    @Option(names = "--profile-steps", description = "Instead of --profile's kinds: every step of the plan in schedule order, with its let, what it runs and its mean milliseconds per train step (plan engine).") boolean profileSteps;
    @Option(names = "--scaling", description = "Instead: time transform_ad and planning of medium-like train steps of 1 to 32 layers.") boolean scaling;
    @Option(names = "--decode", description = "Instead: time the KV-cache decode step of sampling (one token; --steps of them after the warm-up).") boolean decode;
    @Option(names = "--full-window", description = "With --decode: time what a token costs without the cache (the window program).") boolean fullWindow;
    @Mixin Main.Common common;
    @Spec picocli.CommandLine.Model.CommandSpec spec;

    @Override public Integer call() {
        if (scaling) {
            java.io.PrintWriter out = spec.commandLine().getOut();
            for (String l : Bench.scaling()) out.println(l);
            out.flush();
            return 0;
        }
        Config c = config.endsWith(".json") ? Config.load(Path.of(config), common.cap) : Config.byName(config);
        OptionRange.atLeast("--steps", steps, 1, "timed steps");
        OptionRange.atLeast("--batch", batch, 1, "sequences per step");
        if (threads != null) OptionRange.within("--threads", threads, 1, 4096, "worker threads");
        OptionRange.nonNegative("--warmup-seconds", warmup, OptionRange.typed(spec, "--warmup-seconds"), "warm-up seconds before the timed steps");
        if (seq != null) c = c.withSeq(seq);
        int th = threads != null ? threads : Runtime.getRuntime().availableProcessors();
        if (fullWindow && !decode) throw new kina.ir.KinaException(null, "--full-window goes with --decode");
        if (decode) {
            java.io.PrintWriter out = spec.commandLine().getOut();
            out.println(Bench.decode(c, steps, th, (long) (warmup * 1e9), fullWindow));
            out.flush();
            return 0;
        }
        if (profile && profileSteps) throw new kina.ir.KinaException(null, "--profile and --profile-steps are exclusive: pick one");
        Bench.Result r = Bench.run(c, batch, steps, th, Engine.parse(engine),
                profileSteps ? Bench.Profile.STEPS : profile ? Bench.Profile.KINDS : Bench.Profile.OFF, (long) (warmup * 1e9));
        java.io.PrintWriter out = spec.commandLine().getOut();
        out.println(r.line());
        if (stepTimes) {
            out.println("  " + r.stepsLine());
            if (r.jitLine() != null) out.println("  " + r.jitLine());
        }
        for (String l : r.profile()) out.println("  profile: " + l);
        if ((profile || profileSteps) && r.profile().isEmpty()) out.println("  profile: only the plan engine is profiled");
        out.flush();
        return 0;
    }
}
