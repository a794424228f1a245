package kina.eval;

/**
 * The fast twin of the scalar matmul in {@link Kernels}: the same bits, faster. F32 runs in
 * {@code float} (Java never fuses a*b+c, so each product and each sum rounds to float, which is
 * exactly the scalar kernel's r(acc + r(a·b))); F64 in {@code double}.
 *
 * <p>Order: for every output element out[bt, i, j], acc = a[.., i, 0]·b[.., 0, j], then
 * acc = acc + a[.., i, p]·b[.., p, j] for p = 1 … K−1 in increasing p. Four rows of a share each
 * streamed row of b (register blocking over i), the inner loop runs over j (independent outputs,
 * which C2 vectorises), and threads split blocks of rows: none of these changes any element's
 * sequence of operations.
 */
final class Matmul {
    private Matmul() {}

    static final int ROWS = 4;

    /** out = a @ b for F32 values held in doubles; out is +0.0 when k = 0. */
    static double[] f32(double[] a, double[] b, int batch, int m, int k, int n) {
        float[] af = toFloat(a), bf = toFloat(b);
        float[] out = new float[batch * m * n];
        int blocks = (m + ROWS - 1) / ROWS;
        Parallel.forEach(batch * blocks, (long) batch * m * k * n, chunk -> {
            int bt = chunk / blocks, i0 = (chunk % blocks) * ROWS, rows = Math.min(ROWS, m - i0);
            blockF32(af, bf, out, bt, i0, rows, m, k, n);
        });
        double[] d = new double[out.length];
        for (int i = 0; i < d.length; i++) d[i] = out[i];
        return d;
    }

    private static void blockF32(float[] a, float[] b, float[] out, int bt, int i0, int rows, int m, int k, int n) {
        if (k == 0) return;
        int bBase = bt * k * n;
        for (int r = 0; r < rows; r++) {
            int aRow = (bt * m + i0 + r) * k, oRow = (bt * m + i0 + r) * n;
            float a0 = a[aRow];
            for (int j = 0; j < n; j++) out[oRow + j] = a0 * b[bBase + j];
        }
        if (rows == ROWS) {
            int o0 = (bt * m + i0) * n, o1 = o0 + n, o2 = o1 + n, o3 = o2 + n;
            int r0 = (bt * m + i0) * k, r1 = r0 + k, r2 = r1 + k, r3 = r2 + k;
            for (int p = 1; p < k; p++) {
                float x0 = a[r0 + p], x1 = a[r1 + p], x2 = a[r2 + p], x3 = a[r3 + p];
                int bRow = bBase + p * n;
                for (int j = 0; j < n; j++) {
                    float bj = b[bRow + j];
                    out[o0 + j] = out[o0 + j] + x0 * bj;
                    out[o1 + j] = out[o1 + j] + x1 * bj;
                    out[o2 + j] = out[o2 + j] + x2 * bj;
                    out[o3 + j] = out[o3 + j] + x3 * bj;
                }
            }
            return;
        }
        for (int r = 0; r < rows; r++) {
            int aRow = (bt * m + i0 + r) * k, oRow = (bt * m + i0 + r) * n;
            for (int p = 1; p < k; p++) {
                float x = a[aRow + p];
                int bRow = bBase + p * n;
                for (int j = 0; j < n; j++) out[oRow + j] = out[oRow + j] + x * b[bRow + j];
            }
        }
    }

    /** out = a @ b in F64; out is +0.0 when k = 0. */
    static double[] f64(double[] a, double[] b, int batch, int m, int k, int n) {
        double[] out = new double[batch * m * n];
        Parallel.forEach(batch * m, (long) batch * m * k * n, row -> {
            if (k == 0) return;
            int bt = row / m, aRow = row * k, oRow = row * n, bBase = bt * k * n;
            double a0 = a[aRow];
            for (int j = 0; j < n; j++) out[oRow + j] = a0 * b[bBase + j];
            for (int p = 1; p < k; p++) {
                double x = a[aRow + p];
                int bRow = bBase + p * n;
                for (int j = 0; j < n; j++) out[oRow + j] = out[oRow + j] + x * b[bRow + j];
            }
        });
        return out;
    }

    private static float[] toFloat(double[] d) {
        float[] f = new float[d.length];
        for (int i = 0; i < d.length; i++) f[i] = (float) d[i];
        return f;
    }
}
