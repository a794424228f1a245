package kina.cli;

import static kina.cli.CliTest.kina;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import kina.cli.CliTest.Result;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Command-line mistakes: one error line and a help hint, exit 2; -h/--help on every command, exit 0. */
class CliUsageTest {

    /** Exit 2, stderr = "error: …" naming the problem, then "see: CMD --help"; no usage block. */
    static void assertUsageError(Result r, String text, String cmd) {
        assertThat(r.code()).as(r.err()).isEqualTo(2);
        assertThat(r.out()).isEmpty();
        assertThat(r.err().strip().lines().toList()).as(r.err()).hasSize(2);
        assertThat(r.err()).startsWith("error: ").contains(text).contains("\nsee: " + cmd + " --help")
                .doesNotContain("Usage:").doesNotContain("option option").doesNotContain("Exception");
    }

    @Test void aMapOptionWithoutEqualsSaysHowToWriteIt() {
        assertUsageError(kina("run", "examples/nll.kina", "--input", "logits", "examples/inputs/nll/logits.npy"),
                "--input takes NAME=PATH, not 'logits' (write --input logits=PATH)", "kina run");
    }

    @Test void aBadNumberNamesTheOptionAndTheValue() {
        assertUsageError(kina("run", "examples/nll.kina", "--random-inputs", "abc"),
                "--random-inputs takes a whole number (SEED), not 'abc'", "kina run");
        assertUsageError(kina("bench", "--steps", "x"), "--steps takes a whole number, not 'x'", "kina bench");
        assertUsageError(kina("sample", "--temperature", "hot"), "--temperature takes a number, not 'hot'", "kina sample");
    }

    @Test void missingUnknownAndRepeatedArguments() {
        assertUsageError(kina("run", "examples/nll.kina", "--random-inputs"), "--random-inputs needs a value", "kina run");
        assertUsageError(kina("run"), "kina run needs FILE (the .kina source)", "kina run");
        assertUsageError(kina("run", "examples/nll.kina", "--ful"), "unknown option --ful for kina run (did you mean --full?)", "kina run");
        assertUsageError(kina("run", "a.kina", "b.kina"), "unexpected argument 'b.kina' for kina run", "kina run");
        assertUsageError(kina("bogus"), "unknown command 'bogus'; the commands are check, run,", "kina");
        assertUsageError(kina("--bogus"), "unknown option --bogus for kina", "kina");
        assertUsageError(kina("bench", "--steps", "1", "--steps", "2"), "--steps is given twice", "kina bench");
    }

    @Test void everyCommandTakesHelp() {
        for (String cmd : new String[] {"check", "run", "grad", "train", "sample", "bench", "model"})
            for (String flag : new String[] {"-h", "--help"}) {
                Result r = kina(cmd, flag);
                assertThat(r.code()).as(cmd + " " + flag + ": " + r.err()).isZero();
                assertThat(r.out()).as(cmd).startsWith("Usage: kina " + cmd).contains("-h, --help");
                assertThat(r.err()).isEmpty();
            }
        Result help = kina("--help");
        assertThat(help.code()).isZero();
        assertThat(help.out()).startsWith("Usage: kina");
    }

    /** No command is a usage error: the usage, which lists the commands, on stderr, and exit 2. */
    @Test void noCommandPrintsTheUsageAndExits2() {
        Result top = kina();
        assertThat(top.code()).isEqualTo(2);
        assertThat(top.out()).isEmpty();
        assertThat(top.err()).startsWith("Usage: kina").contains("Commands:").contains("train").contains("sample");
    }

    @Test void truncatedJsonInputIsOneCleanLine(@TempDir Path dir) throws Exception {
        Path t = Files.writeString(dir.resolve("t.json"), "[[1, 2");
        Result r = kina("run", "examples/nll.kina", "--input", "targets=" + t, "--random-inputs", "1");
        CliTest.assertOneLine(r, "error: " + t + ": not valid JSON at line 1, column 7:",
                "unexpected end of input (the array opened at line 1, column 2 is not closed)");
        assertThat(r.err()).doesNotContain("Source").doesNotContain("REDACTED").doesNotContain("StreamReadFeature");
    }

    @Test void anInputWithNoNameIsOneLine() {
        CliTest.assertOneLine(kina("run", "examples/nll.kina", "--input", "=x.npy"), "error:", "no name before '='");
    }
}
