package kina.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import kina.mlir.Emitter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code kina emit-mlir FILE [-o OUT.mlir]}: the program (after transform_ad) as MLIR linalg on tensors. */
@Command(name = "emit-mlir", description = "Print the program (after transform_ad) as MLIR: linalg on tensors, one func per fn, "
        + "@main for the program and the exported @kina_entry.")
final class EmitMlirCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "FILE", description = "The .kina source.") Path file;
    @Option(names = {"-o", "--out"}, paramLabel = "OUT.mlir", description = "Write the module to OUT.mlir instead of printing it.")
    Path out;
    @Mixin Main.Common common;
    @Spec picocli.CommandLine.Model.CommandSpec spec;

    @Override public Integer call() {
        String text = Emitter.emit(Source.load(file, common.cap)).text();
        if (out != null) {
            GradCommand.writeAtomically(out, text);
            spec.commandLine().getOut().println("wrote " + out);
        } else {
            spec.commandLine().getOut().print(text);
        }
        spec.commandLine().getOut().flush();
        return 0;
    }
}
