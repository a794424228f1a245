package kina.io;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * GGUF, the file format of llama.cpp and ggml (version 3, little-endian; the layout is ggml's
 * {@code docs/gguf.md}): the magic {@code "GGUF"}, a uint32 version, the uint64 counts of tensors
 * and of metadata entries, the metadata (a string key, a uint32 value type, the value), one info
 * per tensor (name, uint32 rank, uint64 dims innermost first, uint32 ggml type, uint64 offset into
 * the data), padding to {@code general.alignment} (default 32), then the tensor data, each tensor
 * at an offset that is a multiple of the alignment. Strings are a uint64 byte length and UTF-8
 * bytes; an array is a uint32 element type, a uint64 count and the elements.
 *
 * <p>Tensors are held as float32 values in ggml's order (dim 0 fastest, so a row-major
 * {@code [rows, cols]} matrix has {@code ne = {cols, rows}}). The writer stores F32 or F16 (round
 * to nearest even); the reader takes F32, F16 and BF16 and refuses the quantized types by name.
 * Reading refuses, with one-line {@link ModelFileError}s, a foreign or truncated file, another
 * version, bad UTF-8, overlapping or misaligned tensor data.
 */
public final class Gguf {
    private Gguf() {}

    /** {@code "GGUF"} read as a little-endian uint32. */
    public static final int MAGIC = 0x46554747;
    public static final int VERSION = 3;
    public static final int DEFAULT_ALIGNMENT = 32;

    /** The metadata value types, by their number in the file. */
    public enum ValueType {
        UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64;

        static ValueType of(String where, int n) {
            if (n < 0 || n >= values().length) throw new ModelFileError(where, "unknown metadata value type " + n + " (not a GGUF file, or a newer one)");
            return values()[n];
        }
    }

    /**
     * A metadata value: {@code value} is a Long for the integer types (a uint64 above 2^63 wraps),
     * a Double for FLOAT32 / FLOAT64, a Boolean, a String, or for ARRAY an {@link Array}.
     */
    public record Value(ValueType type, Object value) {
        public static Value u32(long v) { return new Value(ValueType.UINT32, v); }
        public static Value i32(long v) { return new Value(ValueType.INT32, v); }
        public static Value f32(double v) { return new Value(ValueType.FLOAT32, (double) (float) v); }
        public static Value bool(boolean v) { return new Value(ValueType.BOOL, v); }
        public static Value string(String v) { return new Value(ValueType.STRING, v); }
        public static Value array(ValueType element, List<?> values) { return new Value(ValueType.ARRAY, new Array(element, List.copyOf(values))); }
    }

    /** An array value: the element type and the elements (as {@link Value#value()} holds them). */
    public record Array(ValueType element, List<Object> values) {}

    /** The ggml tensor types kina reads (F32, F16, BF16; F32 and F16 written), by their number in the file. */
    public enum Dtype {
        F32(0, 4), F16(1, 2), BF16(30, 2);

        public final int id, width;

        Dtype(int id, int width) {
            this.id = id;
            this.width = width;
        }
    }

    /** A tensor: its name, its dims innermost first (ggml's {@code ne}), its type in the file and its values. */
    public record Tensor(String name, long[] ne, Dtype dtype, float[] values) {
        public Tensor {
            long n = 1;
            for (long d : ne) n = Math.multiplyExact(n, d);
            if (n != values.length) throw new IllegalArgumentException(name + ": ne " + java.util.Arrays.toString(ne) + " holds " + n + " values, given " + values.length);
        }
    }

    /** A file read back: its metadata in file order and its tensors in file order. */
    public record Contents(Map<String, Value> metadata, List<Tensor> tensors) {}

