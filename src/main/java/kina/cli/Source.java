package kina.cli;

import java.nio.file.Path;
import kina.api.Kina;
import kina.check.Checker;
import kina.ir.Program;
import kina.syntax.Parser;

/** Reads, parses and checks a .kina file, with one-line errors for bad files ({@link Kina#readSource}). */
final class Source {
    private Source() {}

    static String read(Path file) { return Kina.readSource(file); }

    /** Parse and check. */
    static Program load(Path file) {
        return Checker.check(Parser.parse(file.toString(), read(file)));
    }
}
