package kina.eval;

import static kina.eval.Kernels.check;
import static kina.eval.Kernels.make;
import static kina.eval.Kernels.prod;
import static kina.eval.Kernels.volume;

import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.kernels.Matmul;

/** The reference kernel of the contraction family ({@link Instr.Contraction}): matmul, and its scalar twin. */
public final class ContractionKernels {
    private ContractionKernels() {}

    // ---- contraction --------------------------------------------------------------------------------

    /**
     * {@code a @ b}: σ++[M,K] @ σ++[K,N] → σ++[M,N], rank ≥ 2, equal batch dims σ (no broadcast).
     * Order ({@link Matmul}): acc = −0.0, then acc = fma(a[bt,i,p], b[bt,p,j], acc) for p = 0..K−1
     * in increasing p, in float for F32; K = 0 gives +0.0. A row of outputs is accumulated while
     * walking p, so each output still takes its products in increasing p.
     */
    public static Tensor matmul(Tensor a, Tensor b) {
        Shape sa = a.shape(), sb = b.shape();
        int r = sa.rank();
        check(r >= 2 && sb.rank() == r, "matmul: ranks " + r + " and " + sb.rank() + " (need equal ranks ≥ 2)");
        check(a.dtype() == b.dtype(), "matmul: dtypes differ: " + a.dtype() + " and " + b.dtype());
        check(sa.prefix(r - 2).equals(sb.prefix(r - 2)) && sa.dim(r - 1) == sb.dim(r - 2),
                "matmul: shapes " + sa + " and " + sb + " do not contract");
        int batch = prod(sa, 0, r - 2), m = (int) sa.dim(r - 2), k = (int) sa.dim(r - 1), n = (int) sb.dim(r - 1);
        TensorType out = a.type().withShape(sa.prefix(r - 2).concat(m, n));
        int size = volume("matmul", out.shape());
        if (!a.isFloating()) {
            long[] x = a.ints(), y = b.ints(), z = new long[size];
            for (int bt = 0; bt < batch; bt++)
                for (int i = 0; i < m; i++) {
                    int aRow = (bt * m + i) * k, zRow = (bt * m + i) * n;
                    for (int p = 0; p < k; p++) {
                        long aip = x[aRow + p];
                        int bRow = (bt * k + p) * n;
                        for (int j = 0; j < n; j++) z[zRow + j] += aip * y[bRow + j];
                    }
                }
            return make(out, z);
        }
        double[] z = a.dtype() == DType.F32 ? Matmul.f32(a.floats(), b.floats(), batch, m, k, n)
                : Matmul.f64(a.floats(), b.floats(), batch, m, k, n);
        return make(out, z);
    }

    /**
     * The scalar twin of the floating matmul: the specification {@link Matmul} is tested against.
     * acc = −0.0; acc = fma(a_ip, b_pj, acc) for p = 0 … K−1 in increasing p (one rounding per step,
     * in float for F32); +0.0 when K = 0.
     */
    public static double[] matmulScalar(DType d, double[] x, double[] y, int batch, int m, int k, int n) {
        double[] z = new double[batch * m * n];                           // +0.0 when K = 0
        if (k == 0) return z;
        for (int bt = 0; bt < batch; bt++)
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++) {
                    int aRow = (bt * m + i) * k, bCol = bt * k * n + j;
                    if (d == DType.F32) {
                        float acc = -0.0f;
                        for (int p = 0; p < k; p++) acc = Math.fma((float) x[aRow + p], (float) y[bCol + p * n], acc);
                        z[(bt * m + i) * n + j] = acc;
                    } else {
                        double acc = -0.0;
                        for (int p = 0; p < k; p++) acc = Math.fma(x[aRow + p], y[bCol + p * n], acc);
                        z[(bt * m + i) * n + j] = acc;
                    }
                }
        return z;
    }
}
