package kina.plan;

/**
 * The per-thread scratch of the plan's kernels: arrays grown on first use and kept for the thread's
 * life, so the kernels allocate nothing per call (bin/kina bench prints the heap a timed step
 * allocates, heap_kb_per_step: with the plan engine tens of KB, the pool's per-call bookkeeping, the
 * run's outputs and code C2 has not compiled yet). One instance per thread (the
 * caller and each pool worker). Each kernel family has its own fields but {@code block*}, which
 * PlanKernels.attention and AttentionProducts.qkSoftmaxGrad share (neither calls the other), and no
 * kernel calls another that uses a field it holds: PlanKernels.attention holds {@link #attention}
 * and calls AttentionProducts' helpers, which take their arrays as arguments.
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

    /** PlanKernels.attention: [0] probability rows, [1] kᵀ of one head, [2] v of one head in blocks. */
    final float[][] attention = new float[3][0];
    /**
     * Per row of a block (PlanKernels.attention's RB rows, AttentionProducts.qkSoftmaxGrad's four): the
     * sink share (attention only), the running fold Z (attention's Z; qkSoftmaxGrad's Σ p·dp), and the
     * attended keys [lo, hi].
     */
    final float[] blockShare = new float[BLOCK], blockZ = new float[BLOCK];
    final int[] blockLo = new int[BLOCK], blockHi = new int[BLOCK];
    private static final int BLOCK = Math.max(PlanKernels.RB, 4);

    /** AttentionProducts' score rows, kᵀ and product operands (its kernels never nest). */
    final float[][] products = new float[4][0];
    /** AttentionProducts.qkSoftmaxGrad's dK and dV chains, a group's q and g rows, and its ds rows. */
    final float[][] pq = new float[5][0];
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
