package kina.io;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.TensorType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TensorJsonTest {
    @TempDir Path dir;

    Path file(String name, String text) {
        try {
            return Files.writeString(dir.resolve(name), text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
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

    // ---- both forms ----

    @Test void readsNestedArrays() {
        Tensor t = TensorJson.read(file("a.json", "[[1, 2.5, -3], [0.1, 1e-3, -0.0]]"), host(DType.F32, 2, 3));
        assertThat(t.type()).isEqualTo(host(DType.F32, 2, 3));
        assertThat(t.floats()).containsExactly(1, 2.5, -3, (double) 0.1f, (double) 1e-3f, -0.0);
        assertThat(Double.doubleToRawLongBits(t.floats()[5])).isEqualTo(Double.doubleToRawLongBits(-0.0));

        Tensor ids = TensorJson.read(file("ids.json", "[[3, 1, 3, 7]]"), host(DType.I64, 1, 4));
        assertThat(ids.ints()).containsExactly(3, 1, 3, 7);

        Tensor mask = TensorJson.read(file("m.json", "[true, false, 1, 0]"), host(DType.I1, 4));
        assertThat(mask.ints()).containsExactly(1, 0, 1, 0);

        Tensor inf = TensorJson.read(file("inf.json", "[NaN, Infinity, -Infinity, +INF, -INF]"), host(DType.F32, 5));
        assertThat(inf.floats()).containsExactly(Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY,
                Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY);

        Tensor scalar = TensorJson.read(file("s.json", "0.5"), host(DType.F64));
        assertThat(scalar.floats()).containsExactly(0.5);

        Tensor empty = TensorJson.read(file("e.json", "[[], []]"), host(DType.F32, 2, 0));
        assertThat(empty.size()).isZero();
    }

    @Test void readsTheObjectForm() {
        Tensor t = TensorJson.read(file("o.json", "{\"dtype\": \"F64\", \"shape\": [2, 2], \"data\": [1, 2, 3, 4]}"),
                host(DType.F64, 2, 2));
        assertThat(t.floats()).containsExactly(1, 2, 3, 4);
    }

    @Test void f32RoundsOnceFromTheDecimalText() {
        // 1.00000005960464477539062500000000001 lies just above the midpoint between 1 and the next
        // float: parsed straight to float it rounds up; via double it would round to 1.0f.
        String text = "1.00000005960464477539062500000000001";
        Tensor t = TensorJson.read(file("r.json", "[" + text + "]"), host(DType.F32, 1));
        assertThat((float) t.floats()[0]).isEqualTo(Float.parseFloat(text)).isEqualTo(Math.nextUp(1.0f));
    }

    @Test void writeThenReadIsBitForBitForEveryDtype() {
        double[] specials = {0.0, -0.0, 1.0, -1e9, Double.MIN_VALUE, Double.MAX_VALUE, Double.NaN,
            Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0.1, 1.0 / 3.0, Math.PI};
        for (DType d : new DType[] {DType.F32, DType.F64}) {
            Tensor t = Tensor.ofFloats(host(d, 3, 4), specials.clone());
            Tensor back = TensorJson.read(file(d + ".json", TensorJson.write(t)), t.type());
            assertThat(back.bitEquals(t)).as(d.toString()).isTrue();
        }
        Tensor i64 = Tensor.ofInts(host(DType.I64, 2, 2), new long[] {Long.MIN_VALUE, -1, 0, Long.MAX_VALUE});
        assertThat(TensorJson.read(file("i.json", TensorJson.write(i64)), i64.type()).bitEquals(i64)).isTrue();
        Tensor i1 = Tensor.ofInts(host(DType.I1, 3), new long[] {1, 0, 1});
        assertThat(TensorJson.read(file("b.json", TensorJson.write(i1)), i1.type()).bitEquals(i1)).isTrue();
        Tensor rank0 = Tensor.ofFloats(host(DType.F32), new double[] {2.5});
        assertThat(TensorJson.read(file("r0.json", TensorJson.write(rank0)), rank0.type()).bitEquals(rank0)).isTrue();
    }

    @Test void writeProducesTheObjectForm() {
        assertThat(TensorJson.write(Tensor.of(DType.F32, new long[] {2, 2}, 1, 0.5, -0.0, 1e-9)))
                .isEqualTo("{\"dtype\": \"F32\", \"shape\": [2, 2], \"data\": [1.0, 0.5, -0.0, 1.0E-9]}");
        assertThat(TensorJson.write(Tensor.of(DType.I64, new long[] {1, 4}, 3, 1, 3, 7)))
                .isEqualTo("{\"dtype\": \"I64\", \"shape\": [1, 4], \"data\": [3, 1, 3, 7]}");
        assertThat(TensorJson.write(Tensor.of(DType.F64, new long[] {}, Double.NaN)))
                .isEqualTo("{\"dtype\": \"F64\", \"shape\": [], \"data\": [NaN]}");
    }

    // ---- bad files ----

    @Test void missingEmptyAndInvalid() {
        Path absent = dir.resolve("absent.json");
        assertThat(message(() -> TensorJson.read(absent, host(DType.F32, 1)))).isEqualTo(absent + ": no such file");
        Path empty = file("empty.json", "  \n");
        assertThat(message(() -> TensorJson.read(empty, host(DType.F32, 1)))).isEqualTo(empty + ": empty file, not a JSON tensor");
        Path bad = file("bad.json", "[1, 2,\n 3");
        assertThat(message(() -> TensorJson.read(bad, host(DType.F32, 3)))).startsWith(bad + ": not valid JSON at line 2");
        Path dup = file("dup.json", "{\"dtype\": \"F32\", \"dtype\": \"F32\"}");
        assertThat(message(() -> TensorJson.read(dup, host(DType.F32, 1)))).isEqualTo(dup + ": key \"dtype\" appears twice");
        Path open = file("open.json", "{\"dtype\": \"F32\", \"data\": [1");
        assertThat(message(() -> TensorJson.read(open, host(DType.F32, 1)))).isEqualTo(open
                + ": not valid JSON at line 1, column 28: unexpected end of input (the array opened at line 1, column 26 is not closed)");
        Path tok = file("tok.json", "[1, x]");
        assertThat(message(() -> TensorJson.read(tok, host(DType.F32, 2))))
                .isEqualTo(tok + ": not valid JSON at line 1, column 5: unrecognized token 'x': expected a number, array or object");
        Path comma = file("comma.json", "[1 2]");
        assertThat(message(() -> TensorJson.read(comma, host(DType.F32, 2))))
                .isEqualTo(comma + ": not valid JSON at line 1, column 4: unexpected '2': expected comma to separate array entries");
        Path trailing = file("trail.json", "[1] [2]");
        assertThat(message(() -> TensorJson.read(trailing, host(DType.F32, 1)))).startsWith(trailing + ": not valid JSON");
    }

    @Test void wrongShapeAndRaggedArrays() {
        TensorType t = host(DType.F32, 2, 3);
        Path rows = file("rows.json", "[[1, 2, 3]]");
        assertThat(message(() -> TensorJson.read(rows, t)))
                .isEqualTo(rows + ": the top-level array has 1 elements, but shape [2, 3] needs 2 on axis 0");
        Path ragged = file("ragged.json", "[[1, 2, 3], [4, 5]]");
        assertThat(message(() -> TensorJson.read(ragged, t)))
                .isEqualTo(ragged + ": the array at [1] has 2 elements, but shape [2, 3] needs 3 on axis 1");
        Path flat = file("flat.json", "[1, 2, 3, 4, 5, 6]");
        assertThat(message(() -> TensorJson.read(flat, t)))
                .isEqualTo(flat + ": the top-level array has 6 elements, but shape [2, 3] needs 2 on axis 0; flat data"
                        + " needs the object form {\"dtype\": .., \"shape\": .., \"data\": [..]}");
        Path rank = file("rank.json", "[1, 2]");
        assertThat(message(() -> TensorJson.read(rank, host(DType.F32, 2, 1))))
                .isEqualTo(rank + ": element [0] is 1, but shape [2, 1] needs an array of 1 there");
        Path deep = file("deep.json", "[[1, 2, [3]], [4, 5, 6]]");
        assertThat(message(() -> TensorJson.read(deep, t))).isEqualTo(deep + ": element [0][2] is an array, not a number");
    }

    @Test void nonNumbersAndNonIntegers() {
        Path str = file("str.json", "[[1, \"two\"]]");
        assertThat(message(() -> TensorJson.read(str, host(DType.F64, 1, 2))))
                .isEqualTo(str + ": element [0][1] is \"two\", not a number");
        Path nul = file("null.json", "[null]");
        assertThat(message(() -> TensorJson.read(nul, host(DType.F32, 1)))).isEqualTo(nul + ": element [0] is null, not a number");
        Path frac = file("frac.json", "[[3, 1.5, 3, 7]]");
        assertThat(message(() -> TensorJson.read(frac, host(DType.I64, 1, 4))))
                .isEqualTo(frac + ": element [0][1] is 1.5, not an integer (the dtype is I64)");
        Path big = file("big.json", "[99999999999999999999]");
        assertThat(message(() -> TensorJson.read(big, host(DType.I64, 1))))
                .isEqualTo(big + ": element [0] is 99999999999999999999, outside I64");
        Path two = file("two.json", "[0, 2]");
        assertThat(message(() -> TensorJson.read(two, host(DType.I1, 2))))
                .isEqualTo(two + ": element [1] is 2; an I1 element is 0, 1, true or false");
    }

    @Test void objectFormMismatchesNameBoth() {
        TensorType t = host(DType.F32, 2, 2);
        Path dt = file("dt.json", "{\"dtype\": \"F64\", \"shape\": [2, 2], \"data\": [1, 2, 3, 4]}");
        assertThat(message(() -> TensorJson.read(dt, t)))
                .isEqualTo(dt + ": holds F64 [2, 2], but the program declares tensor<F32, [2, 2], @host>");
        Path sh = file("sh.json", "{\"dtype\": \"F32\", \"shape\": [4], \"data\": [1, 2, 3, 4]}");
        assertThat(message(() -> TensorJson.read(sh, t)))
                .isEqualTo(sh + ": holds F32 [4], but the program declares tensor<F32, [2, 2], @host>");
        Path n = file("n.json", "{\"dtype\": \"F32\", \"shape\": [2, 2], \"data\": [1, 2, 3]}");
        assertThat(message(() -> TensorJson.read(n, t))).isEqualTo(n + ": \"data\" has 3 elements; shape [2, 2] needs 4");
        Path el = file("el.json", "{\"dtype\": \"F32\", \"shape\": [2, 2], \"data\": [1, 2, 3, \"x\"]}");
        assertThat(message(() -> TensorJson.read(el, t))).isEqualTo(el + ": data[3] is \"x\", not a number");
        Path key = file("key.json", "{\"dtype\": \"F32\", \"shape\": [2, 2], \"data\": [1, 2, 3, 4], \"extra\": 1}");
        assertThat(message(() -> TensorJson.read(key, t)))
                .isEqualTo(key + ": unknown key \"extra\" (the object form has \"dtype\", \"shape\" and \"data\")");
        Path miss = file("miss.json", "{\"dtype\": \"F32\", \"shape\": [2, 2]}");
        assertThat(message(() -> TensorJson.read(miss, t)))
                .isEqualTo(miss + ": no \"data\" (the object form has \"dtype\", \"shape\" and \"data\")");
        Path bad = file("baddt.json", "{\"dtype\": \"float32\", \"shape\": [2, 2], \"data\": [1, 2, 3, 4]}");
        assertThat(message(() -> TensorJson.read(bad, t))).isEqualTo(bad + ": \"dtype\" is \"float32\", not a dtype such as \"F32\"");
    }

    @Test void declaredTypesTheHostCannotHold() {
        Path f = file("x.json", "[1]");
        assertThat(message(() -> TensorJson.read(f, host(DType.BF16, 1))))
                .isEqualTo(f + ": the program declares tensor<BF16, [1], @host>, and host tensors are F32, F64, I64 or I1 only");
        assertThat(message(() -> TensorJson.read(f, host(DType.F32, 100000, 100000))))
                .isEqualTo(f + ": too large: shape [100000, 100000] has more than 2147483647 elements");
    }
}
