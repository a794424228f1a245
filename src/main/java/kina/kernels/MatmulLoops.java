package kina.kernels;

import static kina.kernels.Matmul.DIRECT_COLS;
import static kina.kernels.Matmul.KC;
import static kina.kernels.Matmul.MC;
import static kina.kernels.Matmul.MR;
import static kina.kernels.Matmul.PARALLEL_MIN;
import static kina.kernels.Matmul.SHARED_A_RUNS;
import static kina.kernels.Matmul.SHARED_B_RUNS;
import static kina.kernels.Matmul.mcStep;
import static kina.kernels.Matmul.roundUp;
import static kina.kernels.MatmulKernels.FL;
import static kina.kernels.MatmulKernels.FS;
import static kina.kernels.MatmulKernels.NRD;
import static kina.kernels.MatmulKernels.NRF;
import static kina.kernels.MatmulKernels.kernelColsF32;
import static kina.kernels.MatmulKernels.kernelF32;
import static kina.kernels.MatmulKernels.kernelF64;
import static kina.kernels.MatmulPacking.packAF32;
import static kina.kernels.MatmulPacking.packAF64;
import static kina.kernels.MatmulPacking.packBF32;
import static kina.kernels.MatmulPacking.packBF64;

import jdk.incubator.vector.FloatVector;

/**
 * {@link Matmul}'s loop nest on the Vector API: how a product's output is cut into blocks and
 * walked (K blocks of {@link Matmul#KC} in increasing order, row blocks of about {@link Matmul#MC},
 * column panels of NR), on one thread or several, with B packed once per K block and shared
 * ({@link #sharedBF32}) or A packed once for several products ({@link #sharedAF32}); and the
 * few-rows path that reads B in place. The packing is {@link MatmulPacking}'s, the register tiles
 * {@link MatmulKernels}'; every output's fma chain is the one the class comment of Matmul states.
 * Loaded only when {@link Matmul#VECTOR}.
 */
final class MatmulLoops {
    private MatmulLoops() {}

    // ---- F32 ----------------------------------------------------------------------------------

    /**
     * Fewer rows than the register tile (a decode step's x·W), A and B as they are: B is read in
     * place, row after row as it lies in memory (packing it would copy more than the product
     * reads, and a decode step streams every weight from memory once), each of its vectors used
     * for every row of out, whose accumulators stay in out (a few KB, in L1). Every output's chain
     * is acc = fma(a[i, p], b[p, j], acc) from −0.0 in increasing p, vectorised across j, a scalar
     * tail. On the calling thread: below {@link Matmul#PARALLEL_MIN} in all the models' shapes.
     */
    static void fewRowsF32(float[] a, float[] b, float[] out, int batch, int m, int k, int n) {
        int vecEnd = n - n % FL;
        for (int bt = 0; bt < batch; bt++) {
            int o0 = bt * m * n, a0 = bt * m * k, bBase = bt * k * n;
            java.util.Arrays.fill(out, o0, o0 + m * n, -0.0f);
            for (int p = 0; p < k; p++) {
                int bRow = bBase + p * n;
                for (int r = 0; r < m; r++) {
                    FloatVector x = FloatVector.broadcast(FS, a[a0 + r * k + p]);
                    int oRow = o0 + r * n;
                    for (int j = 0; j < vecEnd; j += FL)
                        x.fma(FloatVector.fromArray(FS, b, bRow + j), FloatVector.fromArray(FS, out, oRow + j)).intoArray(out, oRow + j);
                    float xs = a[a0 + r * k + p];
                    for (int j = vecEnd; j < n; j++) out[oRow + j] = Math.fma(xs, b[bRow + j], out[oRow + j]);
                }
            }
        }
    }

    /** Per-thread packing buffers: A block [mc/MR][kc][MR], B block [panels][kc][NR], an edge tile. */
    static final class ScratchF {
        float[] a = new float[0], b = new float[0], tile = new float[MR * NRF];
        private static final ThreadLocal<ScratchF> LOCAL = ThreadLocal.withInitial(ScratchF::new);
        static ScratchF get() { return LOCAL.get(); }
    }

