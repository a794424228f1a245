package kina.io;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Map.Entry;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Placement;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * The safetensors format (Hugging Face): an 8-byte little-endian header length N, N bytes of JSON
 * header {@code {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {string:
 * string}}} padded with spaces to a multiple of 8, then the tensors' raw little-endian bytes
 * (offsets relative to the start of the data). Tensors are written in the map's iteration order.
 *
 * <p>dtypes: F32 (4-byte float; kina holds F32 as exactly-float doubles, so the round trip is
 * bit-exact), F64, I64, and kina's I1 as BOOL (one byte, 0 or 1). Reading refuses, with one-line
 * FileFormatErrors: a foreign file (shorter than 8 bytes, a header length over 100 MB, a header
 * that is not a JSON object), a truncated file (header or data past the end), corrupt JSON, an
 * unknown dtype, a shape whose byte size differs from its offsets.
 */
public final class SafeTensors {
    /** Tensors in file order, and the string metadata (empty when the file has none). */
    public record Contents(Map<String, Tensor> tensors, Map<String, String> metadata) {}

    /** The largest header accepted (the reference implementation's limit). */
    public static final long MAX_HEADER = 100_000_000;

    private static final ObjectMapper JSON = new ObjectMapper();

    private SafeTensors() {}

    /** Writes {@code file} atomically ({@link AtomicFiles}); FileFormatError when the file system refuses. */
    public static void write(Path file, Map<String, Tensor> tensors, Map<String, String> metadata) {
        AtomicFiles.write(file, encode(tensors, metadata));
    }

    /** Reads {@code file} under {@link FileCap#DEFAULT}; FileFormatError (one line) when it is missing or not a good safetensors file. */
    public static Contents read(Path file) { return read(file, FileCap.DEFAULT); }

    /** Reads {@code file}; FileFormatError (one line) when it is missing, over {@code cap} or not a good safetensors file. */
    public static Contents read(Path file, FileCap cap) {
        return decode(file, bytes(file, cap));
    }

    /** The bytes of {@code file}; FileFormatError (one line) when it is missing, unreadable or over {@code cap}. */
    public static byte[] bytes(Path file, FileCap cap) {
        try {
            String big = cap.tooLarge(Files.size(file));
            if (big != null) throw new FileFormatError(file, big);
            return Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new FileFormatError(file, "file not found");
        } catch (IOException e) {
            throw new FileFormatError(file, "cannot read: " + e.getMessage(), e);
        } catch (OutOfMemoryError e) {
            throw new FileFormatError(file, "too large to read");
        }
    }

    /** The file's bytes. */
    public static byte[] encode(Map<String, Tensor> tensors, Map<String, String> metadata) {
        ObjectNode header = JSON.createObjectNode();
        if (metadata != null && !metadata.isEmpty()) {
            ObjectNode meta = header.putObject("__metadata__");
            for (Entry<String, String> e : metadata.entrySet()) meta.put(e.getKey(), e.getValue());
        }
        long offset = 0;
        for (Entry<String, Tensor> e : tensors.entrySet()) {
            if (e.getKey().equals("__metadata__")) throw new IllegalArgumentException("tensor name __metadata__ is reserved");
            Tensor t = e.getValue();
            ObjectNode o = header.putObject(e.getKey());
            o.put("dtype", dtypeName(t.dtype()));
            ArrayNode shape = o.putArray("shape");
            for (long d : t.shape().dims()) shape.add(d);
            long end = offset + (long) t.size() * width(t.dtype());
            o.putArray("data_offsets").add(offset).add(end);
            offset = end;
        }
        byte[] json;
        try {
            json = JSON.writeValueAsBytes(header);
        } catch (JacksonException e) {
            throw new IllegalStateException(e);
        }
        int padded = (json.length + 7) / 8 * 8;
        long total = 8L + padded + offset;
        if (total > Integer.MAX_VALUE - 8) throw new IllegalArgumentException("tensors too large for one file: " + total + " bytes");
        ByteBuffer buf = ByteBuffer.allocate((int) total).order(ByteOrder.LITTLE_ENDIAN);
        buf.putLong(padded);
        buf.put(json);
        for (int i = json.length; i < padded; i++) buf.put((byte) ' ');
        for (Tensor t : tensors.values()) {
            switch (t.dtype()) {
                case F32 -> { for (double v : t.floats()) buf.putFloat((float) v); }
                case F64 -> { for (double v : t.floats()) buf.putDouble(v); }
                case I64 -> { for (long v : t.ints()) buf.putLong(v); }
                case I1 -> { for (long v : t.ints()) buf.put((byte) (v != 0 ? 1 : 0)); }
                case BF16, F16, F8E4M3, F8E5M2 -> throw new IllegalArgumentException("safetensors writer holds host tensors, not " + t.dtype());
            }
        }
        return buf.array();
    }

