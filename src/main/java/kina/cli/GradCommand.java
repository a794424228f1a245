package kina.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.Callable;
import kina.ad.TransformAd;
import kina.ir.KinaException;
import kina.ir.Printer;
import kina.ir.Program;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code kina grad FILE}: print the program after transform_ad; {@code --dot OUT} writes a Graphviz graph. */
@Command(name = "grad", description = "Print the program after transform_ad (every handle ... with reverseMode replaced by its gradient fn).")
final class GradCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "FILE", description = "The .kina source.") Path file;
    @Option(names = "--dot", paramLabel = "OUT", description = "Write a Graphviz graph of forward and backward lets to OUT (.dot).")
    Path dot;
    @Mixin Main.Common common;
    @Spec picocli.CommandLine.Model.CommandSpec spec;

    @Override public Integer call() {
        Program p = TransformAd.transform(Source.load(file, common.cap));
        if (dot != null) {
            writeAtomically(dot, Dot.render(p));
            spec.commandLine().getOut().println("wrote " + dot);
        } else {
            spec.commandLine().getOut().print(Printer.print(p));
        }
        spec.commandLine().getOut().flush();
        return 0;
    }

    static void writeAtomically(Path target, String text) {
        writeAtomically(target, tmp -> Files.writeString(tmp, text, StandardCharsets.UTF_8));
    }

    /** What fills the temporary file that then replaces the target. */
    interface Fill { void into(Path tmp) throws IOException; }

    /**
     * Fills a temporary file beside {@code target}, then renames it into place (nothing half written);
     * one-line error naming the target and why, never the temporary file (a missing folder by its name).
     */
    static void writeAtomically(Path target, Fill fill) {
        Path abs = target.toAbsolutePath();
        Path dir = abs.getParent();
        if (!Files.isDirectory(dir))
            throw new KinaException(null, target + ": cannot write: " + (Files.exists(dir) ? dir + " is not a directory"
                    : "the folder " + dir + " does not exist (create it first)"));
        try {
            Path tmp = Files.createTempFile(abs.getParent(), "." + abs.getFileName(), ".tmp");
            try {
                fill.into(tmp);
                Files.move(tmp, abs, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } finally {
                Files.deleteIfExists(tmp);
            }
        } catch (IOException e) {
            String why = e instanceof java.nio.file.AccessDeniedException ? "permission denied in " + dir
                    : e instanceof java.nio.file.FileSystemException f && f.getReason() != null ? f.getReason()
                    : e.getClass().getSimpleName();
            throw new KinaException(null, target + ": cannot write (" + why + ")");
        }
    }
}