    /** How the micro-kernel reads A (F32). */
    enum AForm {
        /** Packed into MR-row panels ({@link MatmulPacking#packAF32}). */
        PACKED,
        /** transA in place: A's row p holds a panel's MR values for p contiguously ({@link MatmulKernels#kernelColsF32}). */
        COLS
    }

    /** Output block rows [i0, i1) × columns [j0, j1) of batch element bt, K walked in blocks. */
    static void blockF32(float[] a, boolean transA, float[] b, boolean transB, float[] out, int bt, int m, int k, int n,
                         int i0, int i1, int j0, int j1, ScratchF s) {
        int aBase = bt * m * k, bBase = bt * k * n, oBase = bt * m * n;
        int cols = j1 - j0, panels = (cols + NRF - 1) / NRF;
        int kcStep = Math.min(KC, k), mcStep = mcStep(i1 - i0);
        // Few column panels: a transposed A is read in place (already laid out as MR-value columns,
        // stride m); see DIRECT_COLS. Only a ragged last row panel is packed then (at pa[0]).
        AForm form = aForm(transA, panels);
        if (s.b.length < panels * NRF * kcStep) s.b = new float[panels * NRF * kcStep];
        float[] pb = s.b;
        for (int pc = 0; pc < k; pc += kcStep) {
            int kc = Math.min(kcStep, k - pc);
            packBF32(b, transB, bBase, k, n, pc, kc, j0, j1, pb, 0);
            for (int ic = i0; ic < i1; ic += mcStep)
                rowBlockF32(a, transA, out, bt, m, k, n, ic, Math.min(mcStep, i1 - ic), pc, kc, j0, j1, form, pb, s);
        }
    }

    /** How the micro-kernel reads A for an output block of {@code panels} column panels (see blockF32). */
    static AForm aForm(boolean transA, int panels) {
        return transA && panels <= DIRECT_COLS ? AForm.COLS : AForm.PACKED;
    }

    /**
     * sgemm of one batch element on several threads with B packed once per K block, shared:
     * the panels are packed in parallel, then blocks of about MC rows are claimed one at a time
     * (a thread that starts late or runs slow takes fewer), each packing its own A. Every output
     * element's chain is the one blockF32 computes (same K blocks, same kernel), so the bits are
     * the same at any thread count.
     */
    static void sharedBF32(float[] a, boolean transA, float[] b, boolean transB, float[] out, int m, int k, int n, long work) {
        SHARED_B_RUNS.increment();
        // Blocks of at most about MC rows, their count a multiple of the threads (equal shares when all
        // run at one speed; the row blocks never change an output's chain, so any count gives the same bits).
        int t = Parallel.threads(), nb = roundUp(Math.max((m + MC - 1) / MC, t), t);
        int panels = (n + NRF - 1) / NRF, kcStep = Math.min(KC, k), mcStep = roundUp((m + nb - 1) / nb, MR), blocks = (m + mcStep - 1) / mcStep;
        AForm form = aForm(transA, panels);
        ScratchF mine = ScratchF.get();                  // the caller's B scratch, shared for the call (rowBlockF32 reads only s.a, s.tile)
        if (mine.b.length < panels * NRF * kcStep) mine.b = new float[panels * NRF * kcStep];
        float[] pbf = mine.b;
        int perChunk = Math.max(1, (panels + 7) / 8);
        for (int pc = 0; pc < k; pc += kcStep) {
            int kc = Math.min(kcStep, k - pc), pcf = pc;
            Parallel.forEach((panels + perChunk - 1) / perChunk, work, c -> {   // the call's work: packing fans out whenever the products do
                int j0 = c * perChunk * NRF, j1 = Math.min(n, (c + 1) * perChunk * NRF);
                packBF32(b, transB, 0, k, n, pcf, kc, j0, j1, pbf, c * perChunk * kc * NRF);
            });
            Parallel.forEach(blocks, work, blk -> {
                int ic = blk * mcStep;
                rowBlockF32(a, transA, out, 0, m, k, n, ic, Math.min(mcStep, m - ic), pcf, kc, 0, n, form, pbf, ScratchF.get());
            });
        }
    }

