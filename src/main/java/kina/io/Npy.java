package kina.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * NumPy {@code .npy} files ↔ host tensors. Format (numpy.lib.format): the magic {@code \x93NUMPY},
 * a version byte pair (1.0: a 2-byte header length; 2.0 and 3.0: 4 bytes; 3.0's header is UTF-8,
 * the others Latin-1), all little-endian; then a Python dict literal
 * {@code {'descr': '<f4', 'fortran_order': False, 'shape': (1, 4, 8), }} padded with spaces to a
 * multiple of 64 bytes and ended by a newline; then the raw elements.
 *
 * <p>Read: {@code <f4} → F32, {@code <f8} → F64, {@code <i8} → I64, {@code |b1} or {@code |u1}
 * (values 0 or 1) → I1; C order, little-endian, exactly the bytes the shape needs, at most
 * {@link Integer#MAX_VALUE} elements. Anything else is a {@link FileFormatError} naming the file
 * and the problem. Write: F32, F64, I64 as above and I1 as {@code |b1}, version 1.0 (2.0 only for
 * a header over 64 KiB), through a temporary file in the same directory renamed atomically over
 * the target, so a reader never sees a partial file.
 */
public final class Npy {
    private Npy() {}

    private static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
    private static final int CHUNK = 1 << 20;   // bytes per read/write; a multiple of every item size

    /** An element encoding kina reads: its descr, dtype and item size in bytes. */
    private enum Elem {
        F4("<f4", DType.F32, 4), F8("<f8", DType.F64, 8), I8("<i8", DType.I64, 8),
        B1("|b1", DType.I1, 1), U1("|u1", DType.I1, 1);

        final String descr;
        final DType dtype;
        final int size;

        Elem(String descr, DType dtype, int size) {
            this.descr = descr;
            this.dtype = dtype;
            this.size = size;
        }

        static Elem ofDescr(String d) {
            for (Elem e : values()) if (e.descr.equals(d)) return e;
            return null;
        }

        /** The encoding write uses for a host dtype; null for dtypes the host does not keep. */
        static Elem forWrite(DType d) {
            return switch (d) {
                case F32 -> F4;
                case F64 -> F8;
                case I64 -> I8;
                case I1 -> B1;
                case BF16, F16, F8E4M3, F8E5M2 -> null;
            };
        }
    }

    /** A parsed header: the encoding, the shape, the element count and where the data starts. */
    private record Header(Elem elem, Shape shape, int count, long dataOffset) {}

    /** Reads the tensor in {@code p} as a host tensor of the file's dtype and shape, under {@link FileCap#DEFAULT}. */
    public static Tensor read(Path p) { return read(p, FileCap.DEFAULT); }

    /** Reads the tensor in {@code p} as a host tensor of the file's dtype and shape; a file over {@code cap} is refused. */
    public static Tensor read(Path p, FileCap cap) {
        try (FileChannel ch = open(p)) {
            Header h = header(p, ch, cap);
            return data(p, ch, h, TensorType.host(h.elem.dtype, h.shape.dims()));
        } catch (IOException e) {
            throw ioError(p, "cannot read", e);
        }
    }

    /** {@link #read(Path, TensorType, FileCap)} under {@link FileCap#DEFAULT}. */
    public static Tensor read(Path p, TensorType expected) { return read(p, expected, FileCap.DEFAULT); }

    /**
     * Reads {@code p}, which must hold exactly {@code expected}'s dtype and shape (else an error
     * naming both); the tensor gets {@code expected} as its type. A file over {@code cap} is refused.
     */
    public static Tensor read(Path p, TensorType expected, FileCap cap) {
        if (!expected.dtype().hostRunnable())
            throw new FileFormatError(p, "the program declares " + expected
                    + ", and host tensors are F32, F64, I64 or I1 only");
        try (FileChannel ch = open(p)) {
            Header h = header(p, ch, cap);
            if (h.elem.dtype != expected.dtype() || !h.shape.equals(expected.shape()))
                throw new FileFormatError(p, "holds " + h.elem.dtype + " " + h.shape + " ('" + h.elem.descr
                        + "'), but the program declares " + expected);
            return data(p, ch, h, expected);
        } catch (IOException e) {
            throw ioError(p, "cannot read", e);
        }
    }

    /** Writes {@code t} to {@code p} (replacing it) atomically: a temporary file, then a rename. */
    public static void write(Path p, Tensor t) {
        Elem e = Elem.forWrite(t.dtype());
        if (e == null) throw new FileFormatError(p, "cannot write " + t.dtype() + " to .npy");
        byte[] head = headerBytes(e, t.shape());
        Path abs = p.toAbsolutePath();
        Path tmp = abs.resolveSibling("." + abs.getFileName() + ".tmp"
                + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 1));
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                writeFully(ch, ByteBuffer.wrap(head));
                ByteBuffer buf = ByteBuffer.allocateDirect(CHUNK).order(ByteOrder.LITTLE_ENDIAN);
                int n = t.size();
                for (int i = 0; i < n; i++) {
                    if (buf.remaining() < e.size) { buf.flip(); writeFully(ch, buf); buf.clear(); }
                    switch (e) {
                        case F4 -> buf.putFloat((float) t.get(i));
                        case F8 -> buf.putDouble(t.get(i));
                        case I8 -> buf.putLong(t.ints()[i]);
                        case B1, U1 -> buf.put((byte) (t.ints()[i] != 0 ? 1 : 0));
                    }
                }
                buf.flip();
                writeFully(ch, buf);
                ch.force(true);
            }
            Files.move(tmp, abs, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException ex) {
            try { Files.deleteIfExists(tmp); } catch (IOException ignored) { /* best effort */ }
            throw ioError(p, "cannot write", ex);
        }
    }

    // ---- reading ----

    private static FileChannel open(Path p) throws IOException {
        if (Files.isDirectory(p)) throw new FileFormatError(p, "is a directory, not an .npy file");
        try {
            return FileChannel.open(p, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw new FileFormatError(p, "no such file");
        } catch (AccessDeniedException e) {
            throw new FileFormatError(p, "cannot read: permission denied");
        }
    }

    private static Header header(Path p, FileChannel ch, FileCap cap) throws IOException {
        long size = ch.size();
        String big = cap.tooLarge(size);
        if (big != null) throw new FileFormatError(p, big);
        if (size == 0) throw new FileFormatError(p, "empty file (0 bytes), not an .npy file");
        ByteBuffer pre = ByteBuffer.allocate((int) Math.min(size, 12)).order(ByteOrder.LITTLE_ENDIAN);
        readFully(ch, pre, 0);
        byte[] b = pre.array();
        for (int i = 0; i < MAGIC.length; i++)
            if (i >= b.length || b[i] != MAGIC[i])
                throw new FileFormatError(p, "not an .npy file (bad magic: it must start with \\x93NUMPY)");
        if (b.length < 10) throw new FileFormatError(p, "truncated .npy header (" + size + " bytes)");
        int major = b[6] & 0xff, minor = b[7] & 0xff;
        long hlen;
        int preLen;
        switch (major) {
            case 1 -> { hlen = pre.getShort(8) & 0xffff; preLen = 10; }
            case 2, 3 -> {
                if (b.length < 12) throw new FileFormatError(p, "truncated .npy header (" + size + " bytes)");
                hlen = pre.getInt(8) & 0xffffffffL;
                preLen = 12;
            }
            default -> throw new FileFormatError(p, "unsupported .npy version " + major + "." + minor
                    + " (kina reads 1.0, 2.0 and 3.0)");
        }
        if (preLen + hlen > size)
            throw new FileFormatError(p, "truncated .npy header: it says " + hlen + " bytes, the file has "
                    + (size - preLen) + " after the preamble");
        if (hlen > 1 << 24) throw new FileFormatError(p, "implausible .npy header length " + hlen);
        ByteBuffer hb = ByteBuffer.allocate((int) hlen);
        readFully(ch, hb, preLen);
        String text = new String(hb.array(), major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);

        Map<String, Object> dict;
        try {
            dict = new DictParser(text).dict();
        } catch (IllegalArgumentException e) {
            throw new FileFormatError(p, "bad .npy header: " + e.getMessage());
        }
        Object descr = need(p, dict, "descr"), fortran = need(p, dict, "fortran_order"), shape = need(p, dict, "shape");

        if (!(fortran instanceof Boolean f)) throw new FileFormatError(p, "bad .npy header: 'fortran_order' is not True or False");
        if (f) throw new FileFormatError(p, "fortran_order is True; kina reads C-order arrays only "
                + "(save np.ascontiguousarray(a))");
        if (!(descr instanceof String d))
            throw new FileFormatError(p, "unsupported dtype (a structured dtype); kina reads '<f4' (F32), '<f8' (F64), "
                    + "'<i8' (I64), '|b1' or '|u1' (I1)");
        if (d.startsWith(">") && !d.substring(1).matches("[bu]1"))
            throw new FileFormatError(p, "big-endian data ('" + d + "'); kina reads little-endian only "
                    + "(save a.astype('<" + d.substring(1) + "'))");
        Elem e = Elem.ofDescr(d);
        if (e == null)
            throw new FileFormatError(p, "unsupported dtype '" + d + "'; kina reads '<f4' (F32), '<f8' (F64), "
                    + "'<i8' (I64), '|b1' or '|u1' (I1)");

        if (!(shape instanceof List<?> dimsList)) throw new FileFormatError(p, "bad .npy header: 'shape' is not a tuple");
        long[] dims = new long[dimsList.size()];
        for (int i = 0; i < dims.length; i++) {
            if (!(dimsList.get(i) instanceof Long l) || l < 0)
                throw new FileFormatError(p, "bad .npy header: 'shape' holds " + dimsList.get(i) + ", not a dim");
            dims[i] = l;
        }
        Shape s = new Shape(dims);
        long count;
        try {
            count = s.vol();
        } catch (ArithmeticException overflow) {
            count = Long.MAX_VALUE;
        }
        if (count > Integer.MAX_VALUE)
            throw new FileFormatError(p, "too large: shape " + s + " has " + (count == Long.MAX_VALUE ? "over 2^63" : count)
                    + " elements; kina holds at most " + Integer.MAX_VALUE + " per tensor");
        return new Header(e, s, (int) count, preLen + hlen);
    }

    private static Object need(Path p, Map<String, Object> dict, String key) {
        Object v = dict.get(key);
        if (v == null) throw new FileFormatError(p, "bad .npy header: no '" + key + "' entry");
        return v;
    }

    private static Tensor data(Path p, FileChannel ch, Header h, TensorType type) throws IOException {
        long need = (long) h.count * h.elem.size, have = ch.size() - h.dataOffset;
        if (have < need)
            throw new FileFormatError(p, "truncated data: shape " + h.shape + " of '" + h.elem.descr + "' needs "
                    + need + " bytes, the file has " + have + " after the header");
        if (have > need)
            throw new FileFormatError(p, (have - need) + " unexpected bytes after the data (shape " + h.shape
                    + " of '" + h.elem.descr + "' is " + need + " bytes)");
        int n = h.count;
        double[] fl = h.elem.dtype.floating() ? new double[n] : null;
        long[] in = fl == null ? new long[n] : null;
        ByteBuffer buf = ByteBuffer.allocateDirect(CHUNK).order(ByteOrder.LITTLE_ENDIAN);
        long pos = h.dataOffset;
        int i = 0;
        while (i < n) {
            buf.clear();
            buf.limit((int) Math.min(CHUNK, (long) (n - i) * h.elem.size));
            pos += readFully(ch, buf, pos);
            buf.flip();
            while (buf.remaining() >= h.elem.size) {
                switch (h.elem) {
                    case F4 -> fl[i] = buf.getFloat();
                    case F8 -> fl[i] = buf.getDouble();
                    case I8 -> in[i] = buf.getLong();
                    case B1, U1 -> {
                        int v = buf.get() & 0xff;
                        if (v > 1) throw new FileFormatError(p, "element " + i + " is " + v + "; an I1 ('"
                                + h.elem.descr + "') element must be 0 or 1");
                        in[i] = v;
                    }
                }
                i++;
            }
        }
        return fl != null ? Tensor.ofFloats(type, fl) : Tensor.ofInts(type, in);
    }

    /** Fills {@code buf} from {@code pos}; returns the bytes read. */
    private static int readFully(FileChannel ch, ByteBuffer buf, long pos) throws IOException {
        int total = 0;
        while (buf.hasRemaining()) {
            int r = ch.read(buf, pos + total);
            if (r < 0) throw new IOException("unexpected end of file");
            total += r;
        }
        return total;
    }

    private static void writeFully(FileChannel ch, ByteBuffer buf) throws IOException {
        while (buf.hasRemaining()) ch.write(buf);
    }

    private static FileFormatError ioError(Path p, String what, IOException e) {
        String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        return new FileFormatError(p, what + ": " + m.replace('\n', ' '), e);
    }

    // ---- writing ----

    /** Magic, version, length and the padded dict: a multiple of 64 bytes, ending in a newline. */
    private static byte[] headerBytes(Elem e, Shape s) {
        StringBuilder dict = new StringBuilder("{'descr': '").append(e.descr)
                .append("', 'fortran_order': False, 'shape': (");
        for (int i = 0; i < s.rank(); i++) {
            if (i > 0) dict.append(", ");
            dict.append(s.dim(i));
        }
        if (s.rank() == 1) dict.append(',');
        dict.append("), }");
        int v = dict.length() + 1 + 10 <= 65535 ? 1 : 2;
        int pre = v == 1 ? 10 : 12;
        int total = pre + dict.length() + 1;
        int padded = (total + 63) / 64 * 64;
        dict.append(" ".repeat(padded - total)).append('\n');
        ByteBuffer b = ByteBuffer.allocate(padded).order(ByteOrder.LITTLE_ENDIAN);
        b.put(MAGIC).put((byte) v).put((byte) 0);
        int hlen = padded - pre;
        if (v == 1) b.putShort((short) hlen); else b.putInt(hlen);
        b.put(dict.toString().getBytes(StandardCharsets.ISO_8859_1));
        return b.array();
    }

    /**
     * The Python literals of an .npy header: a dict of string keys whose values are strings,
     * True / False / None, integers (an old {@code L} suffix allowed), and tuples or lists of them.
     */
    private static final class DictParser {
        private final String s;
        private int i;

        DictParser(String s) { this.s = s; }

        Map<String, Object> dict() {
            ws();
            expect('{');
            Map<String, Object> m = new LinkedHashMap<>();
            ws();
            while (peek() != '}') {
                Object k = value();
                if (!(k instanceof String key)) throw new IllegalArgumentException("a key is not a string");
                ws();
                expect(':');
                m.put(key, value());
                ws();
                if (peek() == ',') { i++; ws(); } else if (peek() != '}') throw bad("',' or '}'");
            }
            i++;
            return m;
        }

        private Object value() {
            ws();
            char c = peek();
            if (c == '\'' || c == '"') {
                int end = s.indexOf(c, i + 1);
                if (end < 0) throw new IllegalArgumentException("unterminated string");
                String v = s.substring(i + 1, end);
                i = end + 1;
                return v;
            }
            if (c == '(' || c == '[') {
                char close = c == '(' ? ')' : ']';
                i++;
                List<Object> l = new ArrayList<>();
                ws();
                while (peek() != close) {
                    l.add(value());
                    ws();
                    if (peek() == ',') { i++; ws(); } else if (peek() != close) throw bad("',' or '" + close + "'");
                }
                i++;
                return l;
            }
            if (c == '{') return dict();
            int start = i;
            while (i < s.length() && (Character.isLetterOrDigit(s.charAt(i)) || s.charAt(i) == '-' || s.charAt(i) == '_')) i++;
            String word = s.substring(start, i);
            switch (word) {
                case "True": return Boolean.TRUE;
                case "False": return Boolean.FALSE;
                case "None": return "None";
                default:
                    String digits = word.endsWith("L") ? word.substring(0, word.length() - 1) : word;
                    try {
                        return Long.parseLong(digits);
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException(word.isEmpty() ? "unexpected '" + c + "'" : "unexpected '" + word + "'");
                    }
            }
        }

        private char peek() {
            if (i >= s.length()) throw new IllegalArgumentException("the header dict ends early");
            return s.charAt(i);
        }

        private void expect(char c) {
            if (peek() != c) throw bad("'" + c + "'");
            i++;
        }

        private void ws() { while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++; }

        private IllegalArgumentException bad(String wanted) {
            return new IllegalArgumentException("expected " + wanted + " at offset " + i + ", found '" + peek() + "'");
        }
    }
}
