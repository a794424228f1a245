package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** sample's output: a character whose bytes come from several draws prints whole, once complete. */
class Utf8StreamTest {
    @Test void holdsBackAnIncompleteCharacter() {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream ps = new PrintStream(buf, true, StandardCharsets.UTF_8);
        SampleCommand.Utf8Stream s = new SampleCommand.Utf8Stream(ps);
        byte[] text = "a\u00e9\u20ac\uD83D\uDE00b".getBytes(StandardCharsets.UTF_8);
        int printedBefore = 0;
        for (byte b : text) {
            s.write(new byte[] {b});
            byte[] so = buf.toByteArray();
            // whatever is printed so far is whole UTF-8: it decodes with no replacement character
            assertThat(new String(so, StandardCharsets.UTF_8)).doesNotContain("\uFFFD");
            assertThat(so.length).isGreaterThanOrEqualTo(printedBefore);
            printedBefore = so.length;
        }
        s.finish();
        assertThat(buf.toString(StandardCharsets.UTF_8)).isEqualTo("a\u00e9\u20ac\uD83D\uDE00b");
    }

    @Test void invalidBytesAndATruncatedEndPrintAsReplacementCharacters() {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        SampleCommand.Utf8Stream s = new SampleCommand.Utf8Stream(new PrintStream(buf, true, StandardCharsets.UTF_8));
        s.write(new byte[] {'x', (byte) 0xff, 'y', (byte) 0xe2, (byte) 0x82});
        s.finish();
        assertThat(buf.toString(StandardCharsets.UTF_8)).isEqualTo("x\uFFFDy\uFFFD");
    }
}