    /**
     * Rows [ic, ic + mc) × columns [j0, j1) of batch element bt over the K block [pc, pc + kc),
     * B's panels already packed in pb; A packed (or read in place) into s.
     */
    static void rowBlockF32(float[] a, boolean transA, float[] out, int bt, int m, int k, int n, int ic, int mc, int pc, int kc,
                            int j0, int j1, AForm form, float[] pb, ScratchF s) {
        rowBlockF32(a, transA, out, bt, m, k, n, ic, mc, pc, kc, j0, j1, form, pb, 0, true, s);
    }

    /**
     * {@link #rowBlockF32} with B's panels at pb[pbOff …], and A packed into s only when
     * {@code packA} (else s already holds this block's A: {@link Matmul#sgemmShared}'s later products).
     */
    static void rowBlockF32(float[] a, boolean transA, float[] out, int bt, int m, int k, int n, int ic, int mc, int pc, int kc,
                            int j0, int j1, AForm form, float[] pb, int pbOff, boolean packA, ScratchF s) {
        int aBase = bt * m * k, oBase = bt * m * n, panels = (j1 - j0 + NRF - 1) / NRF;
        boolean load = pc > 0;
        int aNeed = (form == AForm.PACKED ? roundUp(mc, MR) : MR) * kc;
        if (s.a.length < aNeed) s.a = new float[aNeed];
        float[] pa = s.a, tile = s.tile;
        int full = mc / MR * MR;
        if (packA && form == AForm.PACKED) packAF32(a, transA, aBase, m, k, ic, mc, pc, kc, pa);
        else if (packA && full < mc) packAF32(a, transA, aBase, m, k, ic + full, mc - full, pc, kc, pa);
        for (int jp = 0; jp < panels; jp++) {
            int j = j0 + jp * NRF, nr = Math.min(NRF, j1 - j), bo = pbOff + jp * kc * NRF;
            // A full column panel's whole tiles in one kernel call: per tile, the call (its arguments, the
            // caller's values saved around it) cost 6–15 % of the products at K = 128 to 256 (MatmulAB).
            int ip0 = 0;
            if (nr == NRF && full > 0 && form == AForm.PACKED) {
                kernelF32(pa, 0, pb, bo, kc, out, oBase + ic * n + j, n, load, full / MR);
                ip0 = full / MR;
            }
            for (int ip = ip0; ip * MR < mc; ip++) {
                int i = ic + ip * MR, mr = Math.min(MR, ic + mc - i);
                // Edge tiles (padding rows or lanes) run on the scratch tile; only their real part reaches out.
                boolean edge = mr < MR || nr < NRF;
                float[] c = edge ? tile : out;
                int co = edge ? 0 : oBase + i * n + j, ldc = edge ? NRF : n;
                if (edge && load) for (int r = 0; r < mr; r++) System.arraycopy(out, oBase + (i + r) * n + j, tile, r * NRF, nr);
                if (form == AForm.PACKED || mr < MR) kernelF32(pa, form == AForm.PACKED ? ip * kc * MR : 0, pb, bo, kc, c, co, ldc, load);
                else kernelColsF32(a, aBase + pc * m + i, m, pb, bo, kc, c, co, ldc, load);
                if (edge) for (int r = 0; r < mr; r++) System.arraycopy(tile, r * NRF, out, oBase + (i + r) * n + j, nr);
            }
        }
    }

