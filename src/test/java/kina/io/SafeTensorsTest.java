package kina.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import kina.eval.Tensor;
import kina.ir.DType;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * safetensors reading and writing. {@code reference.safetensors} was written by the reference
 * implementation (Python safetensors 0.8.0, NumPy 2.4):
 * <pre>
 * save_file({"w": np.array([[1.5, -0.0, 3.25], [1e-45, -1e9, 0.1]], dtype=np.float32),
 *            "d": np.array([0.1, -2.5, 1e300, 5e-324], dtype=np.float64),
 *            "i": np.array([3, -7, 2**62], dtype=np.int64),
 *            "b": np.array([True, False, True]),
 *            "s": np.array(2.5, dtype=np.float32)},
 *           "reference.safetensors", metadata={"format": "pt", "note": "kina fixture"})
 * </pre>
 * It stores the tensors in the order i, d, s, w, b (by alignment, then name).
 */
class SafeTensorsTest {
    @TempDir Path tmp;

    static byte[] reference() throws IOException {
        try (InputStream in = SafeTensorsTest.class.getResourceAsStream("/kina/model/reference.safetensors")) {
            return in.readAllBytes();
        }
    }

    private String error(byte[] bytes) throws IOException {
        Path f = tmp.resolve("x.safetensors");
        Files.write(f, bytes);
        return assertThatThrownBy(() -> SafeTensors.read(f)).isInstanceOf(FileFormatError.class).actual().getMessage()
                .substring(f.toString().length() + 2);
    }

    @Test void readsTheReferenceImplementationsFile() throws IOException {
        SafeTensors.Contents c = SafeTensors.decode(Path.of("reference.safetensors"), reference());
        assertThat(c.metadata()).containsExactly(Map.entry("format", "pt"), Map.entry("note", "kina fixture"));
        assertThat(c.tensors().keySet()).containsExactly("i", "d", "s", "w", "b");
        assertThat(c.tensors().get("w").bitEquals(Tensor.of(DType.F32, new long[] {2, 3}, 1.5, -0.0, 3.25, 1e-45, -1e9, 0.1))).isTrue();
        assertThat(c.tensors().get("d").bitEquals(Tensor.of(DType.F64, new long[] {4}, 0.1, -2.5, 1e300, 5e-324))).isTrue();
        assertThat(c.tensors().get("i").ints()).containsExactly(3, -7, 1L << 62);
        assertThat(c.tensors().get("b").dtype()).isEqualTo(DType.I1);
        assertThat(c.tensors().get("b").ints()).containsExactly(1, 0, 1);
        assertThat(c.tensors().get("s").shape().rank()).isZero();
        assertThat(c.tensors().get("s").get(0)).isEqualTo(2.5);
    }

    @Test void writesTheReferenceImplementationsBytes() throws IOException {
        SafeTensors.Contents c = SafeTensors.decode(Path.of("reference.safetensors"), reference());
        assertThat(SafeTensors.encode(c.tensors(), c.metadata())).isEqualTo(reference());
    }

    @Test void headerIsPaddedWithSpacesToEightBytes() {
        Map<String, Tensor> t = new LinkedHashMap<>();
        t.put("a", Tensor.of(DType.F32, new long[] {3}, 1, 2, 3));
        byte[] b = SafeTensors.encode(t, Map.of());
        long n = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getLong();
        assertThat(n % 8).isZero();
        String header = new String(b, 8, (int) n, StandardCharsets.UTF_8);
        assertThat(header).startsWith("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}").endsWith(" ");
        assertThat(b.length).isEqualTo(8 + n + 12);
    }