    /** ggml's type names, for the refusal of a type kina does not read. */
    private static final Map<Integer, String> GGML_TYPES = Map.ofEntries(
            Map.entry(2, "Q4_0"), Map.entry(3, "Q4_1"), Map.entry(6, "Q5_0"), Map.entry(7, "Q5_1"), Map.entry(8, "Q8_0"), Map.entry(9, "Q8_1"),
            Map.entry(10, "Q2_K"), Map.entry(11, "Q3_K"), Map.entry(12, "Q4_K"), Map.entry(13, "Q5_K"), Map.entry(14, "Q6_K"), Map.entry(15, "Q8_K"),
            Map.entry(16, "IQ2_XXS"), Map.entry(17, "IQ2_XS"), Map.entry(18, "IQ3_XXS"), Map.entry(19, "IQ1_S"), Map.entry(20, "IQ4_NL"),
            Map.entry(21, "IQ3_S"), Map.entry(22, "IQ2_S"), Map.entry(23, "IQ4_XS"), Map.entry(24, "I8"), Map.entry(25, "I16"), Map.entry(26, "I32"),
            Map.entry(27, "I64"), Map.entry(28, "F64"), Map.entry(29, "IQ1_M"), Map.entry(34, "TQ1_0"), Map.entry(35, "TQ2_0"));

    // ---- writing -------------------------------------------------------------------------------

    /**
     * The bytes of a GGUF v3 file holding {@code metadata} (written in map order; give
     * {@code general.alignment} there to change the default 32) and {@code tensors}, each stored as
     * its {@link Tensor#dtype()} (F32 or F16).
     *
     * @throws IllegalArgumentException for a BF16 tensor, or a file over 2 GiB
     */
    public static byte[] write(Map<String, Value> metadata, List<Tensor> tensors) {
        int align = DEFAULT_ALIGNMENT;
        Value a = metadata.get("general.alignment");
        if (a != null) align = (int) (long) (Long) a.value();
        Out out = new Out();
        out.u32(MAGIC).u32(VERSION).u64(tensors.size()).u64(metadata.size());
        for (Map.Entry<String, Value> e : metadata.entrySet()) {
            out.string(e.getKey()).u32(e.getValue().type().ordinal());
            out.value(e.getValue().type(), e.getValue().value());
        }
        long offset = 0;
        List<Long> offsets = new ArrayList<>();
        for (Tensor t : tensors) {
            if (t.dtype() == Dtype.BF16) throw new IllegalArgumentException(t.name() + ": kina writes F32 and F16 tensors, not BF16");
            out.string(t.name()).u32(t.ne().length);
            for (long d : t.ne()) out.u64(d);
            out.u32(t.dtype().id).u64(offset);
            offsets.add(offset);
            offset = pad(offset + (long) t.values().length * t.dtype().width, align);
        }
        long start = pad(out.size(), align);
        long total = start + offset;
        if (total > Integer.MAX_VALUE - 8) throw new IllegalArgumentException("a GGUF file of " + total + " bytes: kina writes files under 2 GiB");
        ByteBuffer b = ByteBuffer.allocate((int) total).order(ByteOrder.LITTLE_ENDIAN);
        b.put(out.bytes());
        for (int i = 0; i < tensors.size(); i++) {
            Tensor t = tensors.get(i);
            b.position((int) (start + offsets.get(i)));
            switch (t.dtype()) {
                case F32 -> { for (float v : t.values()) b.putFloat(v); }
                case F16 -> { for (float v : t.values()) b.putShort(Float.floatToFloat16(v)); }
                case BF16 -> throw new IllegalStateException("unreachable: refused above");
            }
        }
        return b.array();
    }

    private static long pad(long n, int align) { return (n + align - 1) / align * align; }

    /** A growing little-endian buffer for the header. */
    private static final class Out {
        private ByteBuffer b = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);

        private Out room(int n) {
            if (b.remaining() < n) {
                ByteBuffer bigger = ByteBuffer.allocate(Math.max(b.capacity() * 2, b.position() + n)).order(ByteOrder.LITTLE_ENDIAN);
                b.flip();
                bigger.put(b);
                b = bigger;
            }
            return this;
        }

        Out u32(long v) { room(4).b.putInt((int) v); return this; }
        Out u64(long v) { room(8).b.putLong(v); return this; }

        Out string(String s) {
            byte[] u = s.getBytes(StandardCharsets.UTF_8);
            u64(u.length);
            room(u.length).b.put(u);
            return this;
        }

