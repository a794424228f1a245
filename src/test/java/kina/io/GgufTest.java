package kina.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The GGUF container: values and tensors written and read back, the layout's bytes, and broken files refused in one line. */
class GgufTest {
    static Map<String, Gguf.Value> meta() {
        Map<String, Gguf.Value> m = new LinkedHashMap<>();
        m.put("general.architecture", Gguf.Value.string("llama"));
        m.put("n", Gguf.Value.u32(7));
        m.put("neg", Gguf.Value.i32(-3));
        m.put("eps", Gguf.Value.f32(1e-5));
        m.put("flag", Gguf.Value.bool(true));
        m.put("tokens", Gguf.Value.array(Gguf.ValueType.STRING, List.of("<0x00>", "▁the")));
        m.put("scores", Gguf.Value.array(Gguf.ValueType.FLOAT32, List.of(0.0, -1.0)));
        return m;
    }

    static List<Gguf.Tensor> tensors() {
        return List.of(new Gguf.Tensor("a.weight", new long[] {3}, Gguf.Dtype.F32, new float[] {1, -2.5f, 3e-8f}),
                new Gguf.Tensor("b.weight", new long[] {2, 3}, Gguf.Dtype.F16, new float[] {1, 2, 3, 4, 5, 0.1f}));
    }

    @Test void whatIsWrittenIsReadBack() {
        byte[] f = Gguf.write(meta(), tensors());
        Gguf.Contents c = Gguf.read("x.gguf", f);
        assertThat(c.metadata()).isEqualTo(meta());
        assertThat(c.tensors()).hasSize(2);
        assertThat(c.tensors().get(0).values()).containsExactly(1, -2.5f, 3e-8f);
        assertThat(c.tensors().get(1).ne()).containsExactly(2, 3);
        assertThat(c.tensors().get(1).dtype()).isEqualTo(Gguf.Dtype.F16);
        assertThat(c.tensors().get(1).values()).containsExactly(1, 2, 3, 4, 5, Float.float16ToFloat(Float.floatToFloat16(0.1f)));
    }

    /** The header's bytes as ggml's docs/gguf.md lays them out, and each tensor's data at a multiple of 32. */
    @Test void theLayoutIsGgufVersion3() {
        byte[] f = Gguf.write(Map.of("k", Gguf.Value.u32(5)), tensors());
        ByteBuffer b = ByteBuffer.wrap(f).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(new String(f, 0, 4, java.nio.charset.StandardCharsets.US_ASCII)).isEqualTo("GGUF");
        assertThat(b.getInt(4)).isEqualTo(3);
        assertThat(b.getLong(8)).isEqualTo(2);            // tensors
        assertThat(b.getLong(16)).isEqualTo(1);           // metadata entries
        assertThat(b.getLong(24)).isEqualTo(1);           // key length
        assertThat((char) f[32]).isEqualTo('k');
        assertThat(b.getInt(33)).isEqualTo(4);            // UINT32
        assertThat(b.getInt(37)).isEqualTo(5);
        int info = 41;                                    // tensor "a.weight": name, rank 1, ne 3, F32, offset 0
        assertThat(b.getLong(info)).isEqualTo(8);
        assertThat(b.getInt(info + 16)).isEqualTo(1);
        assertThat(b.getLong(info + 20)).isEqualTo(3);
        assertThat(b.getInt(info + 28)).isEqualTo(0);
        assertThat(b.getLong(info + 32)).isEqualTo(0);
        int second = info + 40;                           // "b.weight": rank 2, ne {2, 3}, F16, offset 32 (12 bytes padded)
        assertThat(b.getInt(second + 16)).isEqualTo(2);
        assertThat(b.getInt(second + 36)).isEqualTo(1);
        assertThat(b.getLong(second + 40)).isEqualTo(32);
        int data = (second + 48 + 31) / 32 * 32;
        assertThat(b.getFloat(data + 4)).isEqualTo(-2.5f);
        assertThat(Float.float16ToFloat(b.getShort(data + 32 + 2))).isEqualTo(2f);
        assertThat(f.length).isEqualTo(data + 64);        // the last tensor padded too, as gguf-py writes it
    }

    @Test void aBrokenFileIsOneLine() {
        byte[] f = Gguf.write(meta(), tensors());
        assertThatThrownBy(() -> Gguf.read("m.gguf", new byte[] {1, 2, 3})).isInstanceOf(ModelFileError.class)
                .hasMessage("m.gguf: not a GGUF file (it does not start with \"GGUF\")");
        byte[] v1 = f.clone();
        ByteBuffer.wrap(v1).order(ByteOrder.LITTLE_ENDIAN).putInt(4, 1);
        assertThatThrownBy(() -> Gguf.read("m.gguf", v1)).hasMessage("m.gguf: GGUF version 1; kina reads versions 2 and 3");
        assertThatThrownBy(() -> Gguf.read("m.gguf", java.util.Arrays.copyOf(f, 60))).hasMessageStartingWith("m.gguf: truncated: the file (60 bytes) ends inside metadata");
        assertThatThrownBy(() -> Gguf.read("m.gguf", java.util.Arrays.copyOf(f, f.length - 32)))
                .hasMessage("m.gguf: truncated: tensor 'b.weight' ends at byte " + (f.length - 20) + ", but the file has " + (f.length - 32));
        byte[] q = Gguf.write(Map.of(), List.of(new Gguf.Tensor("w", new long[] {1}, Gguf.Dtype.F32, new float[] {1})));
        ByteBuffer.wrap(q).order(ByteOrder.LITTLE_ENDIAN).putInt(24 + 8 + 1 + 4 + 8, 12);   // the tensor's type: Q4_K
        assertThatThrownBy(() -> Gguf.read("m.gguf", q))
                .hasMessage("m.gguf: tensor 'w' is Q4_K; kina reads F32, F16 and BF16 GGUF files (a quantized model cannot be fine-tuned as it is)");
    }
}
