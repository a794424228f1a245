package kina.kernels;

import static kina.kernels.Matmul.MR;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Matmul}'s micro-kernels: an MR × NR tile of accumulators held in vector registers
 * ({@link Matmul#MR} rows, NR = two vectors of columns), one lanewise fma per p over a K block,
 * in increasing p, from −0.0 or continuing the values in the output. The F32 tile reads A packed
 * or, transposed, in place; the F64 tile reads A packed. Loaded only when {@link Matmul#VECTOR}.
 */
final class MatmulKernels {
    private MatmulKernels() {}

    /** The preferred vector species, their lanes, and the tile's columns NR (two vectors) in F32 and F64. */
    static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    static final int FL = FS.length(), DL = DS.length();
    static final int NRF = 2 * FL, NRD = 2 * DL;

    /**
     * c[r·ldc + j] (r < MR, j < NR) continues its fma chain over p < kc: c = fma(A(r, p), B(p, j), c),
     * from −0.0 when {@code !load}; A packed, A(r, p) = pa[ao + p·MR + r].
     */
    static void kernelF32(float[] pa, int ao, float[] pb, int bo, int kc, float[] c, int co, int ldc, boolean load) {
        kernelF32(pa, ao, pb, bo, kc, c, co, ldc, load, 1);
    }

    /**
     * {@link #kernelF32} for {@code tiles} tiles down the rows: tile t reads A's panel at ao + t·kc·MR
     * and its outputs at co + t·MR·ldc (one call per column panel of a block, not per tile).
     */
    static void kernelF32(float[] pa, int ao, float[] pb, int bo, int kc, float[] c, int co, int ldc, boolean load, int tiles) {
        for (int t = 0; t < tiles; t++, ao += kc * MR, co += MR * ldc) {
            FloatVector c00, c01, c10, c11, c20, c21, c30, c31, c40, c41;
            if (load) {
                int o = co;
                c00 = FloatVector.fromArray(FS, c, o); c01 = FloatVector.fromArray(FS, c, o + FL); o += ldc;
                c10 = FloatVector.fromArray(FS, c, o); c11 = FloatVector.fromArray(FS, c, o + FL); o += ldc;
                c20 = FloatVector.fromArray(FS, c, o); c21 = FloatVector.fromArray(FS, c, o + FL); o += ldc;
                c30 = FloatVector.fromArray(FS, c, o); c31 = FloatVector.fromArray(FS, c, o + FL); o += ldc;
                c40 = FloatVector.fromArray(FS, c, o); c41 = FloatVector.fromArray(FS, c, o + FL);
            } else {
                FloatVector z = FloatVector.broadcast(FS, -0.0f);
                c00 = z; c01 = z; c10 = z; c11 = z; c20 = z; c21 = z; c30 = z; c31 = z; c40 = z; c41 = z;
            }
            // The index is the loop variable (see Matmul's class comment).
            for (int ai = ao, bi = bo, end = ao + kc * MR; ai < end; ai += MR, bi += NRF) {
                FloatVector b0 = FloatVector.fromArray(FS, pb, bi), b1 = FloatVector.fromArray(FS, pb, bi + FL);
                FloatVector x = FloatVector.broadcast(FS, pa[ai]);
                c00 = x.fma(b0, c00); c01 = x.fma(b1, c01);
                x = FloatVector.broadcast(FS, pa[ai + 1]);
                c10 = x.fma(b0, c10); c11 = x.fma(b1, c11);
                x = FloatVector.broadcast(FS, pa[ai + 2]);
                c20 = x.fma(b0, c20); c21 = x.fma(b1, c21);
                x = FloatVector.broadcast(FS, pa[ai + 3]);
                c30 = x.fma(b0, c30); c31 = x.fma(b1, c31);
                x = FloatVector.broadcast(FS, pa[ai + 4]);
                c40 = x.fma(b0, c40); c41 = x.fma(b1, c41);
            }
            int o = co;
            c00.intoArray(c, o); c01.intoArray(c, o + FL); o += ldc;
            c10.intoArray(c, o); c11.intoArray(c, o + FL); o += ldc;
            c20.intoArray(c, o); c21.intoArray(c, o + FL); o += ldc;
            c30.intoArray(c, o); c31.intoArray(c, o + FL); o += ldc;
            c40.intoArray(c, o); c41.intoArray(c, o + FL);
        }
    }

    /**
     * {@link #kernelF32} reading a transposed A (stored [k, m]) in place: A(r, p) = a[ao + p·lda + r],
     * the panel's MR values of p contiguous, so no packing is needed.
     */
    static void kernelColsF32(float[] a, int ao, int lda, float[] pb, int bo, int kc, float[] c, int co, int ldc, boolean load) {
        FloatVector c00, c01, c10, c11, c20, c21, c30, c31, c40, c41;
        if (load) {
            int o = co;
            c00 = FloatVector.fromArray(FS, c, o); c01 = FloatVector.fromArray(FS, c, o + FL); o += ldc;
            c10 = FloatVector.fromArray(FS, c, o); c11 = FloatVector.fromArray(FS, c, o + FL); o += ldc;
            c20 = FloatVector.fromArray(FS, c, o); c21 = FloatVector.fromArray(FS, c, o + FL); o += ldc;
            c30 = FloatVector.fromArray(FS, c, o); c31 = FloatVector.fromArray(FS, c, o + FL); o += ldc;
            c40 = FloatVector.fromArray(FS, c, o); c41 = FloatVector.fromArray(FS, c, o + FL);
        } else {
            FloatVector z = FloatVector.broadcast(FS, -0.0f);
            c00 = z; c01 = z; c10 = z; c11 = z; c20 = z; c21 = z; c30 = z; c31 = z; c40 = z; c41 = z;
        }
        // bi (constant stride) is the counted loop variable; ai follows with the row stride.
        int ai = ao;
        for (int bi = bo, end = bo + kc * NRF; bi < end; bi += NRF, ai += lda) {
            FloatVector b0 = FloatVector.fromArray(FS, pb, bi), b1 = FloatVector.fromArray(FS, pb, bi + FL);
            FloatVector x = FloatVector.broadcast(FS, a[ai]);
            c00 = x.fma(b0, c00); c01 = x.fma(b1, c01);
            x = FloatVector.broadcast(FS, a[ai + 1]);
            c10 = x.fma(b0, c10); c11 = x.fma(b1, c11);
            x = FloatVector.broadcast(FS, a[ai + 2]);
            c20 = x.fma(b0, c20); c21 = x.fma(b1, c21);
            x = FloatVector.broadcast(FS, a[ai + 3]);
            c30 = x.fma(b0, c30); c31 = x.fma(b1, c31);
            x = FloatVector.broadcast(FS, a[ai + 4]);
            c40 = x.fma(b0, c40); c41 = x.fma(b1, c41);
        }
        int o = co;
        c00.intoArray(c, o); c01.intoArray(c, o + FL); o += ldc;
        c10.intoArray(c, o); c11.intoArray(c, o + FL); o += ldc;
        c20.intoArray(c, o); c21.intoArray(c, o + FL); o += ldc;
        c30.intoArray(c, o); c31.intoArray(c, o + FL); o += ldc;
        c40.intoArray(c, o); c41.intoArray(c, o + FL);
    }

    static void kernelF64(double[] pa, int ao, double[] pb, int bo, int kc, double[] c, int co, int ldc, boolean load) {
        DoubleVector c00, c01, c10, c11, c20, c21, c30, c31, c40, c41;
        if (load) {
            int o = co;
            c00 = DoubleVector.fromArray(DS, c, o); c01 = DoubleVector.fromArray(DS, c, o + DL); o += ldc;
            c10 = DoubleVector.fromArray(DS, c, o); c11 = DoubleVector.fromArray(DS, c, o + DL); o += ldc;
            c20 = DoubleVector.fromArray(DS, c, o); c21 = DoubleVector.fromArray(DS, c, o + DL); o += ldc;
            c30 = DoubleVector.fromArray(DS, c, o); c31 = DoubleVector.fromArray(DS, c, o + DL); o += ldc;
            c40 = DoubleVector.fromArray(DS, c, o); c41 = DoubleVector.fromArray(DS, c, o + DL);
        } else {
            DoubleVector z = DoubleVector.broadcast(DS, -0.0d);
            c00 = z; c01 = z; c10 = z; c11 = z; c20 = z; c21 = z; c30 = z; c31 = z; c40 = z; c41 = z;
        }
        // The index is the loop variable (see Matmul's class comment).
        for (int ai = ao, bi = bo, end = ao + kc * MR; ai < end; ai += MR, bi += NRD) {
            DoubleVector b0 = DoubleVector.fromArray(DS, pb, bi), b1 = DoubleVector.fromArray(DS, pb, bi + DL);
            DoubleVector x = DoubleVector.broadcast(DS, pa[ai]);
            c00 = x.fma(b0, c00); c01 = x.fma(b1, c01);
            x = DoubleVector.broadcast(DS, pa[ai + 1]);
            c10 = x.fma(b0, c10); c11 = x.fma(b1, c11);
            x = DoubleVector.broadcast(DS, pa[ai + 2]);
            c20 = x.fma(b0, c20); c21 = x.fma(b1, c21);
            x = DoubleVector.broadcast(DS, pa[ai + 3]);
            c30 = x.fma(b0, c30); c31 = x.fma(b1, c31);
            x = DoubleVector.broadcast(DS, pa[ai + 4]);
            c40 = x.fma(b0, c40); c41 = x.fma(b1, c41);
        }
        int o = co;
        c00.intoArray(c, o); c01.intoArray(c, o + DL); o += ldc;
        c10.intoArray(c, o); c11.intoArray(c, o + DL); o += ldc;
        c20.intoArray(c, o); c21.intoArray(c, o + DL); o += ldc;
        c30.intoArray(c, o); c31.intoArray(c, o + DL); o += ldc;
        c40.intoArray(c, o); c41.intoArray(c, o + DL);
    }
}
