package kina.eval;

import static kina.eval.Kernels.check;
import static kina.eval.Kernels.make;
import static kina.eval.Kernels.prod;
import static kina.eval.Kernels.requireAxis;
import static kina.eval.Kernels.requireFloating;
import static kina.eval.Kernels.round;
import static kina.eval.Kernels.sameType;

import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * The reference kernels of the elementwise families ({@link Instr.Unary}, {@link Instr.Binary})
 * and of the discrete instructions ({@link Instr.Discrete}), in {@link Instr}'s order. Their bit
 * discipline is {@link Kernels}': each element one operation, rounded with r.
 */
public final class ElementwiseKernels {
    private ElementwiseKernels() {}

    // ---- unary --------------------------------------------------------------------------------------

    /** y_i = f(x_i) for a floating x; f rounds every step it takes with {@code round(d, ·)}. */
    private static Tensor map(String op, Tensor x, java.util.function.DoubleUnaryOperator f) {
        requireFloating(op, x);
        double[] a = x.floats(), y = new double[a.length];
        for (int i = 0; i < a.length; i++) y[i] = f.applyAsDouble(a[i]);
        return make(x.type(), y);
    }

    /** {@code -x}: y_i = −x_i (exact, sign flipped; discrete: wrapping negation). */
    public static Tensor neg(Tensor x) {
        if (!x.isFloating()) {
            long[] a = x.ints(), y = new long[a.length];
            for (int i = 0; i < a.length; i++) y[i] = -a[i];
            return make(x.type(), y);
        }
        double[] a = x.floats(), y = new double[a.length];
        for (int i = 0; i < a.length; i++) y[i] = -a[i];
        return make(x.type(), y);
    }

    /** {@code x.exp()}: y_i = r(exp(x_i)), exp as {@link Kernels#exp(DType, double)}. Floating only. */
    public static Tensor exp(Tensor x) {
        requireFloating("exp", x);
        DType d = x.dtype();
        double[] a = x.floats(), y = new double[a.length];
        for (int i = 0; i < a.length; i++) y[i] = round(d, Kernels.exp(d, a[i]));
        return make(x.type(), y);
    }

    /** {@code x.log()}: y_i = r(StrictMath.log(x_i)). Floating only. */
    public static Tensor log(Tensor x) {
        requireFloating("log", x);
        DType d = x.dtype();
        double[] a = x.floats(), y = new double[a.length];
        for (int i = 0; i < a.length; i++) y[i] = round(d, StrictMath.log(a[i]));
        return make(x.type(), y);
    }

    /** {@code x.sqrt()}: y = r(√x) (StrictMath.sqrt, correctly rounded). */
    public static Tensor sqrt(Tensor x) {
        DType d = x.dtype();
        return map("sqrt", x, v -> round(d, StrictMath.sqrt(v)));
    }

    /** {@code x.rsqrt()}: y = r(1 / r(√x)). */
    public static Tensor rsqrt(Tensor x) {
        DType d = x.dtype();
        return map("rsqrt", x, v -> round(d, 1.0 / round(d, StrictMath.sqrt(v))));
    }

    /** {@code x.tanh()}: y = r(StrictMath.tanh(x)). */
    public static Tensor tanh(Tensor x) {
        DType d = x.dtype();
        return map("tanh", x, v -> round(d, StrictMath.tanh(v)));
    }

    /** σ(x) = r(1 / r(1 + r(exp(−x)))). */
    static double sigmoid(DType d, double v) {
        return round(d, 1.0 / round(d, 1.0 + round(d, Kernels.exp(d, -v))));
    }

    /** {@code x.sigmoid()}: y = r(1 / r(1 + r(exp(−x)))). */
    public static Tensor sigmoid(Tensor x) {
        DType d = x.dtype();
        return map("sigmoid", x, v -> sigmoid(d, v));
    }

    /** {@code x.reciprocal()}: y = r(1 / x). */
    public static Tensor reciprocal(Tensor x) {
        DType d = x.dtype();
        return map("reciprocal", x, v -> round(d, 1.0 / v));
    }

