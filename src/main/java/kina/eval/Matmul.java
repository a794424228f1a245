package kina.eval;

/**
 * The matmul kernels shared by the interpreter and the compiled plan, so their bits agree.
 *
 * <p>Order (the specification, {@link Kernels#matmulScalar} is its scalar twin): for every output
 * element, acc = −0.0, then acc = fma(a[.., i, p], b[.., p, j], acc) for p = 0 … K−1 in increasing
 * p: one rounding per product-and-add, in F32 (float fma) or F64. Starting from −0.0 makes the
 * first step exactly the rounded first product, and K = 0 gives −0.0 … so the caller's K = 0 case
 * is defined as +0.0 (written explicitly). Transposed operands ({@code transA}: A stored [.., K, M];
 * {@code transB}: B stored [.., N, K]) are packed into the plain layout first, which moves values
 * without arithmetic. Rows of the output are split over {@link Parallel}'s pool in blocks; the
 * inner loop runs over j (independent outputs); neither changes any element's operations.
 */
public final class Matmul {
    private Matmul() {}

    static final int ROWS = 4;

    /**
     * out[bt, i, j] = Σ_p A[bt, i, p] · B[bt, p, j] in float, FMA order above; out has batch·m·n
     * elements (row-major) and is overwritten.
     */
    public static void sgemm(float[] a, boolean transA, float[] b, boolean transB, float[] out, int batch, int m, int k, int n) {
        if (k == 0) { java.util.Arrays.fill(out, 0, batch * m * n, 0f); return; }
        float[] pa = transA ? packT(a, batch, k, m) : a;          // [batch, m, k]
        float[] pb = transB ? packT(b, batch, n, k) : b;          // [batch, k, n]
        int blocks = (m + ROWS - 1) / ROWS;
        Parallel.forEach(batch * blocks, (long) batch * m * k * n, chunk -> {
            int bt = chunk / blocks, i0 = (chunk % blocks) * ROWS;
            blockF32(pa, pb, out, bt, i0, Math.min(ROWS, m - i0), m, k, n);
        });
    }

    /** The F64 twin of {@link #sgemm}. */
    public static void dgemm(double[] a, boolean transA, double[] b, boolean transB, double[] out, int batch, int m, int k, int n) {
        if (k == 0) { java.util.Arrays.fill(out, 0, batch * m * n, 0d); return; }
        double[] pa = transA ? packT(a, batch, k, m) : a;
        double[] pb = transB ? packT(b, batch, n, k) : b;
        Parallel.forEach(batch * m, (long) batch * m * k * n, row -> {
            int bt = row / m, aRow = row * k, oRow = row * n, bBase = bt * k * n;
            java.util.Arrays.fill(out, oRow, oRow + n, -0.0);
            for (int p = 0; p < k; p++) {
                double x = pa[aRow + p];
                int bRow = bBase + p * n;
                for (int j = 0; j < n; j++) out[oRow + j] = Math.fma(x, pb[bRow + j], out[oRow + j]);
            }
        });
    }

    private static void blockF32(float[] a, float[] b, float[] out, int bt, int i0, int rows, int m, int k, int n) {
        int bBase = bt * k * n;
        int o0 = (bt * m + i0) * n, r0 = (bt * m + i0) * k;
        java.util.Arrays.fill(out, o0, o0 + rows * n, -0.0f);
        if (rows == ROWS) {
            int o1 = o0 + n, o2 = o1 + n, o3 = o2 + n, r1 = r0 + k, r2 = r1 + k, r3 = r2 + k;
            for (int p = 0; p < k; p++) {
                float x0 = a[r0 + p], x1 = a[r1 + p], x2 = a[r2 + p], x3 = a[r3 + p];
                int bRow = bBase + p * n;
                for (int j = 0; j < n; j++) {
                    float bj = b[bRow + j];
                    out[o0 + j] = Math.fma(x0, bj, out[o0 + j]);
                    out[o1 + j] = Math.fma(x1, bj, out[o1 + j]);
                    out[o2 + j] = Math.fma(x2, bj, out[o2 + j]);
                    out[o3 + j] = Math.fma(x3, bj, out[o3 + j]);
                }
            }
            return;
        }
        for (int r = 0; r < rows; r++) {
            int aRow = r0 + r * k, oRow = o0 + r * n;
            for (int p = 0; p < k; p++) {
                float x = a[aRow + p];
                int bRow = bBase + p * n;
                for (int j = 0; j < n; j++) out[oRow + j] = Math.fma(x, b[bRow + j], out[oRow + j]);
            }
        }
    }

    /** x [batch, r, c] → [batch, c, r]. */
    static float[] packT(float[] x, int batch, int r, int c) {
        float[] y = new float[batch * r * c];
        for (int bt = 0; bt < batch; bt++) {
            int base = bt * r * c;
            for (int i = 0; i < r; i++) for (int j = 0; j < c; j++) y[base + j * r + i] = x[base + i * c + j];
        }
        return y;
    }

    static double[] packT(double[] x, int batch, int r, int c) {
        double[] y = new double[batch * r * c];
        for (int bt = 0; bt < batch; bt++) {
            int base = bt * r * c;
            for (int i = 0; i < r; i++) for (int j = 0; j < c; j++) y[base + j * r + i] = x[base + i * c + j];
        }
        return y;
    }

    /** The interpreter's entry: F32 values held in doubles. */
    static double[] f32(double[] a, double[] b, int batch, int m, int k, int n) {
        float[] af = new float[a.length], bf = new float[b.length], out = new float[batch * m * n];
        for (int i = 0; i < a.length; i++) af[i] = (float) a[i];
        for (int i = 0; i < b.length; i++) bf[i] = (float) b[i];
        sgemm(af, false, bf, false, out, batch, m, k, n);
        double[] d = new double[out.length];
        for (int i = 0; i < d.length; i++) d[i] = out[i];
        return d;
    }

    /** The interpreter's entry for F64. */
    static double[] f64(double[] a, double[] b, int batch, int m, int k, int n) {
        double[] out = new double[batch * m * n];
        dgemm(a, false, b, false, out, batch, m, k, n);
        return out;
    }
}