    /** Parses a file's bytes; {@code file} names it in errors. */
    public static Contents decode(Path file, byte[] b) {
        return decode(file, b, false);
    }

    /**
     * Parses a file's bytes; with {@code widen}, F16 and BF16 tensors (as Hugging Face models are
     * often stored) are read too, as the F32 tensors of the same values (exact: F32 holds every
     * F16 and BF16 value).
     */
    public static Contents decode(Path file, byte[] b, boolean widen) {
        if (b.length < 8) throw new FileFormatError(file, "not a safetensors file (" + b.length + " bytes, shorter than the 8-byte header length)");
        ByteBuffer buf = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        long n = buf.getLong(0);
        if (n < 2 || n > MAX_HEADER) throw new FileFormatError(file, "not a safetensors file (header length " + Long.toUnsignedString(n) + ")");
        if (n > b.length - 8L) throw new FileFormatError(file, "truncated: header of " + n + " bytes, but the file has " + (b.length - 8) + " after the length");
        if (b[8] != '{') throw new FileFormatError(file, "not a safetensors file (header does not start with '{')");
        JsonNode header;
        try {
            header = JSON.readTree(new String(b, 8, (int) n, StandardCharsets.UTF_8));
        } catch (JacksonException e) {
            throw new FileFormatError(file, "corrupt header JSON: " + TensorJson.plain(e.getOriginalMessage()), e);
        }
        if (header == null || !header.isObject()) throw new FileFormatError(file, "corrupt header: not a JSON object");
        int dataStart = 8 + (int) n;
        long dataLen = b.length - (long) dataStart;
        Map<String, String> meta = new LinkedHashMap<>();
        Map<String, Tensor> tensors = new LinkedHashMap<>();
        for (Entry<String, JsonNode> e : header.properties()) {
            String name = e.getKey();
            JsonNode v = e.getValue();
            if (name.equals("__metadata__")) {
                if (!v.isObject()) throw new FileFormatError(file, "corrupt header: __metadata__ is not an object");
                for (Entry<String, JsonNode> me : v.properties()) {
                    if (!me.getValue().isTextual()) throw new FileFormatError(file, "corrupt header: metadata '" + me.getKey() + "' is not a string");
                    meta.put(me.getKey(), me.getValue().asText());
                }
                continue;
            }
            tensors.put(name, tensor(file, name, v, buf, dataStart, dataLen, widen));
        }
        requireDisjoint(file, header);
        return new Contents(tensors, meta);
    }

    /** The tensors' data ranges (checked well formed by {@link #tensor}) may not overlap: each byte belongs to one tensor. */
    private static void requireDisjoint(Path file, JsonNode header) {
        record Range(String name, long begin, long end) {}
        List<Range> rs = new ArrayList<>();
        for (Entry<String, JsonNode> e : header.properties()) {
            if (e.getKey().equals("__metadata__")) continue;
            JsonNode off = e.getValue().get("data_offsets");
            if (off.get(0).longValue() < off.get(1).longValue()) rs.add(new Range(e.getKey(), off.get(0).longValue(), off.get(1).longValue()));
        }
        rs.sort(java.util.Comparator.comparingLong(Range::begin));
        for (int i = 1; i < rs.size(); i++)
            if (rs.get(i).begin() < rs.get(i - 1).end())
                throw new FileFormatError(file, "corrupt header: tensors '" + rs.get(i - 1).name() + "' and '" + rs.get(i).name()
                        + "' overlap (data bytes " + rs.get(i).begin() + " to " + Math.min(rs.get(i).end(), rs.get(i - 1).end()) + ")");
    }

