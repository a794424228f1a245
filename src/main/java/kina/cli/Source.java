package kina.cli;

import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import kina.check.Checker;
import kina.ir.KinaException;
import kina.ir.Program;
import kina.syntax.Parser;

/** Reads, parses and checks a .kina file, with one-line errors for bad files. */
final class Source {
    private Source() {}

    static final long MAX_BYTES = 64L << 20;

    static String read(Path file) {
        try {
            if (Files.isDirectory(file)) throw new KinaException(null, file + ": is a directory, not a .kina file");
            long n = Files.size(file);
            if (n > MAX_BYTES) throw new KinaException(null, file + ": too large (" + n + " bytes; the limit is " + MAX_BYTES + ")");
            byte[] bytes = Files.readAllBytes(file);
            return StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(bytes)).toString();
        } catch (NoSuchFileException e) {
            throw new KinaException(null, file + ": no such file");
        } catch (CharacterCodingException e) {
            throw new KinaException(null, file + ": not UTF-8 text");
        } catch (IOException e) {
            throw new KinaException(null, file + ": cannot read (" + e.getMessage() + ")");
        }
    }

    /** Parse and check. */
    static Program load(Path file) {
        return Checker.check(Parser.parse(file.toString(), read(file)));
    }
}
