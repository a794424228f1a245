package kina.cli;

import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import kina.ad.TransformAd;
import kina.ir.Printer;
import kina.ir.Program;
import kina.plan.Plan;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kina plan FILE}: the program the compiled plan runs — after transform_ad, calls inlined
 * into one let-chain and the rewrite table applied, so every fusion shows as an IR-internal
 * instruction ({@code %elementwise(…)}, {@code %matmul_shared(…)}, …) — headed by a comment with
 * the step count and what each rule made. {@code --rules} lists the table instead.
 */
@Command(name = "plan", description = "Print the program the compiled plan runs: inlined, with the rewrite table's fusions as IR-internal instructions.")
final class PlanCommand implements Callable<Integer> {
    @Parameters(index = "0", arity = "0..1", paramLabel = "FILE", description = "The .kina source.") java.nio.file.Path file;
    @Option(names = "--rules", description = "List the rewrite table's rules, in the order they run, and what each recognises.")
    boolean rules;
    @Mixin Main.Common common;
    @Spec picocli.CommandLine.Model.CommandSpec spec;

    @Override public Integer call() {
        var out = spec.commandLine().getOut();
        if (rules) {
            for (Map.Entry<String, String> r : Plan.rules().entrySet()) out.printf("%-24s %s%n", r.getKey(), r.getValue());
            out.flush();
            return 0;
        }
        if (file == null) throw new picocli.CommandLine.ParameterException(spec.commandLine(), "kina plan: give a FILE (or --rules)");
        Plan plan = Plan.compile(TransformAd.transform(Source.load(file, common.cap)));
        Program p = plan.program();
        out.println("// " + file + " as planned: " + plan.steps() + " steps; rewrites: "
                + plan.rewrites().entrySet().stream().map(e -> e.getKey() + " " + e.getValue()).collect(Collectors.joining(", ")));
        out.print(Printer.print(p));
        out.flush();
        return 0;
    }
}
