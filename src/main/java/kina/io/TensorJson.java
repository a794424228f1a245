package kina.io;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * Tensors as JSON. Read accepts, for a declared type, either
 * <ul>
 *   <li>nested arrays of numbers matching the shape exactly ({@code [[1, 2], [3, 4]]} for [2, 2];
 *       a bare number for rank 0), or</li>
 *   <li>the object form {@code {"dtype": "F32", "shape": [2, 2], "data": [1, 2, 3, 4]}} with the
 *       elements flat in row-major order; its dtype and shape must be the declared ones.</li>
 * </ul>
 * F32 elements are rounded once from the decimal text to float, F64 to double (so a value written
 * by {@link #write} reads back bit for bit); {@code NaN}, {@code Infinity} and {@code -Infinity}
 * are accepted as Python's json module writes them. I64 elements must be integers in range; I1
 * elements are 0, 1, true or false. Every problem is a {@link FileFormatError} naming the file and
 * where in it (e.g. {@code element [0][2]}, {@code data[5]}).
 */
public final class TensorJson {
    private TensorJson() {}

    private static final JsonFactory FACTORY = JsonFactory.builder()
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            .build();

    /**
     * A parsed JSON value. Numbers keep their text, so each element is rounded once, straight to
     * its dtype, and {@code -0.0} keeps its sign (a BigDecimal or a tree of doubles would lose one
     * or the other).
     */
    private sealed interface J {
        record Arr(List<J> elems) implements J {}
        record Obj(Map<String, J> fields) implements J {}
        record Num(String text, boolean integral) implements J {}
        record Str(String text) implements J {}
        record Bool(boolean value) implements J {}
        record Null() implements J {}
    }

    private static final Set<String> KEYS = Set.of("dtype", "shape", "data");

    /** Reads {@code p} as a tensor of type {@code expected}, under {@link FileCap#DEFAULT}. */
    public static Tensor read(Path p, TensorType expected) { return read(p, expected, FileCap.DEFAULT); }

    /** Reads {@code p} as a tensor of type {@code expected}; a file over {@code cap} is refused by its size. */
    public static Tensor read(Path p, TensorType expected, FileCap cap) {
        if (!expected.dtype().hostRunnable())
            throw new FileFormatError(p, "the program declares " + expected
                    + ", and host tensors are F32, F64, I64 or I1 only");
        long vol = volume(p, expected.shape());
        J root = parse(p, cap);
        Sink sink = new Sink(p, expected, (int) vol);
        if (root instanceof J.Obj obj) objectForm(p, obj, expected, sink);
        else nested(root, expected.shape(), 0, "", sink);
        return sink.tensor();
    }

    /** The object form of {@code t}: {@code {"dtype": "F32", "shape": [..], "data": [..]}}, one line. */
    public static String write(Tensor t) {
        StringBuilder b = new StringBuilder("{\"dtype\": \"").append(t.dtype().spelling()).append("\", \"shape\": [");
        Shape s = t.shape();
        for (int i = 0; i < s.rank(); i++) b.append(i > 0 ? ", " : "").append(s.dim(i));
        b.append("], \"data\": [");
        for (int i = 0; i < t.size(); i++) {
            if (i > 0) b.append(", ");
            switch (t.dtype()) {
                case F32 -> number(b, (float) t.floats()[i]);
                case F64 -> number(b, t.floats()[i]);
                case I64, I1 -> b.append(t.ints()[i]);
                case BF16, F16, F8E4M3, F8E5M2 -> throw new IllegalArgumentException("no host tensor has dtype " + t.dtype());
            }
        }
        return b.append("]}").toString();
    }

    private static void number(StringBuilder b, double v) {
        if (Double.isNaN(v)) b.append("NaN");
        else if (Double.isInfinite(v)) b.append(v > 0 ? "Infinity" : "-Infinity");
        else b.append(v);
    }

    private static void number(StringBuilder b, float v) {
        if (Float.isNaN(v)) b.append("NaN");
        else if (Float.isInfinite(v)) b.append(v > 0 ? "Infinity" : "-Infinity");
        else b.append(v);
    }

    // ---- reading ----

    private static long volume(Path p, Shape s) {
        long vol;
        try {
            vol = s.vol();
        } catch (ArithmeticException e) {
            vol = Long.MAX_VALUE;
        }
        if (vol > Integer.MAX_VALUE)
            throw new FileFormatError(p, "too large: shape " + s + " has more than " + Integer.MAX_VALUE + " elements");
        return vol;
    }

    private static J parse(Path p, FileCap cap) {
        if (Files.isDirectory(p)) throw new FileFormatError(p, "is a directory, not a JSON file");
        String text;
        try {
            String big = cap.tooLarge(Files.size(p));
            if (big != null) throw new FileFormatError(p, big);
            text = Files.readString(p);
        } catch (NoSuchFileException e) {
            throw new FileFormatError(p, "no such file");
        } catch (AccessDeniedException e) {
            throw new FileFormatError(p, "cannot read: permission denied");
        } catch (CharacterCodingException e) {
            throw new FileFormatError(p, "not a JSON file (not UTF-8 text)");
        } catch (IOException e) {
            throw new FileFormatError(p, "cannot read: " + e.getMessage(), e);
        }
        if (text.isBlank()) throw new FileFormatError(p, "empty file, not a JSON tensor");
        try (JsonParser jp = FACTORY.createParser(text)) {
            J root = value(p, jp, jp.nextToken());
            if (jp.nextToken() != null)
                throw new FileFormatError(p, "not valid JSON at line " + jp.currentLocation().getLineNr() + ", column "
                        + jp.currentLocation().getColumnNr() + ": more content after the tensor");
            return root;
        } catch (JsonProcessingException e) {
            String where = e.getLocation() == null ? ""
                    : " at line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr();
            throw new FileFormatError(p, "not valid JSON" + where + ": " + plain(e.getOriginalMessage()));
        } catch (IOException e) {
            throw new FileFormatError(p, "cannot read: " + e.getMessage(), e);
        }
    }

    /**
     * Jackson's parse message in a user's words: its first line, without the source description
     * ("[Source: REDACTED (`StreamReadFeature...` disabled); line: 1, column: 2]") or the list of
     * what a JSON value may be; e.g. "unexpected end of input (the array opened at line 1, column 1
     * is not closed)". Also used for checkpoints' state.json, safetensors headers and config files.
     */
    public static String plain(String jackson) {
        String m = jackson == null ? "" : jackson.lines().findFirst().orElse("");
        m = m.replaceAll("\\[Source: [^\\]]*?line: (\\d+), column: (\\d+)\\]", "line $1, column $2")
                .replaceAll(" \\(code -?\\d+\\)", "")
                .replaceAll("\\(JSON String, Number.*\\)", "a number, array or object")
                .replaceAll("expected a valid value", "expected")
                .replaceAll("was expecting", "expected");
        var end = Pattern.compile(
                "Unexpected end-of-input: expected close marker for (Array|Object) \\(start marker at (line \\d+, column \\d+)\\)")
                .matcher(m);
        if (end.find())
            return "unexpected end of input (the " + end.group(1).toLowerCase(Locale.ROOT) + " opened at "
                    + end.group(2) + " is not closed)";
        m = m.replace("Unexpected end-of-input", "unexpected end of input").replaceAll("character \\('(.+?)'\\)", "'$1'")
                .replace("Array", "array").replace("Object", "object");
        return m.isEmpty() ? m : Character.toLowerCase(m.charAt(0)) + m.substring(1);
    }

    /** The value starting at token {@code t}. */
    private static J value(Path p, JsonParser jp, JsonToken t) throws IOException {
        if (t == null) throw new FileFormatError(p, "not valid JSON: it ends early");
        return switch (t) {
            case START_ARRAY -> {
                List<J> l = new ArrayList<>();
                for (JsonToken x = jp.nextToken(); x != JsonToken.END_ARRAY; x = jp.nextToken()) l.add(value(p, jp, x));
                yield new J.Arr(l);
            }
            case START_OBJECT -> {
                Map<String, J> m = new LinkedHashMap<>();
                for (JsonToken x = jp.nextToken(); x != JsonToken.END_OBJECT; x = jp.nextToken()) {
                    String k = jp.currentName();
                    if (m.containsKey(k)) throw new FileFormatError(p, "key \"" + k + "\" appears twice");
                    m.put(k, value(p, jp, jp.nextToken()));
                }
                yield new J.Obj(m);
            }
            case VALUE_NUMBER_INT -> new J.Num(jp.getText(), true);
            case VALUE_NUMBER_FLOAT -> new J.Num(jp.getText(), false);
            case VALUE_STRING -> new J.Str(jp.getText());
            case VALUE_TRUE -> new J.Bool(true);
            case VALUE_FALSE -> new J.Bool(false);
            case VALUE_NULL -> new J.Null();
            case END_ARRAY, END_OBJECT, FIELD_NAME, VALUE_EMBEDDED_OBJECT, NOT_AVAILABLE ->
                    throw new FileFormatError(p, "not valid JSON at line " + jp.currentLocation().getLineNr()
                            + ": unexpected " + t);
        };
    }

    private static final String FORM = "(the object form has \"dtype\", \"shape\" and \"data\")";

    private static void objectForm(Path p, J.Obj root, TensorType expected, Sink sink) {
        for (String k : root.fields().keySet())
            if (!KEYS.contains(k)) throw new FileFormatError(p, "unknown key \"" + k + "\" " + FORM);
        for (String k : List.of("dtype", "shape", "data"))
            if (!root.fields().containsKey(k)) throw new FileFormatError(p, "no \"" + k + "\" " + FORM);

        J dn = root.fields().get("dtype");
        DType d = dn instanceof J.Str(String name) ? DType.parse(name) : null;
        if (d == null) throw new FileFormatError(p, "\"dtype\" is " + show(dn) + ", not a dtype such as \"F32\"");
        if (!(root.fields().get("shape") instanceof J.Arr(List<J> sn)))
            throw new FileFormatError(p, "\"shape\" is " + show(root.fields().get("shape")) + ", not an array of dims");
        long[] dims = new long[sn.size()];
        for (int i = 0; i < dims.length; i++) {
            J x = sn.get(i);
            long v = x instanceof J.Num(String text, boolean integral) && integral ? parseLong(text) : -1;
            if (v < 0) throw new FileFormatError(p, "\"shape\" holds " + show(x) + ", not a dim");
            dims[i] = v;
        }
        Shape s = new Shape(dims);
        if (d != expected.dtype() || !s.equals(expected.shape()))
            throw new FileFormatError(p, "holds " + d + " " + s + ", but the program declares " + expected);

        if (!(root.fields().get("data") instanceof J.Arr(List<J> data)))
            throw new FileFormatError(p, "\"data\" is " + show(root.fields().get("data")) + ", not an array");
        if (data.size() != sink.n)
            throw new FileFormatError(p, "\"data\" has " + data.size() + " elements; shape " + s + " needs " + sink.n);
        for (int i = 0; i < data.size(); i++) sink.add(data.get(i), "data[" + i + "]");
    }

    /** The long spelled {@code text}, or -1 when it does not fit. */
    private static long parseLong(String text) {
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** Walks nested arrays; {@code at} is the index path so far, e.g. {@code [0][2]}. */
    private static void nested(J node, Shape s, int depth, String at, Sink sink) {
        if (depth == s.rank()) {
            sink.add(node, "element " + (at.isEmpty() ? "(the scalar)" : at));
            return;
        }
        long want = s.dim(depth);
        if (!(node instanceof J.Arr(List<J> elems)))
            throw new FileFormatError(sink.p, (at.isEmpty() ? "the top level" : "element " + at) + " is " + show(node)
                    + ", but shape " + s + " needs an array of " + want + " there");
        if (elems.size() != want) {
            String hint = depth == 0 && s.rank() > 1 && elems.size() == sink.n
                    ? "; flat data needs the object form {\"dtype\": .., \"shape\": .., \"data\": [..]}" : "";
            throw new FileFormatError(sink.p, (at.isEmpty() ? "the top-level array" : "the array at " + at) + " has "
                    + elems.size() + " elements, but shape " + s + " needs " + want + " on axis " + depth + hint);
        }
        for (int i = 0; i < elems.size(); i++) nested(elems.get(i), s, depth + 1, at + "[" + i + "]", sink);
    }

    private static String show(J n) {
        return switch (n) {
            case J.Arr _ -> "an array";
            case J.Obj _ -> "an object";
            case J.Null _ -> "null";
            case J.Bool(boolean b) -> Boolean.toString(b);
            case J.Num(String text, boolean _) -> text;
            case J.Str(String t) -> "\"" + (t.length() > 20 ? t.substring(0, 20) + "…" : t) + "\"";
        };
    }

    /** Collects elements in row-major order and converts each to the declared dtype. */
    private static final class Sink {
        final Path p;
        final TensorType type;
        final int n;
        final double[] fl;
        final long[] in;
        int i;

        Sink(Path p, TensorType type, int n) {
            this.p = p;
            this.type = type;
            this.n = n;
            this.fl = type.dtype().floating() ? new double[n] : null;
            this.in = fl == null ? new long[n] : null;
        }

        void add(J x, String where) {
            switch (type.dtype()) {
                case F32 -> fl[i] = Float.parseFloat(number(x, where));      // once, straight to float
                case F64 -> fl[i] = Double.parseDouble(number(x, where));
                case I64 -> {
                    String text = number(x, where);
                    if (!(x instanceof J.Num(String _, boolean integral) && integral))
                        throw new FileFormatError(p, where + " is " + text + ", not an integer (the dtype is I64)");
                    try {
                        in[i] = Long.parseLong(text);
                    } catch (NumberFormatException e) {
                        throw new FileFormatError(p, where + " is " + text + ", outside I64");
                    }
                }
                case I1 -> in[i] = switch (x) {
                    case J.Bool(boolean b) -> b ? 1 : 0;
                    case J.Num(String t, boolean integral) when integral && (t.equals("0") || t.equals("1")) -> Long.parseLong(t);
                    case J.Num _, J.Arr _, J.Obj _, J.Str _, J.Null _ ->
                            throw new FileFormatError(p, where + " is " + show(x) + "; an I1 element is 0, 1, true or false");
                };
                case BF16, F16, F8E4M3, F8E5M2 -> throw new IllegalStateException("refused in read");
            }
            i++;
        }

        /** The text of a number element, in Java's spelling (NaN, Infinity, -Infinity included). */
        private String number(J x, String where) {
            if (!(x instanceof J.Num(String text, boolean _)))
                throw new FileFormatError(p, where + " is " + show(x) + ", not a number");
            return switch (text) {
                case "INF", "+INF", "+Infinity" -> "Infinity";
                case "-INF" -> "-Infinity";
                default -> text;
            };
        }

        Tensor tensor() {
            return fl != null ? Tensor.ofFloats(type, fl) : Tensor.ofInts(type, in);
        }
    }
}
