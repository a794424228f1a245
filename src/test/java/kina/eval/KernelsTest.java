package kina.eval;

import kina.kernels.KinaMath;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import kina.ir.DType;
import kina.ir.Payload;
import kina.ir.Perm;
import kina.ir.Placement;
import kina.ir.Shape;
import kina.ir.TensorType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class KernelsTest {

    static long[] dims(long... d) { return d; }

    static Tensor t(DType d, long[] dims, double... v) { return Tensor.of(d, dims, v); }

    static Tensor ids(long[] dims, double... v) { return Tensor.of(DType.I64, dims, v); }

    /** Same type and the same raw bits as the expected values (rounded for F32). */
    static void assertBits(Tensor got, DType d, long[] dims, double... expected) {
        Tensor want = Tensor.of(d, dims, expected);
        assertThat(got.type()).isEqualTo(want.type());
        for (int i = 0; i < expected.length; i++)
            assertThat(Double.doubleToRawLongBits(got.get(i)))
                    .as("element %d: got %s want %s", i, got.get(i), want.get(i))
                    .isEqualTo(Double.doubleToRawLongBits(want.get(i)));
    }

    // ---- constants, unary, binary -------------------------------------------------------------

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void fillAndLiteral(DType d) {
        assertBits(Kernels.fill(TensorType.host(d, 2, 2), 0.1), d, dims(2, 2), 0.1, 0.1, 0.1, 0.1);
        assertBits(Kernels.literal(TensorType.host(d, 3), new Payload(1, -0.0, 0.1)), d, dims(3), 1, -0.0, 0.1);
        assertThat(Kernels.fill(TensorType.host(DType.F32, 1), 0.1).get(0)).isEqualTo((double) 0.1f);
    }

    @Test void literalPayloadSizeIsChecked() {
        assertThatThrownBy(() -> Kernels.literal(TensorType.host(DType.F64, 3), new Payload(1, 2)))
                .isInstanceOf(EvalError.class).hasMessageContaining("payload of 2 values");
    }

    @Test void fillRefusesDeviceAndBf16() {
        assertThatThrownBy(() -> Kernels.fill(new TensorType(DType.F32, Shape.of(2), Placement.DEVICE), 1))
                .isInstanceOf(EvalError.class).hasMessage("fill: the host interpreter does not run @device values");
        assertThatThrownBy(() -> Kernels.fill(TensorType.host(DType.BF16, 2), 1))
                .isInstanceOf(EvalError.class).hasMessage("fill: the host interpreter does not run BF16");
    }

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void unary(DType d) {
        Tensor x = t(d, dims(3), 0, 1, -2);
        assertBits(ElementwiseKernels.neg(x), d, dims(3), -0.0, -1, 2);
        assertBits(ElementwiseKernels.exp(x), d, dims(3), 1, StrictMath.exp(1), StrictMath.exp(-2));
        assertBits(ElementwiseKernels.log(t(d, dims(3), 1, Math.E, 0)), d, dims(3), 0, StrictMath.log(Kernels.round(d, Math.E)),
                Double.NEGATIVE_INFINITY);
    }

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void binary(DType d) {
        Tensor a = t(d, dims(2, 2), 1, 2, 3, 4), b = t(d, dims(2, 2), 4, 3, 2, 1);
        assertBits(ElementwiseKernels.add(a, b), d, dims(2, 2), 5, 5, 5, 5);
        assertBits(ElementwiseKernels.sub(a, b), d, dims(2, 2), -3, -1, 1, 3);
        assertBits(ElementwiseKernels.mul(a, b), d, dims(2, 2), 4, 6, 6, 4);
        assertBits(ElementwiseKernels.div(a, b), d, dims(2, 2), 0.25, 2.0 / 3.0, 1.5, 4);
    }

    @Test void f32ResultsAreExactlyFloats() {
        Tensor a = t(DType.F32, dims(2), 0.1, 1e8), b = t(DType.F32, dims(2), 0.2, 1);
        Tensor s = ElementwiseKernels.add(a, b);
        assertThat(s.get(0)).isEqualTo((double) (0.1f + 0.2f));
        assertThat(s.get(1)).isEqualTo((double) (1e8f + 1f)).isEqualTo(1e8);
        assertThat(ElementwiseKernels.div(a, b).get(0)).isEqualTo((double) (0.1f / 0.2f));
        assertThat(ElementwiseKernels.mul(a, b).get(0)).isEqualTo((double) (0.1f * 0.2f));
        for (Tensor r : new Tensor[] {s, ElementwiseKernels.div(a, b), ElementwiseKernels.exp(a), ElementwiseKernels.log(a)})
            for (int i = 0; i < r.size(); i++) assertThat((double) (float) r.get(i)).isEqualTo(r.get(i));
        // F64 keeps what F32 rounds away.
        Tensor c = ElementwiseKernels.add(t(DType.F64, dims(1), 0.1), t(DType.F64, dims(1), 0.2));
        assertThat(c.get(0)).isEqualTo(0.1 + 0.2);
    }

    @Test void binaryOperandsMustAgree() {
        assertThatThrownBy(() -> ElementwiseKernels.add(t(DType.F32, dims(2), 1, 2), t(DType.F32, dims(3), 1, 2, 3)))
                .isInstanceOf(EvalError.class).hasMessageStartingWith("add: operand types differ");
    }

    @Test void discreteArithmetic() {
        Tensor a = ids(dims(3), 1, 2, 3), b = ids(dims(3), 4, 5, 6);
        assertThat(ElementwiseKernels.add(a, b).ints()).containsExactly(5, 7, 9);
        assertThat(ElementwiseKernels.neg(a).ints()).containsExactly(-1, -2, -3);
        assertThatThrownBy(() -> ElementwiseKernels.exp(a)).isInstanceOf(EvalError.class).hasMessageContaining("not I64");
        assertThatThrownBy(() -> ElementwiseKernels.div(a, b)).isInstanceOf(EvalError.class).hasMessageContaining("not I64");
    }

    // ---- matmul -------------------------------------------------------------------------------

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void matmulRank2(DType d) {
        Tensor a = t(d, dims(2, 2), 1, 2, 3, 4), b = t(d, dims(2, 3), 5, 6, 0, 7, 8, 1);
        assertBits(ContractionKernels.matmul(a, b), d, dims(2, 3), 19, 22, 2, 43, 50, 4);
    }

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void matmulRank4(DType d) {
        // [2,1,2,2] @ [2,1,2,1]: batch 0 [[1,2],[3,4]]·[1,1]ᵀ, batch 1 [[0,1],[1,0]]·[2,3]ᵀ.
        Tensor a = t(d, dims(2, 1, 2, 2), 1, 2, 3, 4, 0, 1, 1, 0);
        Tensor b = t(d, dims(2, 1, 2, 1), 1, 1, 2, 3);
        assertBits(ContractionKernels.matmul(a, b), d, dims(2, 1, 2, 1), 3, 7, 3, 2);
    }

    @Test void matmulSumsInIncreasingP() {
        // ((1 + 1e8) + -1e8) in float is 0; any other association gives 1.
        Tensor a = t(DType.F32, dims(1, 3), 1, 1e8, -1e8), ones = t(DType.F32, dims(3, 1), 1, 1, 1);
        assertBits(ContractionKernels.matmul(a, ones), DType.F32, dims(1, 1), 0);
        Tensor a64 = t(DType.F64, dims(1, 3), 1, 1e17, -1e17), ones64 = t(DType.F64, dims(3, 1), 1, 1, 1);
        assertBits(ContractionKernels.matmul(a64, ones64), DType.F64, dims(1, 1), 0);
        // one fma per step: with x = 1 + 2^-12 and r = float(x·x), 1·(−r) + x·x keeps x·x's exact
        // residual 2^-24 (a rounded product then an add would give 0).
        float x = 1f + 0x1p-12f, r = x * x;
        Tensor p = t(DType.F32, dims(1, 2), 1, x), q = t(DType.F32, dims(2, 1), -r, x);
        assertThat(ContractionKernels.matmul(p, q).get(0)).isEqualTo(0x1p-24);
    }

    @Test void matmulEmptyContractionIsPositiveZero() {
        Tensor a = t(DType.F64, dims(2, 0)), b = t(DType.F64, dims(0, 2));
        assertBits(ContractionKernels.matmul(a, b), DType.F64, dims(2, 2), 0, 0, 0, 0);
    }

    @Test void matmulRejectsMismatchedBatch() {
        assertThatThrownBy(() -> ContractionKernels.matmul(t(DType.F32, dims(2, 1, 1), 1, 2), t(DType.F32, dims(1, 1, 1), 1)))
                .isInstanceOf(EvalError.class).hasMessageContaining("do not contract");
    }

    // ---- shape --------------------------------------------------------------------------------

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void reshapeKeepsRowMajor(DType d) {
        assertBits(LayoutKernels.reshape(t(d, dims(2, 3), 1, 2, 3, 4, 5, 6), Shape.of(3, 1, 2)), d, dims(3, 1, 2), 1, 2, 3, 4, 5, 6);
    }

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void transposeRank2(DType d) {
        assertBits(LayoutKernels.transpose(t(d, dims(2, 3), 1, 2, 3, 4, 5, 6), Perm.of(1, 0)), d, dims(3, 2), 1, 4, 2, 5, 3, 6);
    }

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void transposeRank4(DType d) {
        long[] in = {2, 3, 4, 5};
        double[] v = new double[120];
        for (int i = 0; i < v.length; i++) v[i] = i;
        int[] perm = {3, 1, 0, 2};
        Tensor y = LayoutKernels.transpose(t(d, in, v), Perm.of(perm));
        assertThat(y.shape()).isEqualTo(Shape.of(5, 3, 2, 4));
        int f = 0;
        for (int o0 = 0; o0 < 5; o0++)
            for (int o1 = 0; o1 < 3; o1++)
                for (int o2 = 0; o2 < 2; o2++)
                    for (int o3 = 0; o3 < 4; o3++) {
                        int[] src = new int[4];
                        int[] o = {o0, o1, o2, o3};
                        for (int i = 0; i < 4; i++) src[perm[i]] = o[i];
                        assertThat(y.get(f++)).isEqualTo(((src[0] * 3 + src[1]) * 4 + src[2]) * 5 + src[3]);
                    }
    }

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void broadcastOverTwoAxes(DType d) {
        Tensor x = t(d, dims(1, 2, 1), 7, 8);
        assertBits(LayoutKernels.broadcast(x, Shape.of(3, 2, 2)), d, dims(3, 2, 2), 7, 7, 8, 8, 7, 7, 8, 8, 7, 7, 8, 8);
        assertBits(LayoutKernels.broadcast(t(d, dims(2, 1), 1, 2), Shape.of(2, 3)), d, dims(2, 3), 1, 1, 1, 2, 2, 2);
    }

    @Test void broadcastRejectsNonUnitExpansion() {
        assertThatThrownBy(() -> LayoutKernels.broadcast(t(DType.F32, dims(2), 1, 2), Shape.of(4)))
                .isInstanceOf(EvalError.class).hasMessageContaining("does not expand");
    }

    @Test void shapeKernelsMoveIndices() {
        Tensor i = ids(dims(2, 1), 3, 4);
        assertThat(LayoutKernels.broadcast(i, Shape.of(2, 2)).ints()).containsExactly(3, 3, 4, 4);
        assertThat(LayoutKernels.transpose(i, Perm.of(1, 0)).shape()).isEqualTo(Shape.of(1, 2));
    }

    // ---- sum ----------------------------------------------------------------------------------

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void sumKeepDims(DType d) {
        Tensor x = t(d, dims(2, 3), 1, 2, 3, 4, 5, 6);
        assertBits(RowKernels.sum(x, 0, false), d, dims(3), 5, 7, 9);
        assertBits(RowKernels.sum(x, 0, true), d, dims(1, 3), 5, 7, 9);
        assertBits(RowKernels.sum(x, 1, false), d, dims(2), 6, 15);
        assertBits(RowKernels.sum(x, 1, true), d, dims(2, 1), 6, 15);
    }

    @Test void sumIsSequentialFromTheFirstElement() {
        assertBits(RowKernels.sum(t(DType.F32, dims(3), 1, 1e8, -1e8), 0, false), DType.F32, dims(), 0);
        assertBits(RowKernels.sum(t(DType.F64, dims(3), 1, 1e17, -1e17), 0, false), DType.F64, dims(), 0);
        // a single −0.0 stays −0.0 (no +0.0 start); an empty axis gives +0.0
        assertBits(RowKernels.sum(t(DType.F64, dims(1), -0.0), 0, false), DType.F64, dims(), -0.0);
        assertBits(RowKernels.sum(t(DType.F64, dims(2, 0)), 1, false), DType.F64, dims(2), 0, 0);
    }

    // ---- softmax, log_softmax -----------------------------------------------------------------

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void softmaxRowsSumToOne(DType d) {
        Tensor x = t(d, dims(2, 4), 0, 0, 0, 0, 1, -2, 3.5, 0.25);
        Tensor y = RowKernels.softmax(x, 1);
        for (int i = 0; i < 4; i++) assertThat(y.get(i)).isEqualTo(0.25);
        assertThat(y.get(4) + y.get(5) + y.get(6) + y.get(7)).isCloseTo(1, within(d == DType.F32 ? 1e-6 : 1e-15));
        Tensor lp = RowKernels.logSoftmax(x, 1);
        double s = 0;
        for (int i = 4; i < 8; i++) s += Math.exp(lp.get(i));
        assertThat(s).isCloseTo(1, within(d == DType.F32 ? 1e-6 : 1e-15));
        assertBits(RowKernels.logSoftmax(t(d, dims(2), 0, 0), 0), d, dims(2),
                -Kernels.round(d, StrictMath.log(2)), -Kernels.round(d, StrictMath.log(2)));
    }

    @Test void softmaxAlongAxisZero() {
        Tensor x = t(DType.F64, dims(2, 2), 0, 5, 0, 5);
        assertBits(RowKernels.softmax(x, 0), DType.F64, dims(2, 2), 0.5, 0.5, 0.5, 0.5);
    }

    @Test void softmaxF32FollowsTheStatedOrder() {
        float[] x = {1.5f, -0.3f, 2.25f};
        float m = 2.25f;
        float[] e = new float[3];
        float s = 0;
        for (int i = 0; i < 3; i++) {
            e[i] = KinaMath.exp(x[i] - m);
            s = i == 0 ? e[i] : s + e[i];
        }
        float l = (float) StrictMath.log(s);
        Tensor in = t(DType.F32, dims(3), x[0], x[1], x[2]);
        Tensor y = RowKernels.softmax(in, 0), ly = RowKernels.logSoftmax(in, 0);
        for (int i = 0; i < 3; i++) {
            assertThat(y.get(i)).isEqualTo((double) (e[i] / s));
            assertThat(ly.get(i)).isEqualTo((double) ((x[i] - m) - l));
        }
    }

    // ---- indexing -----------------------------------------------------------------------------

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void gatherWithRepeatedIds(DType d) {
        Tensor values = t(d, dims(3, 2), 1, 2, 3, 4, 5, 6);
        Tensor y = IndexingKernels.gather(values, ids(dims(2, 2), 2, 0, 2, 2));
        assertBits(y, d, dims(2, 2, 2), 5, 6, 1, 2, 5, 6, 5, 6);
    }

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void takeAlongAxis(DType d) {
        Tensor v = t(d, dims(2, 3), 1, 2, 3, 4, 5, 6);
        assertBits(IndexingKernels.takeAlongAxis(v, ids(dims(2), 2, 0), 1), d, dims(2), 3, 4);
        assertBits(IndexingKernels.takeAlongAxis(v, ids(dims(3), 1, 0, 1), 0), d, dims(3), 4, 2, 6);
        // rank 3, middle axis: values [2, 3, 2], indices [2, 2]
        Tensor v3 = t(d, dims(2, 3, 2), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
        assertBits(IndexingKernels.takeAlongAxis(v3, ids(dims(2, 2), 2, 0, 1, 1), 1), d, dims(2, 2), 4, 1, 8, 9);
    }

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void scatterAddDuplicatesAndUnselectedRows(DType d) {
        Tensor u = t(d, dims(3, 2), 1, 2, 10, 20, 100, 200);
        Tensor y = IndexingKernels.scatterAdd(u, ids(dims(3), 1, 1, 3), TensorType.host(d, 4, 2));
        assertBits(y, d, dims(4, 2), 0, 0, 11, 22, 0, 0, 100, 200);
        // the seeds' instance: ids [[3, 1, 3, 7]], updates all ones [1, 4, 4] → dest [8, 4]
        double[] ones = new double[16];
        java.util.Arrays.fill(ones, 1);
        Tensor z = IndexingKernels.scatterAdd(t(d, dims(1, 4, 4), ones), ids(dims(1, 4), 3, 1, 3, 7), TensorType.host(d, 8, 4));
        double[] want = new double[32];
        for (int c = 0; c < 4; c++) { want[4 + c] = 1; want[12 + c] = 2; want[28 + c] = 1; }
        assertBits(z, d, dims(8, 4), want);
    }

    @Test void scatterAddAccumulatesInRowMajorOrder() {
        // row 0 gets 1, then 1e8, then −1e8: ((0 + 1) + 1e8) − 1e8 = 0 in F32
        Tensor u = t(DType.F32, dims(3, 1), 1, 1e8, -1e8);
        assertBits(IndexingKernels.scatterAdd(u, ids(dims(3), 0, 0, 0), TensorType.host(DType.F32, 1, 1)), DType.F32, dims(1, 1), 0);
    }

    @ParameterizedTest @EnumSource(value = DType.class, names = {"F32", "F64"})
    void scatterAlongAxisSelects(DType d) {
        Tensor y = IndexingKernels.scatterAlongAxis(1, t(d, dims(2), 5, 6), ids(dims(2), 2, 0), TensorType.host(d, 2, 3));
        assertBits(y, d, dims(2, 3), 0, 0, 5, 6, 0, 0);
        // the same class at different (a, b) lands at different outputs; unselected stay +0.0
        Tensor z = IndexingKernels.scatterAlongAxis(2, t(d, dims(2, 2), 1, 2, 3, 4), ids(dims(2, 2), 1, 1, 0, 2),
                TensorType.host(d, 2, 2, 3));
        assertBits(z, d, dims(2, 2, 3), 0, 1, 0, 0, 2, 0, 3, 0, 0, 0, 0, 4);
        // middle axis
        Tensor w = IndexingKernels.scatterAlongAxis(1, t(d, dims(2, 2), 1, 2, 3, 4), ids(dims(2, 2), 2, 0, 1, 1),
                TensorType.host(d, 2, 3, 2));
        assertBits(w, d, dims(2, 3, 2), 0, 2, 0, 0, 1, 0, 0, 0, 3, 4, 0, 0);
    }

    // ---- traps --------------------------------------------------------------------------------

    @Test void gatherTraps() {
        Tensor values = t(DType.F32, dims(8, 2), new double[16]);
        assertThatThrownBy(() -> IndexingKernels.gather(values, ids(dims(1, 4), 3, 1, 3, 8)))
                .isInstanceOf(EvalError.class)
                .hasMessage("gather index out of bounds: indices[0, 3] = 8, not in [0, 8)");
        assertThatThrownBy(() -> IndexingKernels.gather(values, ids(dims(2), 0, -1)))
                .isInstanceOf(EvalError.class)
                .hasMessage("gather index out of bounds: indices[1] = -1, not in [0, 8)");
    }

    @Test void takeAlongAxisTraps() {
        Tensor v = t(DType.F64, dims(2, 3), 1, 2, 3, 4, 5, 6);
        assertThatThrownBy(() -> IndexingKernels.takeAlongAxis(v, ids(dims(2), 0, 3), 1))
                .isInstanceOf(EvalError.class)
                .hasMessage("take_along_axis index out of bounds: indices[1] = 3, not in [0, 3)");
        assertThatThrownBy(() -> IndexingKernels.takeAlongAxis(v, ids(dims(2), -2, 0), 1))
                .isInstanceOf(EvalError.class)
                .hasMessage("take_along_axis index out of bounds: indices[0] = -2, not in [0, 3)");
    }

    @Test void scatterAddTraps() {
        Tensor u = t(DType.F32, dims(1, 2, 1), 1, 1);
        TensorType dest = TensorType.host(DType.F32, 8, 1);
        assertThatThrownBy(() -> IndexingKernels.scatterAdd(u, ids(dims(1, 2), 1, 8), dest))
                .isInstanceOf(EvalError.class)
                .hasMessageStartingWith("scatter_add index out of bounds")
                .hasMessage("scatter_add index out of bounds: indices[0, 1] = 8, not in [0, 8)");
        assertThatThrownBy(() -> IndexingKernels.scatterAdd(u, ids(dims(1, 2), -1, 0), dest))
                .isInstanceOf(EvalError.class)
                .hasMessage("scatter_add index out of bounds: indices[0, 0] = -1, not in [0, 8)");
    }

    @Test void scatterAlongAxisTraps() {
        Tensor u = t(DType.F64, dims(2), 5, 6);
        TensorType dest = TensorType.host(DType.F64, 2, 3);
        assertThatThrownBy(() -> IndexingKernels.scatterAlongAxis(1, u, ids(dims(2), 3, 0), dest))
                .isInstanceOf(EvalError.class)
                .hasMessageStartingWith("scatter_along_axis index out of bounds")
                .hasMessage("scatter_along_axis index out of bounds: indices[0] = 3, not in [0, 3)");
        assertThatThrownBy(() -> IndexingKernels.scatterAlongAxis(1, u, ids(dims(2), 0, -7), dest))
                .isInstanceOf(EvalError.class)
                .hasMessage("scatter_along_axis index out of bounds: indices[1] = -7, not in [0, 3)");
    }

    @Test void integerClampRequantAndReluOnValuesThatBind() {
        assertThat(ElementwiseKernels.clamp(ids(dims(4), -5, 0, 3, 9), -1, 4).ints()).containsExactly(-1, 0, 3, 4);
        assertThat(ElementwiseKernels.requant(ids(dims(3), -5, -1, 5), 1).ints()).containsExactly(-3, -1, 2);      // floored: ⌊−5/2⌋ = −3
        assertThat(ElementwiseKernels.relu(ids(dims(3), -2, 0, 3)).ints()).containsExactly(0, 0, 3);
    }

    @Test void kernelsArePureFunctionsOfTheirInputs() {
        Tensor x = t(DType.F32, dims(2, 3), 0.1, -2, 3.3, 1e-3, 7, -0.5);
        Tensor w = t(DType.F32, dims(3, 2), 0.7, 0.2, -1.1, 4, 0.01, 2);
        double[] xs = x.floats().clone(), ws = w.floats().clone();
        ContractionKernels.matmul(x, w);
        RowKernels.logSoftmax(x, 1);
        RowKernels.softmax(x, 1);
        LayoutKernels.transpose(w, kina.ir.Perm.of(1, 0));
        assertThat(x.floats()).as("x untouched").isEqualTo(xs);
        assertThat(w.floats()).as("w untouched").isEqualTo(ws);
    }
}