    /** {@code x.silu()}: y = r(x · σ(x)), σ as {@link #sigmoid}. */
    public static Tensor silu(Tensor x) {
        DType d = x.dtype();
        return map("silu", x, v -> round(d, v * sigmoid(d, v)));
    }

    private static final double GELU_C = Instr.Gelu.GELU_C, GELU_K = Instr.Gelu.GELU_K;

    /**
     * {@code x.gelu()} (tanh approximation): c = r(√(2/π)), K = r(0.044715);
     * z = r(c · r(x + r(K · r(r(x·x)·x)))); y = r(r(0.5·x) · r(1 + r(tanh z))).
     */
    public static Tensor gelu(Tensor x) {
        DType d = x.dtype();
        double c = round(d, GELU_C), k = round(d, GELU_K);
        return map("gelu", x, v -> {
            double x3 = round(d, round(d, v * v) * v);
            double z = round(d, c * round(d, v + round(d, k * x3)));
            return round(d, round(d, 0.5 * v) * round(d, 1.0 + round(d, StrictMath.tanh(z))));
        });
    }

    /** {@code x.relu()}: y = Math.max(x, +0.0) (exact; NaN propagates, −0.0 becomes +0.0); I64: max(x, 0). */
    public static Tensor relu(Tensor x) {
        if (x.dtype() == DType.I64) {
            long[] a = x.ints(), y = new long[a.length];
            for (int i = 0; i < a.length; i++) y[i] = Math.max(a[i], 0);
            return make(x.type(), y);
        }
        return map("relu", x, v -> Math.max(v, 0.0));
    }

    /** {@code x.softcap(cap=C)}: y = r(C' · r(tanh(r(x / C')))), C' = r(C). */
    public static Tensor softcap(Tensor x, double cap) {
        DType d = x.dtype();
        double c = round(d, cap);
        return map("softcap", x, v -> round(d, c * round(d, StrictMath.tanh(round(d, v / c)))));
    }

    // ---- binary (operands of one type) --------------------------------------------------------------

    /** One elementwise op on operands of one type; each element one double op, then r. */
    private static Tensor binary(String op, Tensor a, Tensor b) {
        sameType(op, a, b);
        if (!a.isFloating()) {
            check(!op.equals("div"), "div: the host runs div on F32 and F64, not " + a.dtype());
            long[] x = a.ints(), y = b.ints(), z = new long[x.length];
            switch (op) {
                case "add" -> { for (int i = 0; i < x.length; i++) z[i] = x[i] + y[i]; }
                case "sub" -> { for (int i = 0; i < x.length; i++) z[i] = x[i] - y[i]; }
                default -> { for (int i = 0; i < x.length; i++) z[i] = x[i] * y[i]; }
            }
            return make(a.type(), z);
        }
        DType d = a.dtype();
        double[] x = a.floats(), y = b.floats(), z = new double[x.length];
        switch (op) {
            case "add" -> { for (int i = 0; i < x.length; i++) z[i] = round(d, x[i] + y[i]); }
            case "sub" -> { for (int i = 0; i < x.length; i++) z[i] = round(d, x[i] - y[i]); }
            case "mul" -> { for (int i = 0; i < x.length; i++) z[i] = round(d, x[i] * y[i]); }
            default -> { for (int i = 0; i < x.length; i++) z[i] = round(d, x[i] / y[i]); }
        }
        return make(a.type(), z);
    }

    /** {@code a + b}: y_i = r(a_i + b_i). */
    public static Tensor add(Tensor a, Tensor b) { return binary("add", a, b); }

    /** {@code a - b}: y_i = r(a_i − b_i). */
    public static Tensor sub(Tensor a, Tensor b) { return binary("sub", a, b); }

    /** {@code a * b}: y_i = r(a_i · b_i). */
    public static Tensor mul(Tensor a, Tensor b) { return binary("mul", a, b); }

    /** {@code a / b}: y_i = r(a_i / b_i). Floating only. */
    public static Tensor div(Tensor a, Tensor b) { return binary("div", a, b); }

