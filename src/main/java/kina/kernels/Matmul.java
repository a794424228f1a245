package kina.kernels;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The matmul kernels shared by the interpreter and the compiled plan, so their bits agree.
 *
 * <p>Order (the specification, the reference kernel kina.eval.Kernels.matmulScalar is its scalar twin): for every output
 * element, acc = −0.0, then acc = fma(a[.., i, p], b[.., p, j], acc) for p = 0 … K−1 in increasing
 * p: one rounding per product-and-add, in F32 (float fma) or F64. Starting from −0.0 makes the
 * first step exactly the rounded first product, and K = 0 gives −0.0 … so the caller's K = 0 case
 * is defined as +0.0 (written explicitly).
 *
 * <p>The fast path is the GotoBLAS loop nest with a Vector API micro-kernel: K is walked in
 * blocks of {@link #KC} in increasing order; each block packs B's rows [pc, pc+kc) into panels
 * of NR columns and A's rows into panels of {@link #MR}, and the micro-kernel keeps an MR × NR
 * tile of accumulators in registers, one lanewise fma (exact per lane, as Math.fma) per p. Between
 * K blocks an accumulator is stored to {@code out} and reloaded unchanged, so each output's chain
 * of fmas is the specification's single chain in increasing p: no partial sums, no reassociation.
 * Transposed operands ({@code transA}: A stored [.., K, M]; {@code transB}: B stored [.., N, K])
 * are read in place by the packing, which moves values without arithmetic. Threads
 * ({@link Parallel}) take disjoint output blocks (one batch element split by rows: B packed once
 * per K block and shared, blocks of about MC rows claimed one at a time, so a thread that runs
 * slow takes fewer); padding lanes and rows (zeros) land in a scratch
 * tile and are never written to {@code out}. With few column panels a transposed A is read in
 * place instead of packed (F32; at most {@link #DIRECT_COLS} panels): its rows p already hold a
 * panel's MR values side by side (batched xᵀ·g-like products, K = M = 128, N = 32, ran ~1.7×
 * faster). A plain A is always packed: read in place by rows (a kernel of its own until session
 * 13), 1024×128×128 NN and NT ran 18 % and 10 % slower than packed (bench/BlasAB.java, one run).
 * Small products take a scalar loop with the same order.
 *
 * <p>Measured on a 2-core AMD EPYC (Zen 3, AVX2) in bench/RESULTS.md: the 5 × 2-vector tile is
 * the widest C2 kept in the 16 ymm registers (6 × 2 spilled), and the loop variable must be the
 * array index itself (ai += MR), not p with ai = ao + p·MR, or the tile spilled (~3× slower).
 */
public final class Matmul {
    private Matmul() {}

    /** Rows of the register tile; its columns are two vectors (NR = 2 · lanes, in {@link Vec}). */
    static final int MR = 5;                 // packAF32/packAF64 spell out 5 rows
    /**
     * Cache blocks: K block and M block (packed A, mc × kc floats, 400 KB, in L2). A whole K of the
     * models (≤ 1024) is one block, so out is not stored and reloaded between blocks: measured on
     * this machine, KC 256 → 1024 with MC 200 → 100 took 2048×688×256 NT from
     * 81 to 85 GFLOP/s and 1024³ from 86 to 92 (1 thread, best of 3).
     */
    static final int KC = 1024, MC = 100;
    /** Below this many multiply-adds per batch element the scalar loop is used (no packing). */
    static final long SMALL = 16_384;
    /**
     * Below this many multiply-adds in all, one product runs on the calling thread: waking the
     * pool's workers cost more than it saved on 2 cores (JMH, bench/RESULTS.md: tiny's shapes ran
     * 2–3× slower on 2 threads than on 1).
     */
    static final long PARALLEL_MIN = 1L << 23;
    /**
     * The least work (m·k·n) for {@code Vec.sharedBF32}, which also needs m ≥ 4·MC: with less work or
     * fewer row blocks the two fan-outs per K block (pack, then products) cost more than packing B
     * twice and claiming blocks saves (bench/MatmulAB.java, 2 threads: 90×2048×64 ran 49–51 GFLOP/s
     * shared against 57–60 in halves, 256×2048×256 TN 1–3 % below; 512 rows and more, no loss).
     */
    static final long SHARED_MIN = 1L << 26;
    /**
     * A transposed A is read in place instead of packed (F32) when the output block has at most
     * DIRECT_COLS column panels (xᵀ·g with N = 128, 8 panels, ran ~5 % faster packed; N = 32 in place).
     */
    static final int DIRECT_COLS = 4;

    /** Rows of the scalar path's block. */
    static final int ROWS = 4;

    /**
     * Whether the Vector API module is in the boot layer (java --add-modules jdk.incubator.vector);
     * without it every product takes the scalar loop (same bits, slower).
     */
    static final boolean VECTOR = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();

    /**
     * The F32 micro-kernel for kernels outside this class whose operands already have its layout
     * (attention's PQ, {@link AttentionProducts}). A nested class so that loading Matmul does not
     * load the Vector API (the scalar path must work without the module, {@link #VECTOR}).
     */
    public static final class Tile {
        private Tile() {}

        /** The register tile of {@link #transA}: rows (A's MR values) and columns (two vectors). */
        public static final int ROWS = MR, COLS = Vec.NRF;

        /**
         * A transposed A read in place: for r &lt; ROWS, j &lt; COLS, c[co + r·ldc + j] continues its
         * fma chain over p &lt; kc with c = fma(a[ao + p·lda + r], pb[bo + p·COLS + j], c), in
         * increasing p, so the chains are the specification's (the class comment). Needs the Vector
         * API module.
         */
        public static void transA(float[] a, int ao, int lda, float[] pb, int bo, int kc, float[] c, int co, int ldc) {
            Vec.kernelColsF32(a, ao, lda, pb, bo, kc, c, co, ldc, true);
        }
    }

    /**
     * out[bt, i, j] = Σ_p A[bt, i, p] · B[bt, p, j] in float, FMA order above; out has batch·m·n
     * elements (row-major) and is overwritten. A is [batch, m, k] ({@code transA}: [batch, k, m]),
     * B is [batch, k, n] ({@code transB}: [batch, n, k]).
     */
    public static void sgemm(float[] a, boolean transA, float[] b, boolean transB, float[] out, int batch, int m, int k, int n) {
        if (batch == 0 || m == 0 || n == 0) return;
        if (k == 0) { java.util.Arrays.fill(out, 0, batch * m * n, 0f); return; }
        if (VECTOR && m < MR && !transA && !transB && n >= Vec.FL) { Vec.fewRowsF32(a, b, out, batch, m, k, n); return; }
        if (!VECTOR || (long) m * k * n < SMALL) { smallF32(a, transA, b, transB, out, batch, m, k, n); return; }
        long work = (long) batch * m * k * n;
        Grid g = Grid.of(batch, m, n, MR, Vec.NRF, work);
        if (batch == 1 && g.mt() > 1 && work >= SHARED_MIN && m >= 4 * MC) { Vec.sharedBF32(a, transA, b, transB, out, m, k, n, work); return; }
        java.util.function.IntConsumer task = t -> {
            int bt = t / (g.mt() * g.nt()), r = t % (g.mt() * g.nt());
            int i0 = g.start(r / g.nt(), true), i1 = g.start(r / g.nt() + 1, true);
            int j0 = g.start(r % g.nt(), false), j1 = g.start(r % g.nt() + 1, false);
            if (i0 < i1 && j0 < j1) Vec.blockF32(a, transA, b, transB, out, bt, m, k, n, i0, i1, j0, j1, Vec.ScratchF.get());
        };
        if (work < PARALLEL_MIN) for (int t = 0; t < g.tasks(); t++) task.accept(t);
        else Parallel.forEach(g.tasks(), work, task);
    }

    /**
     * Several products that share their left operand, out_t = A · B_t for t &lt; bs.length (one
     * batch element: A [m, k] or, {@code transA}, [k, m]; B_t [k, ns[t]] or, {@code transB},
     * [ns[t], k]; out_t [m, ns[t]]), each output's bits those of {@link #sgemm} on its own (every
     * element's fma chain is the same: same K blocks, same kernels). The work is one product over
     * all the outputs' column panels: A is packed (or read in place) once per row block for all of
     * them, not once per product (the q/k/v projections and their weight gradients, the FFN's gate
     * and up).
     */
    public static void sgemmShared(float[] a, boolean transA, float[][] bs, boolean transB, float[][] outs, int m, int k, int[] ns) {
        long work = 0;
        int panels = 0;
        for (int n : ns) { work += (long) m * k * n; panels += (n + Vec.NRF - 1) / Vec.NRF; }
        boolean each = !VECTOR || m == 0 || k == 0 || m < MR && !transA && !transB;   // few rows: sgemm's own path
        for (int n : ns) each |= n == 0 || (long) m * k * n < SMALL;
        if (each) {                                      // the cases sgemm treats apart (no product, the scalar loop)
            for (int t = 0; t < bs.length; t++) sgemm(a, transA, bs[t], transB, outs[t], 1, m, k, ns[t]);
            return;
        }
        Vec.sharedAF32(a, transA, bs, transB, outs, m, k, ns, panels, work);
    }

    /** The F64 twin of {@link #sgemm}. */
    public static void dgemm(double[] a, boolean transA, double[] b, boolean transB, double[] out, int batch, int m, int k, int n) {
        if (batch == 0 || m == 0 || n == 0) return;
        if (k == 0) { java.util.Arrays.fill(out, 0, batch * m * n, 0d); return; }
        if (!VECTOR || (long) m * k * n < SMALL) { smallF64(a, transA, b, transB, out, batch, m, k, n); return; }
        long work = (long) batch * m * k * n;
        Grid g = Grid.of(batch, m, n, MR, Vec.NRD, work);
        java.util.function.IntConsumer task = t -> {
            int bt = t / (g.mt() * g.nt()), r = t % (g.mt() * g.nt());
            int i0 = g.start(r / g.nt(), true), i1 = g.start(r / g.nt() + 1, true);
            int j0 = g.start(r % g.nt(), false), j1 = g.start(r % g.nt() + 1, false);
            if (i0 < i1 && j0 < j1) Vec.blockF64(a, transA, b, transB, out, bt, m, k, n, i0, i1, j0, j1, Vec.ScratchD.get());
        };
        if (work < PARALLEL_MIN) for (int t = 0; t < g.tasks(); t++) task.accept(t);
        else Parallel.forEach(g.tasks(), work, task);
    }

    /**
     * How the output [batch, m, n] is cut into tasks: per batch element an mt × nt grid of blocks
     * (row blocks a multiple of MR, column blocks a multiple of NR). With fewer batch elements than
     * threads, the longer side is split into about threads / batch blocks (equal halves on 2 cores),
     * so the packing repeated per block (B per row block, A per column block) is the smaller one;
     * a single batch element split by rows runs as {@code Vec.sharedBF32} instead (F32).
     */
    record Grid(int batch, int m, int n, int mt, int nt, int mStep, int nStep) {
        static Grid of(int batch, int m, int n, int mr, int nr, long work) {
            int threads = work < PARALLEL_MIN ? 1 : Parallel.threads();
            int mt = 1, nt = 1;
            if (threads > 1 && batch < threads) {
                int need = (threads + batch - 1) / batch;
                if (m >= n) mt = Math.min(need, (m + mr - 1) / mr);
                else nt = Math.min(need, (n + nr - 1) / nr);
            }
            int mStep = roundUp((m + mt - 1) / mt, mr), nStep = roundUp((n + nt - 1) / nt, nr);
            return new Grid(batch, m, n, mt, nt, mStep, nStep);
        }

        int tasks() { return batch * mt * nt; }

        /** Start of block {@code b} (rows when {@code rows}, else columns), clamped to the size. */
        int start(int b, boolean rows) { return rows ? Math.min(m, b * mStep) : Math.min(n, b * nStep); }
    }

    static int roundUp(int x, int r) { return (x + r - 1) / r * r; }

    /** Rows per M block: about {@link #MC}, balanced so no block is a thin remainder (≤ MC + MR − 1). */
    static int mcStep(int rows) {
        int blocks = (rows + MC - 1) / MC;
        return roundUp((rows + blocks - 1) / blocks, MR);
    }

    /** The Vector API loop nest; loaded only when {@link #VECTOR}. */
    /** Calls that took the shared-B path of one large product ({@code Vec.sharedBF32}), and sgemmShared's one-A path (tests). */
    static final java.util.concurrent.atomic.LongAdder SHARED_B_RUNS = new java.util.concurrent.atomic.LongAdder(),
            SHARED_A_RUNS = new java.util.concurrent.atomic.LongAdder();

    static final class Vec {
        private Vec() {}

        static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
        static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
        static final int FL = FS.length(), DL = DS.length();
        static final int NRF = 2 * FL, NRD = 2 * DL;
        /**
         * Eight lanes for copying MR (≤ 8) contiguous floats at once ({@link #packAF32}); only where the
         * preferred species has at least eight (256-bit vectors are native then), else scalar copies.
         */
        static final VectorSpecies<Float> F8 = FloatVector.SPECIES_256;
        static final boolean COPY8 = FL >= 8 && MR <= 8;

        // ---- F32 ----------------------------------------------------------------------------------

        /**
         * Fewer rows than the register tile (a decode step's x·W), A and B as they are: B is read in
         * place, row after row as it lies in memory (packing it would copy more than the product
         * reads, and a decode step streams every weight from memory once), each of its vectors used
         * for every row of out, whose accumulators stay in out (a few KB, in L1). Every output's chain
         * is acc = fma(a[i, p], b[p, j], acc) from −0.0 in increasing p, vectorised across j, a scalar
         * tail. On the calling thread: below {@link #PARALLEL_MIN} in all the models' shapes.
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
            /** Packed into MR-row panels ({@link #packAF32}). */
            PACKED,
            /** transA in place: A's row p holds a panel's MR values for p contiguously ({@link #kernelColsF32}). */
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
         * {@code packA} (else s already holds this block's A: {@link #sgemmShared}'s later products).
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
                // The index is the loop variable (see the class comment).
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
            // The index is the loop variable (see the class comment).
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

    /** Small products: rows in blocks of {@link #ROWS}, the inner loop over j, same fma order. */
    private static void smallF32(float[] a, boolean transA, float[] b, boolean transB, float[] out, int batch, int m, int k, int n) {
        float[][] t = SMALL_T.get();                                // the caller's: the workers below only read them
        float[] pa = transA ? (t[0] = packT(a, batch, k, m, t[0])) : a;          // [batch, m, k]
        float[] pb = transB ? (t[1] = packT(b, batch, n, k, t[1])) : b;          // [batch, k, n]
        int blocks = (m + ROWS - 1) / ROWS;
        Parallel.forEach(batch * blocks, (long) batch * m * k * n, chunk -> {
            int bt = chunk / blocks, i0 = (chunk % blocks) * ROWS;
            rowsF32(pa, pb, out, bt, i0, Math.min(ROWS, m - i0), m, k, n);
        });
    }

    private static void rowsF32(float[] a, float[] b, float[] out, int bt, int i0, int rows, int m, int k, int n) {
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

    private static void smallF64(double[] a, boolean transA, double[] b, boolean transB, double[] out, int batch, int m, int k, int n) {
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

    /**
     * Per-thread transposed copies of the scalar path's operands (F32): no allocation per product. Each
     * thread keeps its largest copies (small products only, unless the Vector API module is absent).
     */
    private static final ThreadLocal<float[][]> SMALL_T = ThreadLocal.withInitial(() -> new float[2][0]);

    /** x [batch, r, c] → [batch, c, r], into {@code y} when it is long enough, else into a new array; returns it. */
    static float[] packT(float[] x, int batch, int r, int c, float[] y) {
        if (y.length < batch * r * c) y = new float[batch * r * c];
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
    public static double[] f32(double[] a, double[] b, int batch, int m, int k, int n) {
        float[] af = new float[a.length], bf = new float[b.length], out = new float[batch * m * n];
        for (int i = 0; i < a.length; i++) af[i] = (float) a[i];
        for (int i = 0; i < b.length; i++) bf[i] = (float) b[i];
        sgemm(af, false, bf, false, out, batch, m, k, n);
        double[] d = new double[out.length];
        for (int i = 0; i < d.length; i++) d[i] = out[i];
        return d;
    }

    /** The interpreter's entry for F64. */
    public static double[] f64(double[] a, double[] b, int batch, int m, int k, int n) {
        double[] out = new double[batch * m * n];
        dgemm(a, false, b, false, out, batch, m, k, n);
        return out;
    }
}