    @Property(tries = 60)
    void roundTripsBitForBit(@ForAll @IntRange(min = 0, max = 4) int rank, @ForAll long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        Map<String, Tensor> t = new LinkedHashMap<>();
        for (String name : new String[] {"z.weight", "a.bias", "m.ids", "mask"}) {
            long[] dims = new long[rank];
            for (int i = 0; i < rank; i++) dims[i] = r.nextInt(4);
            int n = (int) Arrays.stream(dims).reduce(1, (x, y) -> x * y);
            double[] v = new double[n];
            for (int i = 0; i < n; i++) v[i] = switch (name) {
                case "z.weight" -> Float.intBitsToFloat(r.nextInt());   // any float bits, NaN payloads included
                case "a.bias" -> Double.longBitsToDouble(r.nextLong());
                case "m.ids" -> r.nextLong(-1000, 1000);
                default -> r.nextInt(2);
            };
            DType d = switch (name) { case "z.weight" -> DType.F32; case "a.bias" -> DType.F64; case "m.ids" -> DType.I64; default -> DType.I1; };
            t.put(name, Tensor.of(d, dims, v));
        }
        SafeTensors.Contents back = SafeTensors.decode(Path.of("rt"), SafeTensors.encode(t, Map.of("step", "7")));
        assertThat(back.tensors().keySet()).containsExactlyElementsOf(t.keySet());
        for (String k : t.keySet()) assertThat(back.tensors().get(k).bitEquals(t.get(k))).as(k).isTrue();
        assertThat(back.metadata()).containsExactly(Map.entry("step", "7"));
    }

    @Test void writingLeavesNoTempFiles() throws IOException {
        Path f = tmp.resolve("m.safetensors");
        SafeTensors.write(f, Map.of("a", Tensor.of(DType.F32, new long[] {1}, 1)), Map.of());
        SafeTensors.write(f, Map.of("a", Tensor.of(DType.F32, new long[] {1}, 2)), Map.of());
        try (var s = Files.list(tmp)) { assertThat(s).containsExactly(f); }
        assertThat(SafeTensors.read(f).tensors().get("a").get(0)).isEqualTo(2.0);
    }

    @Test void refusesForeignFiles() throws IOException {
        assertThat(error(new byte[] {1, 2, 3})).isEqualTo("not a safetensors file (3 bytes, shorter than the 8-byte header length)");
        byte[] png = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13};
        assertThat(error(png)).startsWith("not a safetensors file (header length ");
        assertThat(error("hello, world, this is text".getBytes(StandardCharsets.UTF_8))).startsWith("not a safetensors file (header length ");
        byte[] notJson = reference();
        notJson[8] = '[';
        assertThat(error(notJson)).isEqualTo("not a safetensors file (header does not start with '{')");
    }

    @Test void refusesTruncatedFiles() throws IOException {
        byte[] ref = reference();
        assertThat(error(Arrays.copyOf(ref, 100))).isEqualTo("truncated: header of 336 bytes, but the file has 92 after the length");
        assertThat(error(Arrays.copyOf(ref, ref.length - 1))).isEqualTo("truncated: tensor 'b' ends at data byte 87, but the data has 86 bytes");
    }

    @Test void refusesCorruptHeaders() throws IOException {
        byte[] ref = reference();
        byte[] bad = ref.clone();
        bad[9] = 'x';    // {x_metadata__": … is not JSON
        assertThat(error(bad)).startsWith("corrupt header JSON: ").doesNotContain("\n");
        assertThat(error(withHeader("{\"a\":[1", 0))).isEqualTo("corrupt header JSON: unexpected end of input (the array opened at line 1, column 6 is not closed)");
        assertThat(error(withHeader("{\"a\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]}}", 2)))
                .isEqualTo("tensor 'a' has dtype F16; kina reads F32, F64, I64, BOOL");
        assertThat(error(withHeader("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8)))
                .isEqualTo("tensor 'a' F32[3] needs 12 bytes, its offsets give 8");
        assertThat(error(withHeader("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4)))
                .isEqualTo("corrupt header: tensor 'a' needs dtype, shape and data_offsets [begin, end]");
        assertThat(error(withHeader("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4)))
                .isEqualTo("corrupt header: tensor 'a' has shape [-1]");
        assertThat(error(withHeader("{\"a\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, (byte) 7)))
                .isEqualTo("tensor 'a' BOOL element 0 is 7, not 0 or 1");
    }

    private static byte[] withHeader(String json, int dataBytes, byte... data) {
        byte[] h = json.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h).put(data);
        return b.array();
    }
}
