package kina.eval;

import static kina.eval.Kernels.check;
import static kina.eval.Kernels.exp;
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
 * The reference kernels of the reduction and row-wise families ({@link Instr.Reduction},
 * {@link Instr.RowWise}): sum over an axis, softmax and log_softmax, the norms over the last axis
 * and rope. Each states its order of operations ({@link Kernels}' bit discipline).
 */
public final class RowKernels {
    private RowKernels() {}

    // ---- reduction ----------------------------------------------------------------------------------

    /**
     * {@code x.sum(axis, keepDims)}: out[a, b] = sequential sum over c = 0..C−1 of x[a, c, b],
     * acc = x[a, 0, b], then acc = r(acc + x[a, c, b]) in increasing c; C = 0 gives +0.0.
     * The axis is kept as size 1 when keepDims, else dropped.
     */
    public static Tensor sum(Tensor x, int axis, boolean keepDims) {
        Shape s = x.shape();
        requireAxis("sum", axis, s.rank());
        int outer = prod(s, 0, axis), c = (int) s.dim(axis), inner = prod(s, axis + 1, s.rank());
        TensorType out = x.type().withShape(keepDims ? s.with(axis, 1) : s.drop(axis));
        if (!x.isFloating()) {
            long[] a = x.ints(), y = new long[outer * inner];
            for (int o = 0; o < outer; o++)
                for (int ci = 0; ci < c; ci++)
                    for (int i = 0; i < inner; i++) y[o * inner + i] += a[(o * c + ci) * inner + i];
            return make(out, y);
        }
        DType d = x.dtype();
        double[] a = x.floats(), y = new double[outer * inner];
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                if (c == 0) continue;                        // +0.0
                double acc = a[o * c * inner + i];
                for (int ci = 1; ci < c; ci++) acc = round(d, acc + a[(o * c + ci) * inner + i]);
                y[o * inner + i] = acc;
            }
        return make(out, y);
    }

    // ---- row-wise -----------------------------------------------------------------------------------

    /**
     * {@code x.softmax(axis)}, per row along the axis: m = max (sequential Math.max from the first
     * element: NaN propagates, +0.0 above −0.0); e_i = r(exp(r(x_i − m))); s = e_0, then
     * s = r(s + e_i) in increasing i; y_i = r(e_i / s). Safe softmax: a row whose every element is
     * −inf (fully masked) gives y = +0.0, not NaN, so its gradient y ⊙ (g − Σ g⊙y) is 0 too.
     */
    public static Tensor softmax(Tensor x, int axis) {
        requireFloating("softmax", x);
        Shape s = x.shape();
        requireAxis("softmax", axis, s.rank());
        int outer = prod(s, 0, axis), c = (int) s.dim(axis), inner = prod(s, axis + 1, s.rank());
        DType d = x.dtype();
        double[] a = x.floats(), y = new double[a.length];
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                if (c == 0) continue;
                int base = o * c * inner + i;
                double m = rowMax(a, base, c, inner);
                if (m == Double.NEGATIVE_INFINITY) {             // a fully masked row: probabilities +0, not NaN
                    for (int ci = 0; ci < c; ci++) y[base + ci * inner] = 0.0;
                    continue;
                }
                double sum = expSum(d, a, base, c, inner, m, y);
                for (int ci = 0; ci < c; ci++) y[base + ci * inner] = round(d, y[base + ci * inner] / sum);
            }
        return make(x.type(), y);
    }

    /** max of a row along an axis (c elements, stride inner): sequential Math.max from the first. */
    private static double rowMax(double[] a, int base, int c, int inner) {
        double m = a[base];
        for (int ci = 1; ci < c; ci++) m = Math.max(m, a[base + ci * inner]);
        return m;
    }

    /**
     * Σ e_i with e_i = r(exp(r(x_i − m))), sequential from the first; each e_i is stored in
     * {@code e} (same positions) when it is not null. Shared by softmax and log_softmax.
     */
    private static double expSum(DType d, double[] a, int base, int c, int inner, double m, double[] e) {
        double sum = 0;
        for (int ci = 0; ci < c; ci++) {
            double ei = round(d, exp(d, round(d, a[base + ci * inner] - m)));
            if (e != null) e[base + ci * inner] = ei;
            sum = ci == 0 ? ei : round(d, sum + ei);
        }
        return sum;
    }

    /**
     * {@code x.log_softmax(axis)}, per row along the axis: m = max (as softmax); s = sequential sum
     * (from the first) of r(exp(r(x_i − m))); l = r(log(s)); y_i = r(r(x_i − m) − l). A row whose
     * every element is −inf (fully masked) gives y = −inf, not NaN.
     */
    public static Tensor logSoftmax(Tensor x, int axis) {
        requireFloating("log_softmax", x);
        Shape s = x.shape();
        requireAxis("log_softmax", axis, s.rank());
        int outer = prod(s, 0, axis), c = (int) s.dim(axis), inner = prod(s, axis + 1, s.rank());
        DType d = x.dtype();
        double[] a = x.floats(), y = new double[a.length];
        for (int o = 0; o < outer; o++)
            for (int i = 0; i < inner; i++) {
                if (c == 0) continue;
                int base = o * c * inner + i;
                double m = rowMax(a, base, c, inner);
                if (m == Double.NEGATIVE_INFINITY) {             // a fully masked row: log-probabilities −inf, not NaN
                    for (int ci = 0; ci < c; ci++) y[base + ci * inner] = Double.NEGATIVE_INFINITY;
                    continue;
                }
                double l = round(d, StrictMath.log(expSum(d, a, base, c, inner, m, null)));
                for (int ci = 0; ci < c; ci++) y[base + ci * inner] = round(d, round(d, a[base + ci * inner] - m) - l);
            }
        return make(x.type(), y);
    }

    /**
     * {@code x.rmsnorm(w, r, eps)} per row of width D: u_c = r(x_c + r_c) (x_c without a residual);
     * ss = r(u_0²), then ss = r(ss + r(u_c²)) in increasing c; q = r(1 / r(√r(r(ss / D) + eps)));
     * y_c = r(u_c · q), then r(y_c · w_c) with a weight. {@code weight} and {@code residual} may be null.
     */
    public static Tensor rmsnorm(Tensor x, Tensor weight, Tensor residual, double eps) {
        requireFloating("rmsnorm", x);
        if (residual != null) sameType("rmsnorm", x, residual);
        DType d = x.dtype();
        int dd = (int) x.shape().dim(x.shape().rank() - 1), rows = dd == 0 ? 0 : x.size() / dd;
        if (weight != null) check(weight.size() == dd && weight.dtype() == d, "rmsnorm: weight " + weight.type() + " for width " + dd);
        double e = round(d, eps);
        double[] a = x.floats(), y = new double[a.length], u = new double[dd];
        for (int row = 0; row < rows; row++) {
            int base = row * dd;
            double ss = 0;
            for (int c = 0; c < dd; c++) {
                u[c] = residual == null ? a[base + c] : round(d, a[base + c] + residual.floats()[base + c]);
                double sq = round(d, u[c] * u[c]);
                ss = c == 0 ? sq : round(d, ss + sq);
            }
            double q = round(d, 1.0 / round(d, StrictMath.sqrt(round(d, round(d, ss / dd) + e))));
            for (int c = 0; c < dd; c++) {
                double v = round(d, u[c] * q);
                y[base + c] = weight == null ? v : round(d, v * weight.floats()[c]);
            }
        }
        return make(x.type(), y);
    }

    /**
     * {@code x.layernorm(w, b, eps)} per row of width D: μ = r(Σ x / D) (sequential sum); δ_c = r(x_c − μ);
     * v = r(Σ r(δ_c²) / D); q = r(1 / r(√r(v + eps))); y_c = r(δ_c · q), then r(y_c · w_c), then
     * r(y_c + b_c). {@code weight} and {@code bias} may be null.
     */
    public static Tensor layernorm(Tensor x, Tensor weight, Tensor bias, double eps) {
        requireFloating("layernorm", x);
        DType d = x.dtype();
        int dd = (int) x.shape().dim(x.shape().rank() - 1), rows = dd == 0 ? 0 : x.size() / dd;
        double e = round(d, eps);
        double[] a = x.floats(), y = new double[a.length], dl = new double[dd];
        for (int row = 0; row < rows; row++) {
            int base = row * dd;
            double s = a[base];
            for (int c = 1; c < dd; c++) s = round(d, s + a[base + c]);
            double mu = round(d, s / dd), vs = 0;
            for (int c = 0; c < dd; c++) {
                dl[c] = round(d, a[base + c] - mu);
                double sq = round(d, dl[c] * dl[c]);
                vs = c == 0 ? sq : round(d, vs + sq);
            }
            double q = round(d, 1.0 / round(d, StrictMath.sqrt(round(d, round(d, vs / dd) + e))));
            for (int c = 0; c < dd; c++) {
                double v = round(d, dl[c] * q);
                if (weight != null) v = round(d, v * weight.floats()[c]);
                if (bias != null) v = round(d, v + bias.floats()[c]);
                y[base + c] = v;
            }
        }
        return make(x.type(), y);
    }

    /** {@code x.l2norm(eps)} per row: ss = Σ r(x_c²) (sequential); n = r(√r(ss + eps)); y_c = r(x_c / n). */
    public static Tensor l2norm(Tensor x, double eps) {
        requireFloating("l2norm", x);
        DType d = x.dtype();
        int dd = (int) x.shape().dim(x.shape().rank() - 1), rows = dd == 0 ? 0 : x.size() / dd;
        double e = round(d, eps);
        double[] a = x.floats(), y = new double[a.length];
        for (int row = 0; row < rows; row++) {
            int base = row * dd;
            double ss = 0;
            for (int c = 0; c < dd; c++) {
                double sq = round(d, a[base + c] * a[base + c]);
                ss = c == 0 ? sq : round(d, ss + sq);
            }
            double n = round(d, StrictMath.sqrt(round(d, ss + e)));
            for (int c = 0; c < dd; c++) y[base + c] = round(d, a[base + c] / n);
        }
        return make(x.type(), y);
    }

    /**
     * {@code x.rope(cos, sin, heads, rotary, start)}: x σ++[T, H·hd], tables [L, R/2], R = rotary
     * (0: hd). Row t, head h, i &lt; R/2, with c = cos[start + t, i], s = sin[start + t, i],
     * a = x[.., h·hd + i], b = x[.., h·hd + i + R/2]: y_i = r(r(a·c) − r(b·s)),
     * y_{i+R/2} = r(r(b·c) + r(a·s)); dims R..hd−1 of each head are copied.
     */
    public static Tensor rope(Tensor x, Tensor cos, Tensor sin, int heads, int rotary, int start) {
        requireFloating("rope", x);
        Shape s = x.shape();
        int rk = s.rank();
        check(rk >= 2 && cos.type().equals(sin.type()) && cos.shape().rank() == 2 && cos.dtype() == x.dtype(),
                "rope: x " + x.type() + " with tables " + cos.type() + ", " + sin.type());
        int t = (int) s.dim(rk - 2), w = (int) s.dim(rk - 1), hd = w / heads, r = rotary == 0 ? hd : rotary, half = r / 2;
        int l = (int) cos.shape().dim(0);
        check(cos.shape().dim(1) == half && l >= start + t, "rope: tables " + cos.shape() + " for rotary " + r
                + ", start " + start + " and " + t + " rows");
        DType d = x.dtype();
        double[] a = x.floats(), y = a.clone(), cs = cos.floats(), sn = sin.floats();
        int batch = t == 0 || w == 0 ? 0 : a.length / (t * w);
        for (int bt = 0; bt < batch; bt++)
            for (int row = 0; row < t; row++) {
                int base = (bt * t + row) * w, tab = (start + row) * half;
                for (int h = 0; h < heads; h++)
                    for (int i = 0; i < half; i++) {
                        int lo = base + h * hd + i, hi = lo + half;
                        double c = cs[tab + i], sv = sn[tab + i], xa = a[lo], xb = a[hi];
                        y[lo] = round(d, round(d, xa * c) - round(d, xb * sv));
                        y[hi] = round(d, round(d, xb * c) + round(d, xa * sv));
                    }
            }
        return make(x.type(), y);
    }
}
