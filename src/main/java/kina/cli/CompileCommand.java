package kina.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.Callable;
import kina.ad.TransformAd;
import kina.ir.Program;
import kina.mlir.CHeader;
import kina.mlir.Emitter;
import kina.mlir.Toolchain;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kina compile FILE -o lib.so [--header lib.h]}: the program (after transform_ad) lowered
 * through MLIR and LLVM 19 to a shared object, taken from the build cache when the same module was
 * built before (the object {@code run --engine native} builds of the same file), and with
 * {@code --header} its C interface ({@link CHeader}; docs/native.md).
 */
@Command(name = "compile", description = "Build the program (after transform_ad) into a shared object through MLIR and LLVM 19 "
        + "(mlir-19-tools, clang-19); built objects are cached by content.")
final class CompileCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "FILE", description = "The .kina source.") Path file;
    @Option(names = {"-o", "--out"}, paramLabel = "LIB.so", required = true, description = "Where to write the shared object.")
    Path out;
    @Option(names = "--header", paramLabel = "LIB.h", description = "Also write the object's C header: the entry, every input and output "
            + "by name with its dtype and shape, the calling convention, and an index check to run before a call (docs/native.md).")
    Path header;
    @Mixin Main.Common common;
    @Spec picocli.CommandLine.Model.CommandSpec spec;

    @Override public Integer call() {
        Program p = TransformAd.transform(Source.load(file, common.cap));
        Emitter.Module m = Emitter.emitNative(p);
        Path so = Toolchain.build(m);
        GradCommand.writeAtomically(out, tmp -> Files.copy(so, tmp, StandardCopyOption.REPLACE_EXISTING));
        if (header != null)
            GradCommand.writeAtomically(header, CHeader.of(p, m.entry(), CHeader.prefix(header), out.getFileName().toString(), file.toString()));
        var pw = spec.commandLine().getOut();
        pw.println("wrote " + out + ": kina_call(void **descriptors) takes the memref descriptors of "
                + m.entry().inputs().size() + " inputs (" + String.join(", ", m.entry().inputs().stream().map(a -> a.name() + " " + a.type()).toList())
                + ") then of " + m.entry().outputs().size() + " outputs (" + String.join(", ", m.entry().outputs().stream().map(Object::toString).toList()) + ")");
        if (header != null) pw.println("wrote " + header + ": its C interface (prefix " + CHeader.prefix(header) + "_)");
        pw.flush();
        return 0;
    }
}