    /**
     * {@link Matmul#sgemmShared}'s products: per K block, every B_t packed into one buffer (its
     * panels after those of B_0 … B_t−1), then blocks of about MC rows, each packing (or reading
     * in place) its A once and running every output's panels; on several threads, the blocks
     * are claimed one at a time as in {@link #sharedBF32}.
     */
    static void sharedAF32(float[] a, boolean transA, float[][] bs, boolean transB, float[][] outs, int m, int k, int[] ns,
                           int panels, long work) {
        SHARED_A_RUNS.increment();
        int nOut = bs.length, kcStep = Math.min(KC, k);
        int[] off = new int[nOut + 1];                   // panels before output t
        for (int t = 0; t < nOut; t++) off[t + 1] = off[t] + (ns[t] + NRF - 1) / NRF;
        AForm form = aForm(transA, panels);
        boolean parallel = work >= PARALLEL_MIN && Parallel.threads() > 1;
        int tr = parallel ? Parallel.threads() : 1, nb = roundUp(Math.max((m + MC - 1) / MC, tr), tr);
        int mcStep = parallel ? roundUp((m + nb - 1) / nb, MR) : mcStep(m), blocks = (m + mcStep - 1) / mcStep;
        ScratchF mine = ScratchF.get();
        if (mine.b.length < panels * NRF * kcStep) mine.b = new float[panels * NRF * kcStep];
        float[] pb = mine.b;
        for (int pc = 0; pc < k; pc += kcStep) {
            int kc = Math.min(kcStep, k - pc), pcf = pc;
            java.util.function.IntConsumer pack = t -> packBF32(bs[t], transB, 0, k, ns[t], pcf, kc, 0, ns[t], pb, off[t] * kc * NRF);
            java.util.function.IntConsumer block = blk -> {
                int ic = blk * mcStep, mc = Math.min(mcStep, m - ic);
                ScratchF s = ScratchF.get();
                for (int t = 0; t < nOut; t++)
                    rowBlockF32(a, transA, outs[t], 0, m, k, ns[t], ic, mc, pcf, kc, 0, ns[t], form, pb, off[t] * kc * NRF, t == 0, s);
            };
            if (parallel) {
                Parallel.forEach(nOut, work, pack);
                Parallel.forEach(blocks, work, block);
            } else {
                for (int t = 0; t < nOut; t++) pack.accept(t);
                for (int blk = 0; blk < blocks; blk++) block.accept(blk);
            }
        }
    }

    // ---- F64: the same loop nest with DoubleVector --------------------------------------------

    static final class ScratchD {
        double[] a = new double[0], b = new double[0], tile = new double[MR * NRD];
        private static final ThreadLocal<ScratchD> LOCAL = ThreadLocal.withInitial(ScratchD::new);
        static ScratchD get() { return LOCAL.get(); }
    }

    static void blockF64(double[] a, boolean transA, double[] b, boolean transB, double[] out, int bt, int m, int k, int n,
                                 int i0, int i1, int j0, int j1, ScratchD s) {
        int aBase = bt * m * k, bBase = bt * k * n, oBase = bt * m * n;
        int cols = j1 - j0, panels = (cols + NRD - 1) / NRD;
        int kcMax = Math.min(KC, k), mcStep = mcStep(i1 - i0);
        if (s.b.length < panels * NRD * kcMax) s.b = new double[panels * NRD * kcMax];
        if (s.a.length < mcStep * kcMax) s.a = new double[mcStep * kcMax];
        double[] pa = s.a, pb = s.b, tile = s.tile;
        for (int pc = 0; pc < k; pc += KC) {
            int kc = Math.min(KC, k - pc);
            boolean load = pc > 0;
            packBF64(b, transB, bBase, k, n, pc, kc, j0, j1, pb);
            for (int ic = i0; ic < i1; ic += mcStep) {
                int mc = Math.min(mcStep, i1 - ic);
                packAF64(a, transA, aBase, m, k, ic, mc, pc, kc, pa);
                for (int jp = 0; jp < panels; jp++) {
                    int j = j0 + jp * NRD, nr = Math.min(NRD, j1 - j), bo = jp * kc * NRD;
                    for (int ip = 0; ip * MR < mc; ip++) {
                        int i = ic + ip * MR, mr = Math.min(MR, ic + mc - i), ao = ip * kc * MR;
                        if (mr == MR && nr == NRD) {
                            kernelF64(pa, ao, pb, bo, kc, out, oBase + i * n + j, n, load);
                        } else {
                            if (load) for (int r = 0; r < mr; r++) System.arraycopy(out, oBase + (i + r) * n + j, tile, r * NRD, nr);
                            kernelF64(pa, ao, pb, bo, kc, tile, 0, NRD, load);
                            for (int r = 0; r < mr; r++) System.arraycopy(tile, r * NRD, out, oBase + (i + r) * n + j, nr);
                        }
                    }
                }
            }
        }
    }
}