        void value(ValueType type, Object v) {
            switch (type) {
                case UINT8, INT8, BOOL -> room(1).b.put(type == ValueType.BOOL ? (byte) ((Boolean) v ? 1 : 0) : (byte) (long) (Long) v);
                case UINT16, INT16 -> room(2).b.putShort((short) (long) (Long) v);
                case UINT32, INT32 -> u32((Long) v);
                case UINT64, INT64 -> u64((Long) v);
                case FLOAT32 -> room(4).b.putFloat((float) (double) (Double) v);
                case FLOAT64 -> room(8).b.putDouble((Double) v);
                case STRING -> string((String) v);
                case ARRAY -> {
                    Array arr = (Array) v;
                    u32(arr.element().ordinal()).u64(arr.values().size());
                    for (Object x : arr.values()) value(arr.element(), x);
                }
            }
        }

        long size() { return b.position(); }

        byte[] bytes() { return java.util.Arrays.copyOf(b.array(), b.position()); }
    }

    // ---- reading -------------------------------------------------------------------------------

    /**
     * Parses a GGUF file (version 2 or 3; the two differ only in what they allow, not in layout);
     * {@code where} names it in errors.
     *
     * @throws ModelFileError for a foreign, truncated or corrupt file, or a tensor type kina does not read
     */
    public static Contents read(String where, byte[] file) {
        ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        if (file.length < 24 || b.getInt(0) != MAGIC)
            throw new ModelFileError(where, "not a GGUF file (it does not start with \"GGUF\")");
        int version = b.getInt(4);
        if (version != 2 && version != 3) throw new ModelFileError(where, "GGUF version " + version + "; kina reads versions 2 and 3");
        b.position(8);
        String at = "the header";
        try {
            long nTensors = b.getLong(), nMeta = b.getLong();
            if (nTensors < 0 || nTensors > file.length || nMeta < 0 || nMeta > file.length)
                throw new ModelFileError(where, "corrupt header: " + Long.toUnsignedString(nTensors) + " tensors, " + Long.toUnsignedString(nMeta) + " metadata entries");
            Map<String, Value> meta = new LinkedHashMap<>();
            for (long i = 0; i < nMeta; i++) {
                at = "metadata entry " + i;
                String key = string(where, b);
                at = "metadata '" + key + "'";
                ValueType type = ValueType.of(where, b.getInt());
                meta.put(key, new Value(type, value(where, b, type)));
            }
            int align = DEFAULT_ALIGNMENT;
            Value a = meta.get("general.alignment");
            if (a != null) {
                if (a.type() != ValueType.UINT32 || (Long) a.value() <= 0 || Long.bitCount((Long) a.value()) != 1)
                    throw new ModelFileError(where, "general.alignment " + a.value() + " is not a power of two (uint32)");
                align = (int) (long) (Long) a.value();
            }
            record Info(String name, long[] ne, Dtype dtype, long offset) {}
            List<Info> infos = new ArrayList<>();
            for (long i = 0; i < nTensors; i++) {
                at = "tensor info " + i;
                String name = string(where, b);
                at = "tensor info '" + name + "'";
                int rank = b.getInt();
                if (rank < 1 || rank > 4) throw new ModelFileError(where, "tensor '" + name + "' has rank " + rank + " (ggml tensors have 1 to 4 dims)");
                long[] ne = new long[rank];
                for (int k = 0; k < rank; k++) {
                    ne[k] = b.getLong();
                    if (ne[k] < 0) throw new ModelFileError(where, "tensor '" + name + "' has dim " + Long.toUnsignedString(ne[k]));
                }
                int type = b.getInt();
                Dtype dt = null;
                for (Dtype d : Dtype.values()) if (d.id == type) dt = d;
                if (dt == null)
                    throw new ModelFileError(where, "tensor '" + name + "' is " + GGML_TYPES.getOrDefault(type, "ggml type " + type)
                            + "; kina reads F32, F16 and BF16 GGUF files (a quantized model cannot be fine-tuned as it is)");
                infos.add(new Info(name, ne, dt, b.getLong()));
            }
            long start = pad(b.position(), align);
            List<Tensor> tensors = new ArrayList<>();
            long end = start;
            List<long[]> ranges = new ArrayList<>();
            for (Info in : infos) {
                long n = 1;
                for (long d : in.ne()) n = Math.multiplyExact(n, d);
                long bytes = Math.multiplyExact(n, in.dtype().width);
                if (in.offset() % align != 0) throw new ModelFileError(where, "tensor '" + in.name() + "' at data offset " + in.offset() + ", not a multiple of the alignment " + align);
                if (in.offset() < 0 || start + in.offset() + bytes > file.length)
                    throw new ModelFileError(where, "truncated: tensor '" + in.name() + "' ends at byte " + (start + in.offset() + bytes) + ", but the file has " + file.length);
                if (n > Integer.MAX_VALUE - 8) throw new ModelFileError(where, "tensor '" + in.name() + "' has " + n + " values, more than kina holds in one tensor");
                ranges.add(new long[] {in.offset(), in.offset() + bytes});
                end = Math.max(end, start + in.offset() + bytes);
                float[] v = new float[(int) n];
                int p = (int) (start + in.offset());
                switch (in.dtype()) {
                    case F32 -> { for (int i = 0; i < v.length; i++) v[i] = b.getFloat(p + 4 * i); }
                    case F16 -> { for (int i = 0; i < v.length; i++) v[i] = Float.float16ToFloat(b.getShort(p + 2 * i)); }
                    case BF16 -> { for (int i = 0; i < v.length; i++) v[i] = Float.intBitsToFloat((b.getShort(p + 2 * i) & 0xffff) << 16); }
                }
                tensors.add(new Tensor(in.name(), in.ne(), in.dtype(), v));
            }
            ranges.sort((x, y) -> Long.compare(x[0], y[0]));
            for (int i = 1; i < ranges.size(); i++)
                if (ranges.get(i)[0] < ranges.get(i - 1)[1]) throw new ModelFileError(where, "corrupt: two tensors' data overlap at data offset " + ranges.get(i)[0]);
            return new Contents(Collections.unmodifiableMap(meta), List.copyOf(tensors));
        } catch (BufferUnderflowException | IndexOutOfBoundsException e) {
            throw new ModelFileError(where, "truncated: the file (" + file.length + " bytes) ends inside " + at);
        } catch (ArithmeticException e) {
            throw new ModelFileError(where, "corrupt " + at + ": sizes overflow");
        }
    }

    private static String string(String where, ByteBuffer b) {
        long n = b.getLong();
        if (n < 0 || n > b.remaining()) throw new BufferUnderflowException();
        byte[] u = new byte[(int) n];
        b.get(u);
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(u)).toString();
        } catch (CharacterCodingException e) {
            throw new ModelFileError(where, "a string at byte " + (b.position() - n) + " is not UTF-8");
        }
    }

    private static Object value(String where, ByteBuffer b, ValueType t) {
        return switch (t) {
            case UINT8 -> (long) (b.get() & 0xff);
            case INT8 -> (long) b.get();
            case UINT16 -> (long) (b.getShort() & 0xffff);
            case INT16 -> (long) b.getShort();
            case UINT32 -> b.getInt() & 0xffffffffL;
            case INT32 -> (long) b.getInt();
            case UINT64, INT64 -> b.getLong();
            case FLOAT32 -> (double) b.getFloat();
            case FLOAT64 -> b.getDouble();
            case BOOL -> {
                byte x = b.get();
                if (x != 0 && x != 1) throw new ModelFileError(where, "a bool at byte " + (b.position() - 1) + " is " + x + ", not 0 or 1");
                yield x == 1;
            }
            case STRING -> string(where, b);
            case ARRAY -> {
                ValueType e = ValueType.of(where, b.getInt());
                long n = b.getLong();
                if (n < 0 || n > b.remaining()) throw new BufferUnderflowException();
                List<Object> xs = new ArrayList<>((int) n);
                for (long i = 0; i < n; i++) xs.add(value(where, b, e));
                yield new Array(e, Collections.unmodifiableList(xs));
            }
        };
    }
}
