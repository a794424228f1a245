package kina.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Stream;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Placement;
import kina.ir.Shape;
import kina.ir.TensorType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * .npy reading and writing. The fixtures under src/test/resources/npy/ were written by NumPy 2.4:
 * <pre>
 * np.save('f4_2x3.npy', np.array([[1.5, -0.0, 3.25], [1e-45, -1e9, 0.1]], dtype=np.float32))
 * np.save('f8_4.npy', np.array([0.1, -2.5, 1e300, 5e-324], dtype=np.float64))
 * np.save('i8_2x3.npy', np.array([[3, 1, 3], [-7, 0, 2**62]], dtype=np.int64))
 * np.save('b1_3.npy', np.array([True, False, True]))
 * np.save('u1_2x2.npy', np.array([[0, 1], [1, 0]], dtype=np.uint8))
 * np.save('f4_scalar.npy', np.float32(2.5))
 * np.save('f4_0x3.npy', np.zeros((0, 3), dtype=np.float32))
 * for v in [(2, 0), (3, 0)]:   # f4_v2.npy, f4_v3.npy
 *     np.lib.format.write_array(f, np.array([1.0, 2.0, 3.0], dtype=np.float32), version=v)
 * np.save('f4_fortran.npy', np.asfortranarray(np.array([[1, 2], [3, 4]], dtype=np.float32)))
 * np.save('f4_bigendian.npy', np.array([1, 2], dtype='>f4'))
 * np.save('i4.npy', np.array([1, 2], dtype=np.int32))
 * </pre>
 */
class NpyTest {
    @TempDir Path dir;