    private static Tensor tensor(Path file, String name, JsonNode v, ByteBuffer buf, int dataStart, long dataLen, boolean widen) {
        String what = "tensor '" + name + "'";
        if (!v.isObject()) throw new FileFormatError(file, "corrupt header: " + what + " is not an object");
        JsonNode dt = v.get("dtype"), sh = v.get("shape"), off = v.get("data_offsets");
        if (dt == null || !dt.isTextual() || sh == null || !sh.isArray() || off == null || !off.isArray() || off.size() != 2)
            throw new FileFormatError(file, "corrupt header: " + what + " needs dtype, shape and data_offsets [begin, end]");
        DType dtype = switch (dt.asText()) {
            case "F32" -> DType.F32;
            case "F64" -> DType.F64;
            case "I64" -> DType.I64;
            case "BOOL" -> DType.I1;
            case "F16", "BF16" -> {
                if (!widen) throw new FileFormatError(file, what + " has dtype " + dt.asText() + "; kina reads F32, F64, I64, BOOL");
                yield dt.asText().equals("F16") ? DType.F16 : DType.BF16;
            }
            default -> throw new FileFormatError(file, what + " has dtype " + dt.asText() + "; kina reads F32, F64, I64, BOOL" + (widen ? ", F16, BF16" : ""));
        };
        long[] dims = new long[sh.size()];
        for (int i = 0; i < dims.length; i++) {
            JsonNode d = sh.get(i);
            if (!d.isIntegralNumber() || !d.canConvertToLong() || d.longValue() < 0)
                throw new FileFormatError(file, "corrupt header: " + what + " has shape " + sh);
            dims[i] = d.longValue();
        }
        for (JsonNode o : off)
            if (!o.isIntegralNumber() || !o.canConvertToLong() || o.longValue() < 0)
                throw new FileFormatError(file, "corrupt header: " + what + " has data_offsets " + off);
        long begin = off.get(0).longValue(), end = off.get(1).longValue();
        Shape shape = new Shape(dims);
        long vol;
        try {
            vol = shape.vol();
        } catch (ArithmeticException e) {
            throw new FileFormatError(file, "corrupt header: " + what + " has shape " + shape + " too large");
        }
        if (end < begin) throw new FileFormatError(file, "corrupt header: " + what + " has data_offsets " + off);
        if (end > dataLen) throw new FileFormatError(file, "truncated: " + what + " ends at data byte " + end + ", but the data has " + dataLen + " bytes");
        if (vol * width(dtype) != end - begin)
            throw new FileFormatError(file, what + " " + dtype + shape + " needs " + vol * width(dtype) + " bytes, its offsets give " + (end - begin));
        TensorType type = new TensorType(dtype == DType.F16 || dtype == DType.BF16 ? DType.F32 : dtype, shape, Placement.HOST);
        int n = (int) vol;
        int at = dataStart + (int) begin;
        return switch (dtype) {
            case F32 -> { double[] d = new double[n]; for (int i = 0; i < n; i++) d[i] = buf.getFloat(at + 4 * i); yield Tensor.ofFloats(type, d); }
            case F64 -> { double[] d = new double[n]; for (int i = 0; i < n; i++) d[i] = buf.getDouble(at + 8 * i); yield Tensor.ofFloats(type, d); }
            case I64 -> { long[] d = new long[n]; for (int i = 0; i < n; i++) d[i] = buf.getLong(at + 8 * i); yield Tensor.ofInts(type, d); }
            case I1 -> {
                long[] d = new long[n];
                for (int i = 0; i < n; i++) {
                    byte x = buf.get(at + i);
                    if (x != 0 && x != 1) throw new FileFormatError(file, what + " BOOL element " + i + " is " + x + ", not 0 or 1");
                    d[i] = x;
                }
                yield Tensor.ofInts(type, d);
            }
            case F16 -> { double[] d = new double[n]; for (int i = 0; i < n; i++) d[i] = Float.float16ToFloat(buf.getShort(at + 2 * i)); yield Tensor.ofFloats(type, d); }
            case BF16 -> {
                double[] d = new double[n];
                for (int i = 0; i < n; i++) d[i] = Float.intBitsToFloat((buf.getShort(at + 2 * i) & 0xffff) << 16);
                yield Tensor.ofFloats(type, d);
            }
            case F8E4M3, F8E5M2 -> throw new IllegalStateException("unreachable: " + dtype);
        };
    }

    private static String dtypeName(DType d) {
        return switch (d) {
            case F32 -> "F32";
            case F64 -> "F64";
            case I64 -> "I64";
            case I1 -> "BOOL";
            case BF16, F16, F8E4M3, F8E5M2 -> throw new IllegalArgumentException("safetensors writer holds host tensors, not " + d);
        };
    }

    private static int width(DType d) {
        return switch (d) {
            case F32 -> 4;
            case F64, I64 -> 8;
            case I1 -> 1;
            case BF16, F16 -> 2;
            case F8E4M3, F8E5M2 -> 1;
        };
    }
}
