package kina.kernels;

import static kina.kernels.Matmul.MR;
import static kina.kernels.MatmulKernels.FL;
import static kina.kernels.MatmulKernels.FS;
import static kina.kernels.MatmulKernels.NRD;
import static kina.kernels.MatmulKernels.NRF;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Matmul}'s packing: a block of A copied into panels of {@link Matmul#MR} rows
 * ({@code pa[ip][p][r]}) and a block of B into panels of NR columns ({@code pb[jp][p][c]}), both
 * from plain or transposed storage, padding rows and columns zero. Values move without
 * arithmetic, so the packing never changes a bit. Loaded only when {@link Matmul#VECTOR}.
 */
final class MatmulPacking {
    private MatmulPacking() {}

    /**
     * Eight lanes for copying MR (≤ 8) contiguous floats at once ({@link #packAF32}); only where the
     * preferred species has at least eight (256-bit vectors are native then), else scalar copies.
     */
    static final VectorSpecies<Float> F8 = FloatVector.SPECIES_256;
    static final boolean COPY8 = FL >= 8 && MR <= 8;


    /** pa[ip][p][r] = A(ic + ip·MR + r, pc + p), zero past row ic + mc. */
    static void packAF32(float[] a, boolean transA, int aBase, int m, int k, int ic, int mc, int pc, int kc, float[] pa) {
        for (int ip = 0; ip * MR < mc; ip++) {
            int base = ip * kc * MR, rows = Math.min(MR, mc - ip * MR), i = ic + ip * MR;
            if (transA && rows == MR) {
                // A stored [k, m]: the MR values of p are contiguous. A whole vector is copied per p (its lanes
                // past MR land where p + 1's copy then writes: about 2× faster than five scalar copies hot,
                // 1.5–1.7× cold); the last p alone, so no read passes A's row
                // k − 1 and no write passes the panel.
                int dst = base, end = base + (kc - 1) * MR, src = aBase + pc * m + i;
                if (COPY8) for (; dst < end; dst += MR, src += m) FloatVector.fromArray(F8, a, src).intoArray(pa, dst);
                for (; dst < end; dst += MR, src += m) {
                    pa[dst] = a[src]; pa[dst + 1] = a[src + 1]; pa[dst + 2] = a[src + 2]; pa[dst + 3] = a[src + 3]; pa[dst + 4] = a[src + 4];
                }
                pa[dst] = a[src]; pa[dst + 1] = a[src + 1]; pa[dst + 2] = a[src + 2]; pa[dst + 3] = a[src + 3]; pa[dst + 4] = a[src + 4];
            } else if (transA) {
                for (int p = 0; p < kc; p++) {
                    int src = aBase + (pc + p) * m + i, dst = base + p * MR;
                    for (int r = 0; r < rows; r++) pa[dst + r] = a[src + r];
                    for (int r = rows; r < MR; r++) pa[dst + r] = 0f;
                }
            } else {
                // Row by row: one read stream, stores MR apart into the panel (kc·MR floats, in L1). Walking p
                // outside (MR read streams k apart, contiguous stores) ran 2–2.5× slower: 0.86 against 0.34 ns
                // per element at k = 256, 1.74 against 0.77 at k = 688.
                // Rows past mc (a ragged last panel) are zeros.
                for (int r = 0; r < rows; r++) {
                    int src = aBase + (i + r) * k + pc;
                    for (int p = 0, dst = base + r; p < kc; p++, dst += MR) pa[dst] = a[src + p];
                }
                for (int r = rows; r < MR; r++) for (int p = 0, dst = base + r; p < kc; p++, dst += MR) pa[dst] = 0f;
            }
        }
    }

    /** pb[jp][p][c] = B(pc + p, j0 + jp·NR + c), zero past column j1. */
    static void packBF32(float[] b, boolean transB, int bBase, int k, int n, int pc, int kc, int j0, int j1, float[] pb, int pbOff) {
        int full = transB ? 0 : (j1 - j0) / NRF;
        // Plain B's full panels row by row: one read stream over each row's columns [j0, j0 + full·NR),
        // two vectors into every panel. A panel at a time read NR floats from every row, a line or two
        // each, so lines shared by neighbouring panels were read from memory twice.
        for (int p = 0; p < kc && full > 0; p++) {
            int src = bBase + (pc + p) * n + j0;
            for (int jp = 0, dst = pbOff + p * NRF; jp < full; jp++, src += NRF, dst += kc * NRF) {
                FloatVector.fromArray(FS, b, src).intoArray(pb, dst);
                FloatVector.fromArray(FS, b, src + FL).intoArray(pb, dst + FL);
            }
        }
        for (int jp = full, j = j0 + full * NRF; j < j1; jp++, j += NRF) {
            int base = pbOff + jp * kc * NRF, cols = Math.min(NRF, j1 - j);
            if (transB) {                                   // B stored [n, k]: a column is contiguous in p
                for (int c = 0; c < cols; c++) {
                    int src = bBase + (j + c) * k + pc;
                    for (int p = 0; p < kc; p++) pb[base + p * NRF + c] = b[src + p];
                }
                for (int c = cols; c < NRF; c++) for (int p = 0; p < kc; p++) pb[base + p * NRF + c] = 0f;
            } else {                                        // the ragged last panel (full ones packed above)
                for (int p = 0; p < kc; p++) {
                    int dst = base + p * NRF;
                    System.arraycopy(b, bBase + (pc + p) * n + j, pb, dst, cols);
                    java.util.Arrays.fill(pb, dst + cols, dst + NRF, 0f);
                }
            }
        }
    }

    static void packAF64(double[] a, boolean transA, int aBase, int m, int k, int ic, int mc, int pc, int kc, double[] pa) {
        for (int ip = 0; ip * MR < mc; ip++) {
            int base = ip * kc * MR, rows = Math.min(MR, mc - ip * MR), i = ic + ip * MR;
            if (transA) {
                for (int p = 0; p < kc; p++) {
                    int src = aBase + (pc + p) * m + i, dst = base + p * MR;
                    for (int r = 0; r < rows; r++) pa[dst + r] = a[src + r];
                    for (int r = rows; r < MR; r++) pa[dst + r] = 0d;
                }
            } else {
                // Row by row, as packAF32 does (one read stream; stores MR apart into the panel).
                // Rows past mc (a ragged last panel) are zeros.
                for (int r = 0; r < rows; r++) {
                    int src = aBase + (i + r) * k + pc;
                    for (int p = 0, dst = base + r; p < kc; p++, dst += MR) pa[dst] = a[src + p];
                }
                for (int r = rows; r < MR; r++) for (int p = 0, dst = base + r; p < kc; p++, dst += MR) pa[dst] = 0d;
            }
        }
    }

    static void packBF64(double[] b, boolean transB, int bBase, int k, int n, int pc, int kc, int j0, int j1, double[] pb) {
        for (int jp = 0, j = j0; j < j1; jp++, j += NRD) {
            int base = jp * kc * NRD, cols = Math.min(NRD, j1 - j);
            if (transB) {
                for (int c = 0; c < cols; c++) {
                    int src = bBase + (j + c) * k + pc;
                    for (int p = 0; p < kc; p++) pb[base + p * NRD + c] = b[src + p];
                }
                for (int c = cols; c < NRD; c++) for (int p = 0; p < kc; p++) pb[base + p * NRD + c] = 0d;
            } else if (cols == NRD) {
                for (int p = 0; p < kc; p++) System.arraycopy(b, bBase + (pc + p) * n + j, pb, base + p * NRD, NRD);
            } else {
                for (int p = 0; p < kc; p++) {
                    int dst = base + p * NRD;
                    System.arraycopy(b, bBase + (pc + p) * n + j, pb, dst, cols);
                    java.util.Arrays.fill(pb, dst + cols, dst + NRD, 0d);
                }
            }
        }
    }
}
