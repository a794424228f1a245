package kina.kernels;

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
 * <p>Files: this class holds the entry points, the blocking constants, the task grid and the
 * scalar loop; {@link MatmulLoops} the vector loop nest (blocks, threads, the shared-operand
 * paths), {@link MatmulPacking} the packing, {@link MatmulKernels} the register tiles.
 *
 * <p>Measured on a 2-core AMD EPYC (Zen 3, AVX2) in bench/RESULTS.md: the 5 × 2-vector tile is
 * the widest C2 kept in the 16 ymm registers (6 × 2 spilled), and the loop variable must be the
 * array index itself (ai += MR), not p with ai = ao + p·MR, or the tile spilled (~3× slower).
 */
public final class Matmul {
    private Matmul() {}

    /** Rows of the register tile; its columns are two vectors (NR = 2 · lanes, in {@link MatmulKernels}). */
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
     * The least work (m·k·n) for {@code MatmulLoops.sharedBF32}, which also needs m ≥ 4·MC: with less work or
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
        public static final int ROWS = MR, COLS = MatmulKernels.NRF;

        /**
         * A transposed A read in place: for r &lt; ROWS, j &lt; COLS, c[co + r·ldc + j] continues its
         * fma chain over p &lt; kc with c = fma(a[ao + p·lda + r], pb[bo + p·COLS + j], c), in
         * increasing p, so the chains are the specification's (the class comment). Needs the Vector
         * API module.
         */
        public static void transA(float[] a, int ao, int lda, float[] pb, int bo, int kc, float[] c, int co, int ldc) {
            MatmulKernels.kernelColsF32(a, ao, lda, pb, bo, kc, c, co, ldc, true);
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
        if (VECTOR && m < MR && !transA && !transB && n >= MatmulKernels.FL) { MatmulLoops.fewRowsF32(a, b, out, batch, m, k, n); return; }
        if (!VECTOR || (long) m * k * n < SMALL) { smallF32(a, transA, b, transB, out, batch, m, k, n); return; }
        long work = (long) batch * m * k * n;
        Grid g = Grid.of(batch, m, n, MR, MatmulKernels.NRF, work);
        if (batch == 1 && g.mt() > 1 && work >= SHARED_MIN && m >= 4 * MC) { MatmulLoops.sharedBF32(a, transA, b, transB, out, m, k, n, work); return; }
        java.util.function.IntConsumer task = t -> {
            int bt = t / (g.mt() * g.nt()), r = t % (g.mt() * g.nt());
            int i0 = g.start(r / g.nt(), true), i1 = g.start(r / g.nt() + 1, true);
            int j0 = g.start(r % g.nt(), false), j1 = g.start(r % g.nt() + 1, false);
            if (i0 < i1 && j0 < j1) MatmulLoops.blockF32(a, transA, b, transB, out, bt, m, k, n, i0, i1, j0, j1, MatmulLoops.ScratchF.get());
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
        for (int n : ns) { work += (long) m * k * n; panels += (n + MatmulKernels.NRF - 1) / MatmulKernels.NRF; }
        boolean each = !VECTOR || m == 0 || k == 0 || m < MR && !transA && !transB;   // few rows: sgemm's own path
        for (int n : ns) each |= n == 0 || (long) m * k * n < SMALL;
        if (each) {                                      // the cases sgemm treats apart (no product, the scalar loop)
            for (int t = 0; t < bs.length; t++) sgemm(a, transA, bs[t], transB, outs[t], 1, m, k, ns[t]);
            return;
        }
        MatmulLoops.sharedAF32(a, transA, bs, transB, outs, m, k, ns, panels, work);
    }

    /** The F64 twin of {@link #sgemm}. */
    public static void dgemm(double[] a, boolean transA, double[] b, boolean transB, double[] out, int batch, int m, int k, int n) {
        if (batch == 0 || m == 0 || n == 0) return;
        if (k == 0) { java.util.Arrays.fill(out, 0, batch * m * n, 0d); return; }
        if (!VECTOR || (long) m * k * n < SMALL) { smallF64(a, transA, b, transB, out, batch, m, k, n); return; }
        long work = (long) batch * m * k * n;
        Grid g = Grid.of(batch, m, n, MR, MatmulKernels.NRD, work);
        java.util.function.IntConsumer task = t -> {
            int bt = t / (g.mt() * g.nt()), r = t % (g.mt() * g.nt());
            int i0 = g.start(r / g.nt(), true), i1 = g.start(r / g.nt() + 1, true);
            int j0 = g.start(r % g.nt(), false), j1 = g.start(r % g.nt() + 1, false);
            if (i0 < i1 && j0 < j1) MatmulLoops.blockF64(a, transA, b, transB, out, bt, m, k, n, i0, i1, j0, j1, MatmulLoops.ScratchD.get());
        };
        if (work < PARALLEL_MIN) for (int t = 0; t < g.tasks(); t++) task.accept(t);
        else Parallel.forEach(g.tasks(), work, task);
    }

    /**
     * How the output [batch, m, n] is cut into tasks: per batch element an mt × nt grid of blocks
     * (row blocks a multiple of MR, column blocks a multiple of NR). With fewer batch elements than
     * threads, the longer side is split into about threads / batch blocks (equal halves on 2 cores),
     * so the packing repeated per block (B per row block, A per column block) is the smaller one;
     * a single batch element split by rows runs as {@code MatmulLoops.sharedBF32} instead (F32).
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

    /** Calls that took the shared-B path of one large product ({@code MatmulLoops.sharedBF32}), and sgemmShared's one-A path (tests). */
    static final java.util.concurrent.atomic.LongAdder SHARED_B_RUNS = new java.util.concurrent.atomic.LongAdder(),
            SHARED_A_RUNS = new java.util.concurrent.atomic.LongAdder();

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