    static Path fixture(String name) {
        try {
            return Path.of(NpyTest.class.getResource("/npy/" + name).toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    static TensorType host(DType d, long... dims) { return TensorType.host(d, dims); }

    static String message(Runnable r) {
        try {
            r.run();
        } catch (FileFormatError e) {
            assertThat(e.pos()).isNull();
            assertThat(e.oneLine()).doesNotContain("\n");
            return e.getMessage();
        }
        throw new AssertionError("no FileFormatError");
    }

    static long[] bits(Tensor t) {
        long[] b = new long[t.size()];
        for (int i = 0; i < b.length; i++)
            b[i] = t.isFloating() ? Double.doubleToRawLongBits(t.floats()[i]) : t.ints()[i];
        return b;
    }

    // ---- files written by NumPy ----

    @Test void readsNumpyF32WithSignedZeroSubnormalAndRounding() {
        Tensor t = Npy.read(fixture("f4_2x3.npy"));
        assertThat(t.type()).isEqualTo(host(DType.F32, 2, 3));
        float[] want = {1.5f, -0.0f, 3.25f, 1e-45f, -1e9f, 0.1f};
        for (int i = 0; i < want.length; i++)
            assertThat(Float.floatToRawIntBits((float) t.floats()[i])).isEqualTo(Float.floatToRawIntBits(want[i]));
        assertThat(t.floats()[5]).isEqualTo((double) 0.1f);
    }

    @Test void readsNumpyF64I64AndBooleans() {
        Tensor f8 = Npy.read(fixture("f8_4.npy"));
        assertThat(f8.type()).isEqualTo(host(DType.F64, 4));
        assertThat(f8.floats()).containsExactly(0.1, -2.5, 1e300, Double.MIN_VALUE);

        Tensor i8 = Npy.read(fixture("i8_2x3.npy"));
        assertThat(i8.type()).isEqualTo(host(DType.I64, 2, 3));
        assertThat(i8.ints()).containsExactly(3, 1, 3, -7, 0, 1L << 62);

        Tensor b1 = Npy.read(fixture("b1_3.npy"));
        assertThat(b1.type()).isEqualTo(host(DType.I1, 3));
        assertThat(b1.ints()).containsExactly(1, 0, 1);

        Tensor u1 = Npy.read(fixture("u1_2x2.npy"));
        assertThat(u1.type()).isEqualTo(host(DType.I1, 2, 2));
        assertThat(u1.ints()).containsExactly(0, 1, 1, 0);
    }

    @Test void readsRankZeroEmptyAndVersions2And3() {
        Tensor s = Npy.read(fixture("f4_scalar.npy"));
        assertThat(s.type()).isEqualTo(host(DType.F32));
        assertThat(s.floats()).containsExactly(2.5);

        Tensor z = Npy.read(fixture("f4_0x3.npy"));
        assertThat(z.type()).isEqualTo(host(DType.F32, 0, 3));
        assertThat(z.size()).isZero();

        for (String v : new String[] {"f4_v2.npy", "f4_v3.npy"}) {
            Tensor t = Npy.read(fixture(v));
            assertThat(t.type()).as(v).isEqualTo(host(DType.F32, 3));
            assertThat(t.floats()).as(v).containsExactly(1.0, 2.0, 3.0);
        }
    }

    @Test void writesTheSameBytesAsNumpy() throws IOException {
        for (String name : new String[] {"f4_2x3.npy", "f8_4.npy", "i8_2x3.npy", "b1_3.npy", "f4_scalar.npy", "f4_0x3.npy"}) {
            Path out = dir.resolve(name);
            Npy.write(out, Npy.read(fixture(name)));
            assertThat(Files.readAllBytes(out)).as(name).isEqualTo(Files.readAllBytes(fixture(name)));
        }
    }

    @Test void theBundledExampleInputsHaveTheDeclaredTypes() {
        Path nll = Path.of("examples/inputs/nll");
        Npy.read(nll.resolve("logits.npy"), host(DType.F32, 1, 4, 8));
        assertThat(Npy.read(nll.resolve("targets.npy"), host(DType.I64, 1, 4)).ints()).containsExactly(3, 1, 3, 7);

        Path lm = Path.of("examples/inputs/storylm0");
        assertThat(Npy.read(lm.resolve("token_ids.npy"), host(DType.I64, 1, 4)).ints()).containsExactly(3, 1, 3, 7);
        Npy.read(lm.resolve("emb.npy"), host(DType.F32, 8, 4));
        double[] mask = Npy.read(lm.resolve("mask.npy"), host(DType.F32, 1, 1, 4, 4)).floats();
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                assertThat(Double.doubleToRawLongBits(mask[4 * i + j]))
                        .isEqualTo(Double.doubleToRawLongBits(j <= i ? 0.0 : -1e9));
        assertThat(Npy.read(lm.resolve("scale.npy"), host(DType.F32, 1, 1, 1, 1)).floats())
                .containsExactly((double) (float) (1 / Math.sqrt(2)));
        for (String w : new String[] {"wq", "wk", "wv", "wo"}) Npy.read(lm.resolve(w + ".npy"), host(DType.F32, 4, 4));
        Npy.read(lm.resolve("lm_head.npy"), host(DType.F32, 4, 8));
    }

    // ---- round trips ----

    @Test void roundTripsEveryDtypeBitForBit() {
        double[] specials = {0.0, -0.0, 1.0, -1e9, Double.MIN_VALUE, Double.MAX_VALUE, Double.NaN,
            Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0.1, 1.0 / 3.0, Math.PI};
        for (DType d : new DType[] {DType.F32, DType.F64}) {
            Tensor t = Tensor.ofFloats(host(d, 3, 4), specials.clone());
            Path f = dir.resolve(d + ".npy");
            Npy.write(f, t);
            Tensor back = Npy.read(f);
            assertThat(back.bitEquals(t)).as(d.toString()).isTrue();
            assertThat(bits(Npy.read(f, t.type()))).isEqualTo(bits(t));
        }
        Tensor i64 = Tensor.ofInts(host(DType.I64, 2, 2, 1), new long[] {Long.MIN_VALUE, -1, 0, Long.MAX_VALUE});
        Npy.write(dir.resolve("i.npy"), i64);
        assertThat(Npy.read(dir.resolve("i.npy")).bitEquals(i64)).isTrue();

        Tensor i1 = Tensor.ofInts(host(DType.I1, 5), new long[] {1, 0, 0, 1, 1});
        Npy.write(dir.resolve("b.npy"), i1);
        assertThat(Npy.read(dir.resolve("b.npy")).bitEquals(i1)).isTrue();

        Tensor scalar = Tensor.ofFloats(host(DType.F64), new double[] {-0.0});
        Npy.write(dir.resolve("s.npy"), scalar);
        assertThat(Npy.read(dir.resolve("s.npy")).bitEquals(scalar)).isTrue();
    }

    @Test void roundTripsATensorLargerThanOneChunk() {
        int n = (1 << 20) / 8 * 3 + 5;   // three 1 MiB chunks of F64 and a tail
        double[] v = new double[n];
        for (int i = 0; i < n; i++) v[i] = i * 0.5 - 7;
        Tensor t = Tensor.ofFloats(host(DType.F64, n), v);
        Npy.write(dir.resolve("big.npy"), t);
        assertThat(Npy.read(dir.resolve("big.npy")).bitEquals(t)).isTrue();
    }

    @Test void headersArePaddedTo64BytesAndEndInANewline() throws IOException {
        Npy.write(dir.resolve("h.npy"), Tensor.of(DType.F32, new long[] {7}, 1, 2, 3, 4, 5, 6, 7));
        byte[] b = Files.readAllBytes(dir.resolve("h.npy"));
        int hlen = (b[8] & 0xff) | (b[9] & 0xff) << 8;
        assertThat((10 + hlen) % 64).isZero();
        assertThat(b[10 + hlen - 1]).isEqualTo((byte) '\n');
        assertThat(new String(b, 10, hlen, StandardCharsets.ISO_8859_1))
                .startsWith("{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }");
    }

    @Test void readWithExpectedTypeTakesItsPlacement() {
        TensorType dev = new TensorType(DType.F32, Shape.of(2, 3), Placement.DEVICE);
        assertThat(Npy.read(fixture("f4_2x3.npy"), dev).type()).isEqualTo(dev);
    }

    // ---- writing is atomic ----

    @Test void writeReplacesAnExistingFileAndLeavesNoTemporary() throws IOException {
        Path f = dir.resolve("w.npy");
        Files.writeString(f, "old contents");
        Npy.write(f, Tensor.of(DType.I64, new long[] {2}, 4, 5));
        assertThat(Npy.read(f).ints()).containsExactly(4, 5);
        try (Stream<Path> s = Files.list(dir)) {
            assertThat(s.map(p -> p.getFileName().toString())).containsExactly("w.npy");
        }
    }

    @Test void aFailedWriteLeavesTheOldFileAndNoTemporary() throws IOException {
        Path target = dir.resolve("taken");
        Files.createDirectory(target);
        Files.writeString(target.resolve("keep"), "x");   // a non-empty directory cannot be renamed over
        String m = message(() -> Npy.write(target, Tensor.of(DType.F32, new long[] {1}, 1)));
        assertThat(m).startsWith(target + ": cannot write");
        try (Stream<Path> s = Files.list(dir)) {
            assertThat(s.map(p -> p.getFileName().toString())).containsExactly("taken");
        }
    }

    @Test void writeIntoAMissingDirectoryIsAFileError() {
        Path f = dir.resolve("no/such/dir/x.npy");
        assertThat(message(() -> Npy.write(f, Tensor.of(DType.F32, new long[] {1}, 1)))).startsWith(f + ": cannot write");
    }

    // ---- bad files, each with its message ----

    Path bytes(String name, byte[] content) {
        try {
            return Files.write(dir.resolve(name), content);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A version 1.0 file with the given header dict (padded here) and data. */
    Path crafted(String name, String dict, byte[] data) {
        byte[] head = header(dict);
        byte[] all = Arrays.copyOf(head, head.length + data.length);
        System.arraycopy(data, 0, all, head.length, data.length);
        return bytes(name, all);
    }

    static byte[] header(String dict) {
        int total = 10 + dict.length() + 1;
        int padded = (total + 63) / 64 * 64;
        String h = dict + " ".repeat(padded - total) + "\n";
        ByteBuffer b = ByteBuffer.allocate(padded).order(ByteOrder.LITTLE_ENDIAN);
        b.put(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0}).putShort((short) h.length());
        b.put(h.getBytes(StandardCharsets.ISO_8859_1));
        return b.array();
    }

    @Test void missingFile() {
        Path f = dir.resolve("absent.npy");
        assertThat(message(() -> Npy.read(f))).isEqualTo(f + ": no such file");
    }

    @Test void aDirectory() {
        assertThat(message(() -> Npy.read(dir))).isEqualTo(dir + ": is a directory, not an .npy file");
    }

    @Test void emptyFile() {
        Path f = bytes("empty.npy", new byte[0]);
        assertThat(message(() -> Npy.read(f))).isEqualTo(f + ": empty file (0 bytes), not an .npy file");
    }

    @Test void badMagic() {
        Path f = bytes("text.npy", "hello, world\n".getBytes(StandardCharsets.US_ASCII));
        assertThat(message(() -> Npy.read(f)))
                .isEqualTo(f + ": not an .npy file (bad magic: it must start with \\x93NUMPY)");
        Path tiny = bytes("tiny.npy", new byte[] {(byte) 0x93, 'N'});
        assertThat(message(() -> Npy.read(tiny))).contains("bad magic");
    }

    @Test void truncatedHeader() {
        Path f = bytes("cut.npy", Arrays.copyOf(header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"), 30));
        assertThat(message(() -> Npy.read(f))).startsWith(f + ": truncated .npy header");
    }

    @Test void unsupportedVersion() {
        byte[] b = header("{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }");
        b[6] = 4;
        Path f = bytes("v4.npy", b);
        assertThat(message(() -> Npy.read(f))).isEqualTo(f + ": unsupported .npy version 4.0 (kina reads 1.0, 2.0 and 3.0)");
    }

    @Test void truncatedData() throws IOException {
        byte[] whole = Files.readAllBytes(fixture("f4_2x3.npy"));
        Path f = bytes("short.npy", Arrays.copyOf(whole, whole.length - 5));
        assertThat(message(() -> Npy.read(f)))
                .isEqualTo(f + ": truncated data: shape [2, 3] of '<f4' needs 24 bytes, the file has 19 after the header");
    }

    @Test void trailingBytes() throws IOException {
        byte[] whole = Files.readAllBytes(fixture("f8_4.npy"));
        Path f = bytes("long.npy", Arrays.copyOf(whole, whole.length + 3));
        assertThat(message(() -> Npy.read(f)))
                .isEqualTo(f + ": 3 unexpected bytes after the data (shape [4] of '<f8' is 32 bytes)");
    }

    @Test void unsupportedDtype() {
        Path f = fixture("i4.npy");
        assertThat(message(() -> Npy.read(f))).isEqualTo(f
                + ": unsupported dtype '<i4'; kina reads '<f4' (F32), '<f8' (F64), '<i8' (I64), '|b1' or '|u1' (I1)");
        Path s = crafted("struct.npy", "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", new byte[4]);
        assertThat(message(() -> Npy.read(s))).startsWith(s + ": unsupported dtype (a structured dtype)");
    }

    @Test void fortranOrder() {
        Path f = fixture("f4_fortran.npy");
        assertThat(message(() -> Npy.read(f)))
                .isEqualTo(f + ": fortran_order is True; kina reads C-order arrays only (save np.ascontiguousarray(a))");
    }

    @Test void bigEndian() {
        Path f = fixture("f4_bigendian.npy");
        assertThat(message(() -> Npy.read(f)))
                .isEqualTo(f + ": big-endian data ('>f4'); kina reads little-endian only (save a.astype('<f4'))");
    }

    @Test void tooLarge() {
        Path f = crafted("huge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }", new byte[0]);
        assertThat(message(() -> Npy.read(f))).isEqualTo(f
                + ": too large: shape [100000, 100000] has 10000000000 elements; kina holds at most 2147483647 per tensor");
        Path g = crafted("huger.npy",
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", new byte[0]);
        assertThat(message(() -> Npy.read(g))).contains("too large").contains("over 2^63");
    }

    @Test void badHeaderDict() {
        Path f = crafted("nodescr.npy", "{'fortran_order': False, 'shape': (1,), }", new byte[4]);
        assertThat(message(() -> Npy.read(f))).isEqualTo(f + ": bad .npy header: no 'descr' entry");
        Path g = crafted("garbage.npy", "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", new byte[4]);
        assertThat(message(() -> Npy.read(g))).isEqualTo(g + ": bad .npy header: unexpected 'Maybe'");
        Path h = crafted("notadict.npy", "hello", new byte[0]);
        assertThat(message(() -> Npy.read(h))).startsWith(h + ": bad .npy header: expected '{'");
    }

    @Test void booleansOtherThanZeroOrOne() {
        Path f = crafted("b.npy", "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", new byte[] {0, 1, 7});
        assertThat(message(() -> Npy.read(f))).isEqualTo(f + ": element 2 is 7; an I1 ('|u1') element must be 0 or 1");
    }

    @Test void expectedTypeMismatchNamesBoth() {
        Path f = fixture("f4_2x3.npy");
        assertThat(message(() -> Npy.read(f, host(DType.F32, 3, 2)))).isEqualTo(f
                + ": holds F32 [2, 3] ('<f4'), but the program declares tensor<F32, [3, 2], @host>");
        assertThat(message(() -> Npy.read(f, host(DType.F64, 2, 3)))).isEqualTo(f
                + ": holds F32 [2, 3] ('<f4'), but the program declares tensor<F64, [2, 3], @host>");
        assertThat(message(() -> Npy.read(f, host(DType.BF16, 2, 3)))).isEqualTo(f
                + ": the program declares tensor<BF16, [2, 3], @host>, and host tensors are F32, F64, I64 or I1 only");
    }

    @Test void oneLineHasNoPosition() {
        Path f = dir.resolve("absent.npy");
        assertThatThrownBy(() -> Npy.read(f)).isInstanceOfSatisfying(FileFormatError.class,
                e -> assertThat(e.oneLine()).isEqualTo("error: " + f + ": no such file"));
    }
}
