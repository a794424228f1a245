package kina.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CorpusTest {
    @TempDir Path tmp;

    private Path file(String name, byte[] b) throws IOException {
        Path f = tmp.resolve(name);
        Files.write(f, b);
        return f;
    }

    private static String error(Runnable r) {
        return assertThatThrownBy(r::run).isInstanceOf(DataError.class).actual().getMessage();
    }

    @Test void embeddedCorpusIsTheBrownExcerpt() {
        Corpus c = Corpus.load(null);
        assertThat(c.name()).isEqualTo("embedded");
        assertThat(c.size()).isBetween(900_000, 1_100_000);
        assertThat(new String(c.bytes(), 0, 60, StandardCharsets.UTF_8)).startsWith("The Fulton County Grand Jury said Friday");
        assertThat(c.trainSize() + c.validSize()).isEqualTo(c.size());
        assertThat((double) c.validSize() / c.size()).isCloseTo(0.1, within(1e-6));
        // English text in bytes: about 4.3 bits (3 nats) per character
        assertThat(c.unigramEntropyNats()).isBetween(2.8, 3.2);
        assertThat(c.sha256()).hasSize(64);
    }

    @Test void loadsAFileAndSplitsTheLastFractionForValidation() throws IOException {
        Corpus c = Corpus.load(file("t.txt", "0123456789".getBytes(StandardCharsets.UTF_8)), 0.2);
        assertThat(c.name()).isEqualTo(tmp.resolve("t.txt").toString());
        assertThat(c.trainSize()).isEqualTo(8);
        assertThat(c.validSize()).isEqualTo(2);
        assertThat(c.sha256()).isEqualTo("84d89877f0d4041efb6bf91a16f0248f2fd573e6af05c19f96bedb9f882f7882");
    }

    @Test void unigramEntropyIsOfTheTrainingBytes() {
        Corpus two = Corpus.of("t", "abababababXYZW".getBytes(StandardCharsets.UTF_8), 4.0 / 14);
        assertThat(two.unigramEntropyNats()).isCloseTo(Math.log(2), within(1e-12));
        Corpus one = Corpus.of("t", "aaaaaaaaab".getBytes(StandardCharsets.UTF_8), 0.1);
        assertThat(one.unigramEntropyNats()).isZero();
    }

    @Test void refusesBadFilesInOneLine() throws IOException {
        Path missing = tmp.resolve("missing.txt");
        assertThat(error(() -> Corpus.load(missing))).isEqualTo(missing + ": file not found");
        Path empty = file("empty.txt", new byte[0]);
        assertThat(error(() -> Corpus.load(empty))).isEqualTo(empty + ": empty file");
        Path nul = file("nul.txt", "abc\0def".getBytes(StandardCharsets.UTF_8));
        assertThat(error(() -> Corpus.load(nul))).isEqualTo(nul + ": binary file (NUL byte at offset 3)");
        byte[] ctl = new byte[100];
        Arrays.fill(ctl, (byte) 'a');
        for (int i = 0; i < 20; i++) ctl[i * 5] = 0x01;
        Path control = file("ctl.bin", ctl);
        assertThat(error(() -> Corpus.load(control))).isEqualTo(control + ": binary file (20 of 100 bytes are control characters)");
        Path latin1 = file("latin1.txt", "caf\u00e9 au lait".getBytes(StandardCharsets.ISO_8859_1));
        assertThat(error(() -> Corpus.load(latin1))).isEqualTo(latin1 + ": not UTF-8 (invalid byte sequence at offset 3)");
        assertThat(error(() -> Corpus.load(tmp))).isEqualTo(tmp + ": is a directory, not a text file");
    }

    /** UTF-16 and UTF-32 text (as "Unicode" text is saved on Windows) is named as such, with how to convert it; not "binary". */
    @Test void namesUtf16AndUtf32Text() throws IOException {
        String text = "The cat sat on the mat.\nA second line, caf\u00e9.\n";
        Path le = file("le.txt", concat(new byte[] {(byte) 0xFF, (byte) 0xFE}, text.getBytes(StandardCharsets.UTF_16LE)));
        assertThat(error(() -> Corpus.load(le))).isEqualTo(le + ": UTF-16 text (little-endian, with a byte-order mark), not UTF-8: "
                + "save it as UTF-8, e.g. iconv -f UTF-16 -t UTF-8 " + le + " > " + le + ".utf8");
        Path be = file("be.txt", text.getBytes(StandardCharsets.UTF_16BE));
        assertThat(error(() -> Corpus.load(be))).isEqualTo(be + ": UTF-16 text (big-endian), not UTF-8: "
                + "save it as UTF-8, e.g. iconv -f UTF-16BE -t UTF-8 " + be + " > " + be + ".utf8");
        Path bareLe = file("bare-le.txt", text.getBytes(StandardCharsets.UTF_16LE));
        assertThat(error(() -> Corpus.load(bareLe))).startsWith(bareLe + ": UTF-16 text (little-endian), not UTF-8: ").endsWith("iconv -f UTF-16LE -t UTF-8 "
                + bareLe + " > " + bareLe + ".utf8");
        Path wide = file("utf32.txt", concat(new byte[] {(byte) 0xFF, (byte) 0xFE, 0, 0}, text.getBytes(java.nio.charset.Charset.forName("UTF-32LE"))));
        assertThat(error(() -> Corpus.load(wide))).startsWith(wide + ": UTF-32 text (little-endian, with a byte-order mark), not UTF-8: ");
        // UTF-8 text, and a binary file with NULs in no such pattern, are not taken for it
        assertThat(Corpus.load(file("utf8.txt", text.repeat(3).getBytes(StandardCharsets.UTF_8))).bytes()).hasSize(3 * text.getBytes(StandardCharsets.UTF_8).length);
        Path zeros = file("zeros.bin", new byte[] {'a', 0, 0, 'b', 'c', 0});
        assertThat(error(() -> Corpus.load(zeros))).endsWith("binary file (NUL byte at offset 1)");
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    @Test void refusesAFileOverTheLimitBeforeReadingIt() throws IOException {
        Path big = tmp.resolve("big.txt");
        try (RandomAccessFile f = new RandomAccessFile(big.toFile(), "rw")) {
            f.setLength(Corpus.MAX_BYTES + 1); // sparse: no disk used
        }
        assertThat(error(() -> Corpus.load(big))).isEqualTo(big + ": too large: 536870913 bytes (the limit is 536870912)");
    }

    @Test void refusesATextTooShortForTheSequence() {
        Corpus c = Corpus.of("short.txt", "0123456789".getBytes(StandardCharsets.UTF_8), 0.2);
        assertThat(c.trainBatches(1, 7, 0).at(0).inputs()[0]).hasSize(7);
        assertThat(error(() -> c.trainBatches(1, 8, 0))).isEqualTo("short.txt (training part): too short for seq 8: 8 bytes, need at least 9");
        assertThat(error(() -> c.validBatches(1, 2, 0))).isEqualTo("short.txt (validation part): too short for seq 2: 2 bytes, need at least 3");
    }

    @Test void batchesAreWindowsWithNextByteTargets() {
        byte[] b = new byte[1000];
        for (int i = 0; i < b.length; i++) b[i] = (byte) ('a' + i % 26);
        Corpus c = Corpus.of("abc", b, 0.1);
        Batches.Batch batch = c.trainBatches(4, 16, 7).at(3);
        for (int r = 0; r < 4; r++) {
            int[] in = batch.inputs()[r], tg = batch.targets()[r];
            assertThat(in).hasSize(16);
            for (int t = 0; t < 16; t++) {
                assertThat(tg[t]).isEqualTo('a' + (in[t] - 'a' + 1) % 26);
                if (t > 0) assertThat(in[t]).isEqualTo(tg[t - 1]);
            }
        }
    }

    @Test void trainingWindowsStayInTheTrainingPart() {
        byte[] b = new byte[100];
        Arrays.fill(b, 0, 90, (byte) 't');
        Arrays.fill(b, 90, 100, (byte) 'v');
        Corpus c = Corpus.of("tv", b, 0.1);
        Batches tr = c.trainBatches(8, 5, 1), va = c.validBatches(8, 5, 1);
        for (long s = 0; s < 200; s++) {
            for (int[] row : tr.at(s).targets()) assertThat(row).containsOnly('t');
            for (int[] row : va.at(s).inputs()) assertThat(row).containsOnly('v');
        }
    }

    @Test void theBatchForAStepDependsOnlyOnSeedAndStep() {
        Corpus c = Corpus.load(null);
        Batches a = c.trainBatches(4, 32, 42), b = c.trainBatches(4, 32, 42);
        for (long s : new long[] {1000, 0, 5, 999_999, 5}) {  // any order: no hidden stream state
            assertThat(a.at(s).inputs()).isDeepEqualTo(b.at(s).inputs());
            assertThat(a.at(s).targets()).isDeepEqualTo(b.at(s).targets());
        }
        assertThat(a.at(1).inputs()).isNotEqualTo(a.at(2).inputs());
        assertThat(c.trainBatches(4, 32, 43).at(1).inputs()).isNotEqualTo(a.at(1).inputs());
        // validation batches are fixed by the seed
        assertThat(c.validBatches(4, 32, 42).at(0).inputs()).isDeepEqualTo(c.validBatches(4, 32, 42).at(0).inputs());
    }

    @Test void windowStartsCoverTheRange() {
        byte[] b = new byte[20];
        for (int i = 0; i < b.length; i++) b[i] = (byte) ('A' + i);
        Corpus c = Corpus.of("abc", b, 0.5);  // train = 10 bytes, seq 3 -> 7 possible starts
        boolean[] seen = new boolean[7];
        Batches tr = c.trainBatches(1, 3, 9);
        for (long s = 0; s < 500; s++) seen[tr.at(s).inputs()[0][0] - 'A'] = true;
        for (boolean x : seen) assertThat(x).isTrue();
    }
}
