package kina.cli;

import java.nio.file.Path;
import kina.api.Kina;
import kina.check.Checker;
import kina.io.FileCap;
import kina.ir.Program;
import kina.syntax.Parser;

/** Reads, parses and checks a .kina file, with one-line errors for bad files ({@link Kina#readSource}). */
final class Source {
    private Source() {}

    /** The text of {@code file}, at most {@code cap} bytes. */
    static String read(Path file, FileCap cap) { return Kina.readSource(file, cap); }

    /** Parse and check {@code file}, at most {@code cap} bytes. */
    static Program load(Path file, FileCap cap) {
        return Checker.check(Parser.parse(file.toString(), read(file, cap)));
    }
}