    /** {@code a.maximum(b)}: y = Math.max(a, b) (exact; NaN propagates; +0.0 above −0.0). */
    public static Tensor maximum(Tensor a, Tensor b) {
        sameType("maximum", a, b);
        requireFloating("maximum", a);
        double[] x = a.floats(), y = b.floats(), z = new double[x.length];
        for (int i = 0; i < x.length; i++) z[i] = Math.max(x[i], y[i]);
        return make(a.type(), z);
    }

    /** {@code a.greater(b)} → I1: 1 where a &gt; b (false for NaN), else 0. */
    public static Tensor greater(Tensor a, Tensor b) {
        sameType("greater", a, b);
        requireFloating("greater", a);
        double[] x = a.floats(), y = b.floats();
        long[] z = new long[x.length];
        for (int i = 0; i < x.length; i++) z[i] = x[i] > y[i] ? 1 : 0;
        return make(a.type().withDType(DType.I1), z);
    }

    /** {@code mask.select(a, b)}: y = a where mask is 1, else b (a copy, no arithmetic). */
    public static Tensor select(Tensor mask, Tensor a, Tensor b) {
        sameType("select", a, b);
        requireFloating("select", a);
        check(mask.dtype() == DType.I1 && mask.shape().equals(a.shape()),
                "select: mask " + mask.type() + " must be I1 of shape " + a.shape());
        long[] m = mask.ints();
        double[] x = a.floats(), y = b.floats(), z = new double[x.length];
        for (int i = 0; i < x.length; i++) z[i] = m[i] != 0 ? x[i] : y[i];
        return make(a.type(), z);
    }

    /** {@code gate.swiglu(up)}: y = r(silu(gate) · up), silu as {@link #silu}. */
    public static Tensor swiglu(Tensor gate, Tensor up) {
        sameType("swiglu", gate, up);
        requireFloating("swiglu", gate);
        DType d = gate.dtype();
        double[] g = gate.floats(), u = up.floats(), y = new double[g.length];
        for (int i = 0; i < g.length; i++) y[i] = round(d, round(d, g[i] * sigmoid(d, g[i])) * u[i]);
        return make(gate.type(), y);
    }

    // ---- discrete -----------------------------------------------------------------------------------

    /**
     * {@code x.argmax(axis)} → I64 with the axis dropped: the smallest index of the largest element
     * (a NaN counts as the largest; the first NaN wins). An empty axis gives 0.
     */
    public static Tensor argmax(Tensor x, int axis) {
        requireFloating("argmax", x);
        Shape s = x.shape();
        requireAxis("argmax", axis, s.rank());
        int outer = prod(s, 0, axis), c = (int) s.dim(axis), inner = prod(s, axis + 1, s.rank());
        double[] a = x.floats();
        long[] y = new long[outer * inner];
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                int best = 0;
                for (int ci = 1; ci < c; ci++) {
                    double b = a[(o * c + best) * inner + i], v = a[(o * c + ci) * inner + i];
                    if (!Double.isNaN(b) && (Double.isNaN(v) || v > b)) best = ci;
                }
                y[o * inner + i] = best;
            }
        return make(new TensorType(DType.I64, s.drop(axis), x.type().placement()), y);
    }

    /** {@code x.clamp(lo, hi)} on I64: min(max(x, lo), hi). */
    public static Tensor clamp(Tensor x, long lo, long hi) {
        check(x.dtype() == DType.I64, "clamp: the host runs clamp on I64, not " + x.dtype());
        long[] a = x.ints(), y = new long[a.length];
        for (int i = 0; i < a.length; i++) y[i] = Math.min(Math.max(a[i], lo), hi);
        return make(x.type(), y);
    }

    /** {@code x.requant(shift)} on I64: ⌊x / 2^shift⌋ (arithmetic shift right). */
    public static Tensor requant(Tensor x, int shift) {
        check(x.dtype() == DType.I64, "requant: the host runs requant on I64, not " + x.dtype());
        long[] a = x.ints(), y = new long[a.length];
        for (int i = 0; i < a.length; i++) y[i] = a[i] >> shift;
        return make(x.type(), y);
    }
}
