package kina.kernels;

/**
 * The per-thread scratch of the plan's kernels: arrays grown on first use and kept for the thread's
 * life, so the kernels allocate nothing per call (bin/kina bench prints the heap a timed step
 * allocates, heap_kb_per_step: with the plan engine tens of KB, the pool's per-call bookkeeping, the
 * run's outputs and code C2 has not compiled yet). One instance per thread (the
 * caller and each pool worker). Each kernel family has its own fields, and no kernel calls another
 * that uses a field it holds: FlashAttention holds {@link #flash} and calls AttentionProducts'
 * helpers, which take their arrays as arguments (keyRows is called before the workers start).
 */
final class Scratch {
    private static final ThreadLocal<Scratch> LOCAL = ThreadLocal.withInitial(Scratch::new);

    private Scratch() {}

    /** This thread's scratch. */
    static Scratch get() { return LOCAL.get(); }

    /** The row kernels (softmax, log_softmax, rmsnorm): rows of width c, ROW_BLOCK at a time. */
    float[] rowsA = new float[0], rowsB = new float[0];
    /** The row kernels' per-row values (max, sum, Σu²) of one block of rows. */
    final float[] rowM = new float[PlanKernels.ROW_BLOCK], rowS = new float[PlanKernels.ROW_BLOCK];

    /**
     * FlashAttention's head operands and tiles: the forward's [0] kᵀ, [1] v in panels, [2] a score
     * tile; the backward's [0] kᵀ, [1] vᵀ, [2] p tile, [3] du tile, [4] dp tile, [5] k in panels,
     * [6] dK's and [7] dV's chains, [8] a tile's rows packed for the dK / dV products.
     */
    final float[][] flash = new float[9][0];
    /** FlashAttention.forward's state of a block of rows: the running maximum and sum, and whether it has started. */
    final float[] flashM = new float[FlashAttention.QB], flashZ = new float[FlashAttention.QB];
    final boolean[] flashStarted = new boolean[FlashAttention.QB];
    /** FlashAttention.backward: the first and last row attending each key of a block. */
    final int[] flashKeyLo = new int[FlashAttention.B], flashKeyHi = new int[FlashAttention.B];
    /**
     * Per row of four (FlashAttention's rows): its running sum, its attended keys [lo, hi], and the
     * same keys as a tile's columns (before, end].
     */
    final float[] blockZ = new float[PlanKernels.RB];
    final int[] blockLo = new int[PlanKernels.RB], blockHi = new int[PlanKernels.RB];
    final int[] blockBefore = new int[PlanKernels.RB], blockEnd = new int[PlanKernels.RB];

    /** AttentionProducts' score rows, kᵀ and product operands (its kernels never nest). */
    final float[][] products = new float[4][0];
    /** AttentionProducts.keyRows: the first and last row attending each key. */
    final int[][] keyRows = {new int[0], new int[0]};

    /** Fusion's interpreted F32 passes: registers, operand arrays and offsets, scalar values; the generated passes' scalars. */
    float[][] regs = new float[0][], fusedArrays = new float[0][];
    int[] fusedOffsets = new int[0];
    float[] regScalars = new float[0], leafScalars = new float[0];

    /** {@code a} when it holds n floats, else a new array of n. */
    static float[] atLeast(float[] a, int n) { return a.length >= n ? a : new float[n]; }

    /** {@code a} when it holds n ints, else a new array of n. */
    static int[] atLeast(int[] a, int n) { return a.length >= n ? a : new int[n]; }
}
