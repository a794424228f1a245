package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import kina.ir.Syntax;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/language.md cannot drift from the implementation: every {@code ```kina} block on the page is
 * a whole program, run through the command as a user would ({@code check}, then {@code grad} when it
 * holds a handle, then {@code run --random-inputs 1}), and each line {@code // ⇒ TEXT} in it must
 * appear in what the last command printed (whitespace runs compared as one space). The fence's
 * info string says what to expect:
 * <ul>
 *   <li>{@code kina}: every command succeeds; with a handle, the printed gradient checks and runs,
 *       like {@code run --oracle}, to the same output;</li>
 *   <li>{@code kina check}: only {@code check} (and {@code grad}) run, for programs the host does not
 *       execute ({@code @device}, BF16);</li>
 *   <li>{@code kina error}: one of the commands fails with exit 1, and the expected lines are in its
 *       one-line error ({@code example.kina} names the file);</li>
 *   <li>{@code kina grad}: the block is exactly what {@code grad} printed for the block before it.</li>
 * </ul>
 * And every form of the surface table has an example on the page.
 */
class LanguageDocTest {
    static final Path DOC = Path.of("docs/language.md");
    private static final Pattern EXPECT = Pattern.compile("// ⇒ (.*)");

    record Block(int line, String mode, String text) {}

    record Result(int code, String out, String err) {}

    @TempDir Path dir;

    static List<Block> blocks() throws IOException {
        List<String> lines = Files.readAllLines(DOC);
        List<Block> out = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            if (!lines.get(i).startsWith("```kina")) continue;
            String mode = lines.get(i).substring("```kina".length()).strip();
            int start = i + 1;
            StringBuilder b = new StringBuilder();
            for (i++; i < lines.size() && !lines.get(i).startsWith("```"); i++) b.append(lines.get(i)).append('\n');
            out.add(new Block(start, mode, b.toString()));
        }
        return out;
    }

    private static Result kina(String... args) {
        StringWriter out = new StringWriter(), err = new StringWriter();
        int code = Main.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
        return new Result(code, out.toString(), err.toString());
    }

    private static String squeeze(String s) { return s.replaceAll("\\s+", " ").strip(); }

    /** What {@code grad} printed for the last block that held a handle (examples run in page order). */
    private String lastGrad;

    @TestFactory Stream<DynamicTest> everyExampleDoesWhatThePageSays() throws IOException {
        List<Block> blocks = blocks();
        assertThat(blocks).as("kina blocks in " + DOC).hasSizeGreaterThan(50);
        return blocks.stream().map(b -> DynamicTest.dynamicTest("docs/language.md:" + b.line() + " " + b.mode(), () -> example(b)));
    }

    private void example(Block b) throws IOException {
        assertThat(b.mode()).as("the fence's info string").isIn("", "check", "error", "grad");
        Path file = dir.resolve("example.kina"), printed = dir.resolve("printed.kina");
        Files.writeString(file, b.text());
        String name = file.toString();
        if (b.mode().equals("grad"))
            assertThat(b.text().strip()).as("what bin/kina grad printed for the block before").isEqualTo(lastGrad);
        boolean handle = b.text().contains("handle ");
        List<String[]> steps = new ArrayList<>();
        steps.add(new String[] {"check", name});
        if (handle) steps.add(new String[] {"grad", name});
        if (!b.mode().equals("check")) steps.add(new String[] {"run", name, "--random-inputs", "1"});
        Result last = null;
        for (String[] step : steps) {
            last = kina(step);
            if (last.code() != 0) break;
            if (step[0].equals("grad")) {
                lastGrad = last.out().replace(name, "example.kina").strip();
                Files.writeString(printed, last.out());
                Result c = kina("check", printed.toString());
                assertThat(c.code()).as("the printed gradient checks: " + c.err()).isZero();
            }
        }
        String seen;
        if (b.mode().equals("error")) {
            assertThat(last.code()).as("an error example fails with exit 1").isEqualTo(1);
            assertThat(last.err().strip()).as("one line").doesNotContain("\n");
            seen = last.err().replace(name, "example.kina");
        } else {
            assertThat(last.code()).as(String.join(" ", steps.getLast()) + ": " + last.err()).isZero();
            seen = last.out();
            if (handle && !b.mode().equals("check")) {
                Result oracle = kina("run", name, "--random-inputs", "1", "--oracle");
                assertThat(oracle.out()).as("recorded == oracle").isEqualTo(seen);
                Result again = kina("run", printed.toString(), "--random-inputs", "1");
                assertThat(again.out()).as("the printed gradient runs to the same output: " + again.err()).isEqualTo(seen);
            }
        }
        Matcher m = EXPECT.matcher(b.text());
        while (m.find()) assertThat(squeeze(seen)).as("// ⇒ line of the example").contains(squeeze(m.group(1)));
    }

    /** A new surface form fails here until the page shows it ({@code x.name(} or {@code %name(} in a kina block). */
    @Test void everyFormOfTheSurfaceTableHasAnExample() throws IOException {
        String all = String.join("\n", blocks().stream().map(Block::text).toList());
        for (Syntax.Form f : Syntax.forms()) {
            String use = f.internal() ? "%" + f.name() + "(" : "." + f.name() + "(";
            assertThat(all).as("an example of " + use + "…) in " + DOC).contains(use);
        }
    }
}
