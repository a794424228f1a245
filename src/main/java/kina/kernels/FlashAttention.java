package kina.kernels;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import kina.ir.Instr.AttnOpts;

/**
 * The plan's F32 kernels of causal attention, blockwise (FlashAttention-2): the forward's online
 * softmax ({@link #forward}: attention, attention_lse, attention_with_lse) and the backward that
 * recomputes each attended pair's probability from the saved log-sum-exp ({@link #backward}:
 * attention_dq / _dk / _dv, attention_backward). Their memory is linear in T: per thread a head's
 * keys and values in the layouts the products read, and tiles of one key block; nothing of shape
 * [T, L] exists. Each computes the bits of its Kernels twin (Kernels.attention, attentionLse,
 * attentionGrads): the key blocks are the reference's ({@link AttnOpts#KEY_BLOCK}, at multiples of
 * it), every chain and fold runs in the reference's order, and lanes run across independent values
 * only (keys for the dot products and the exps, features for the products with v, k, q and g), so
 * masked pairs are never computed and the order of one value's terms never changes.
 *
 * <p>The products: {@link AttentionProducts#dots4} for the scores and dp, {@link #pk4} continuing
 * four rows' chains over a block (the output and dq), {@link AttentionProducts#pqRows} (sgemm's
 * micro-kernel) continuing each key's chains over a tile of rows (dk and dv).
 */
public final class FlashAttention {
    private FlashAttention() {}

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int LANES = FS.length();
    private static final int KB = AttentionProducts.KB, RB = PlanKernels.RB;
    /** Features per panel of {@link #pk4} (AttentionProducts.packRows' panels): two vectors. */
    private static final int PF = AttentionProducts.PQ_FEATS;
    /** Keys per block (the reference's). */
    static final int B = AttnOpts.KEY_BLOCK;
    /** A tile row's stride: one key block and whole vectors from any start in it, an odd number of vectors. */
    static final int PS = AttentionProducts.oddStride(B + LANES);
    /** Query rows per block of the forward: a key block's kᵀ and v stay in L1 while the block's rows pass. */
    static final int QB = 32;
    /** Rows per tile of the backward's dK and dV products (a multiple of RB). */
    static final int TR = 32;

    /** The first key row {@code row} attends, clamped to l (so lo > hi when it attends nothing). */
    private static int lo(PlanKernels.Attn g, int row) { return (int) Math.min(g.lo(row), (long) g.l()); }

    // ---- the forward ------------------------------------------------------------------------------

    /**
     * As Kernels.attention (y σ++[T, H·hd]) and Kernels.attentionLse (lse σ++[T, H]); either may be
     * null. Per (batch, head) in parallel, blocks of QB rows; per block the key blocks its rows
     * attend, in order, and per key block its rows four at a time: the scores' dot products (QK's
     * chains), α (and the softcap), the block maximum, the rescale when it grows, exp(s − m), the
     * sums (sequential folds, four rows side by side), then each row's output chains continued
     * over the block's keys. The output accumulates in y itself.
     */
    public static void forward(PlanKernels.Attn g, float[] qa, float[] ka, float[] va, float[] sinks, float[] y, float[] lse) {
        int rows = g.rows(), l = g.l(), hd = g.hd(), h = g.heads(), kv = g.kv(), grp = g.groups();
        int kStride = kv * hd, qStride = h * hd;
        long cost = (long) g.batch() * h * rows * Math.min(l, g.start() + rows) * hd * (y == null ? 1 : 2);
        Parallel.forEach(g.batch() * h, cost, bh -> {
            int bt = bh / h, hh = bh % h, kBase = bt * l * kStride + (hh / grp) * hd, qBase = bt * rows * qStride + hh * hd;
            Scratch sc = Scratch.get();
            float[] kt = sc.flash[0] = Scratch.atLeast(sc.flash[0], (l + KB - 1) / KB * KB * hd);
            float[] vp = sc.flash[1] = Scratch.atLeast(sc.flash[1], y == null ? 0 : l * hd);
            float[] p = sc.flash[2] = Scratch.atLeast(sc.flash[2], RB * PS);
            float[] m = sc.flashM, z = sc.flashZ;
            boolean[] started = sc.flashStarted;
            AttentionProducts.transposeKeys(ka, kBase, kStride, l, hd, kt);
            if (y != null) AttentionProducts.packRows(va, kBase, kStride, l, hd, vp);
            boolean hasSink = sinks != null;
            float sink = hasSink ? sinks[hh] : 0f;
            for (int r0 = 0; r0 < rows; r0 += QB) {
                int nq = Math.min(QB, rows - r0);
                for (int i = 0; i < nq; i++) {
                    m[i] = hasSink ? sink : Float.NEGATIVE_INFINITY;
                    z[i] = hasSink ? 1f : 0f;
                    started[i] = hasSink;
                    if (y != null) Arrays.fill(y, qBase + (r0 + i) * qStride, qBase + (r0 + i) * qStride + hd, -0.0f);
                }
                int last = g.hi(r0 + nq - 1);                   // lo and hi grow with the row: the block's keys lie in [lo(r0), last]
                for (int b0 = lo(g, r0) / B * B; b0 <= last; b0 += B)
                    for (int i0 = 0; i0 < nq; i0 += RB)
                        forwardRows(g, qa, kt, vp, va, kBase, kStride, qBase, r0, i0, Math.min(RB, nq - i0), b0, y, p, m, z, started, sc);
                for (int i = 0; i < nq; i++) {
                    int t = r0 + i, yOff = qBase + t * qStride;
                    if (y != null) {
                        if (lo(g, t) > g.hi(t)) Arrays.fill(y, yOff, yOff + hd, 0f);
                        else divide(y, yOff, hd, z[i]);
                    }
                    if (lse != null)
                        lse[(bt * rows + t) * h + hh] = started[i] ? m[i] + (float) StrictMath.log(z[i]) : Float.NEGATIVE_INFINITY;
                }
            }
        });
    }

    /**
     * Rows r0 + i0 … r0 + i0 + nr − 1 (state index i0 + i) over the key block from b0: each row's
     * keys [max(lo, b0), min(hi, b0 + B − 1)], as Kernels.onlineRow's block step.
     */
    private static void forwardRows(PlanKernels.Attn g, float[] qa, float[] kt, float[] vp, float[] va, int kBase, int kStride,
                                    int qBase, int r0, int i0, int nr, int b0, float[] y, float[] p,
                                    float[] m, float[] z, boolean[] started, Scratch sc) {
        int l = g.l(), hd = g.hd(), qStride = g.heads() * hd, b1 = Math.min(b0 + B, l) - 1;
        int[] los = sc.blockLo, his = sc.blockHi;
        if (!blockDots(g, qa, qBase + (r0 + i0) * qStride, qStride, kt, r0 + i0, nr, b0, b1, p, 0, los, his)) return;
        float alpha = g.alpha(), cap = g.cap();
        boolean all = nr == RB;
        float[] zs = sc.blockZ;
        int[] before = sc.blockBefore, end = sc.blockEnd;     // each row's keys in the tile: (before, end]
        for (int i = 0; i < nr; i++) {
            int si = i0 + i;
            if (los[i] > his[i]) { all = false; continue; }
            int off = i * PS, a = los[i] - b0, n = his[i] + 1 - los[i];
            float bm = scores(p, off + a, n, alpha, cap);
            if (!started[si]) {
                m[si] = bm;
                started[si] = true;
            } else if (bm > m[si]) {
                float c = KinaMath.exp(m[si] - bm);
                z[si] = z[si] * c;
                if (y != null) scale(y, qBase + (r0 + si) * qStride, hd, c);
                m[si] = bm;
            }
            PlanKernels.expMinusVec(p, off + a, n, m[si]);
            zs[i] = z[si];
            before[i] = a - 1;
            end[i] = his[i] - b0;
        }
        if (!all || !PlanKernels.zFold4(p, PS, before, end, zs))
            for (int i = 0; i < nr; i++) {
                if (los[i] > his[i]) continue;
                float zi = zs[i];
                for (int j = i * PS + before[i] + 1, e = i * PS + end[i] + 1; j < e; j++) zi = zi + p[j];   // a sequential fold in increasing j
                zs[i] = zi;
            }
        for (int i = 0; i < nr; i++) if (los[i] <= his[i]) z[i0 + i] = zs[i];
        if (y != null) rowProducts(p, -b0, nr, los, his, vp, l, va, kBase, kStride, hd, y, qBase + (r0 + i0) * qStride, qStride);
    }

    /**
     * Continues the chains y[yOff + i·yStride + e] over row i's keys [los[i], his[i]] of
     * s[sOff + i·PS + j]·x[j, e], nr ≤ 4 rows (the output of the forward, dq of the backward): four
     * rows on {@link #pk4} when they start at one key and end in order (a block all of them attend,
     * or the causal diagonal), else each row alone (AttentionProducts.pkRow, over x in place).
     */
    private static void rowProducts(float[] s, int sOff, int nr, int[] los, int[] his, float[] xp, int l, float[] x,
                                    int xBase, int xStride, int hd, float[] y, int yOff, int yStride) {
        boolean four = nr == RB;
        for (int i = 0; i < nr && four; i++) four = los[i] == los[0] && los[i] <= his[i] && (i == 0 || his[i - 1] <= his[i]);
        if (four) {
            pk4(s, sOff, los[0], his, xp, l, x, xBase, xStride, hd, y, yOff, yStride);
            return;
        }
        for (int i = 0; i < nr; i++)
            AttentionProducts.pkRow(s, sOff + i * PS, los[i], his[i], x, xBase, xStride, hd, 0, y, yOff + i * yStride, true);
    }

    /**
     * Four rows' chains continued over keys lo … hi[i] (hi nondecreasing), in increasing j: per panel
     * of x (AttentionProducts.packRows: [panel][l][PQ_FEATS], two vectors), eight accumulators, the
     * keys all four rows attend, then those only the last three, two, one attend; features past the
     * last panel each row alone.
     */
    private static void pk4(float[] s, int sOff, int lo, int[] hi, float[] xp, int l, float[] x, int xBase, int xStride, int hd,
                            float[] y, int yOff, int yStride) {
        int panels = hd / PF, y1 = yOff + yStride, y2 = y1 + yStride, y3 = y2 + yStride;
        int s0 = sOff, s1 = s0 + PS, s2 = s1 + PS, s3 = s2 + PS;
        for (int p = 0, e = 0; p < panels; p++, e += PF) {
            int xb = p * l * PF;
            FloatVector a0 = FloatVector.fromArray(FS, y, yOff + e), a1 = FloatVector.fromArray(FS, y, yOff + e + LANES);
            FloatVector b0 = FloatVector.fromArray(FS, y, y1 + e), b1 = FloatVector.fromArray(FS, y, y1 + e + LANES);
            FloatVector c0 = FloatVector.fromArray(FS, y, y2 + e), c1 = FloatVector.fromArray(FS, y, y2 + e + LANES);
            FloatVector d0 = FloatVector.fromArray(FS, y, y3 + e), d1 = FloatVector.fromArray(FS, y, y3 + e + LANES);
            for (int j = lo, end = hi[0] + 1; j < end; j++) {
                int xj = xb + j * PF;
                FloatVector v0 = FloatVector.fromArray(FS, xp, xj), v1 = FloatVector.fromArray(FS, xp, xj + LANES);
                FloatVector w = FloatVector.broadcast(FS, s[s0 + j]);
                a0 = w.fma(v0, a0); a1 = w.fma(v1, a1);
                w = FloatVector.broadcast(FS, s[s1 + j]);
                b0 = w.fma(v0, b0); b1 = w.fma(v1, b1);
                w = FloatVector.broadcast(FS, s[s2 + j]);
                c0 = w.fma(v0, c0); c1 = w.fma(v1, c1);
                w = FloatVector.broadcast(FS, s[s3 + j]);
                d0 = w.fma(v0, d0); d1 = w.fma(v1, d1);
            }
            for (int j = hi[0] + 1, end = hi[1] + 1; j < end; j++) {        // the causal diagonal: rows 1 to 3
                int xj = xb + j * PF;
                FloatVector v0 = FloatVector.fromArray(FS, xp, xj), v1 = FloatVector.fromArray(FS, xp, xj + LANES);
                FloatVector w = FloatVector.broadcast(FS, s[s1 + j]);
                b0 = w.fma(v0, b0); b1 = w.fma(v1, b1);
                w = FloatVector.broadcast(FS, s[s2 + j]);
                c0 = w.fma(v0, c0); c1 = w.fma(v1, c1);
                w = FloatVector.broadcast(FS, s[s3 + j]);
                d0 = w.fma(v0, d0); d1 = w.fma(v1, d1);
            }
            for (int j = hi[1] + 1, end = hi[2] + 1; j < end; j++) {        // rows 2 and 3
                int xj = xb + j * PF;
                FloatVector v0 = FloatVector.fromArray(FS, xp, xj), v1 = FloatVector.fromArray(FS, xp, xj + LANES);
                FloatVector w = FloatVector.broadcast(FS, s[s2 + j]);
                c0 = w.fma(v0, c0); c1 = w.fma(v1, c1);
                w = FloatVector.broadcast(FS, s[s3 + j]);
                d0 = w.fma(v0, d0); d1 = w.fma(v1, d1);
            }
            for (int j = hi[2] + 1, end = hi[3] + 1; j < end; j++) {        // row 3
                int xj = xb + j * PF;
                FloatVector w = FloatVector.broadcast(FS, s[s3 + j]);
                d0 = w.fma(FloatVector.fromArray(FS, xp, xj), d0); d1 = w.fma(FloatVector.fromArray(FS, xp, xj + LANES), d1);
            }
            a0.intoArray(y, yOff + e); a1.intoArray(y, yOff + e + LANES);
            b0.intoArray(y, y1 + e); b1.intoArray(y, y1 + e + LANES);
            c0.intoArray(y, y2 + e); c1.intoArray(y, y2 + e + LANES);
            d0.intoArray(y, y3 + e); d1.intoArray(y, y3 + e + LANES);
        }
        if (panels * PF < hd)
            for (int i = 0; i < RB; i++)
                AttentionProducts.pkRow(s, sOff + i * PS, lo, hi[i], x, xBase, xStride, hd, panels * PF, y, yOff + i * yStride, true);
    }

    /**
     * The scores s = dot·α (softcap C: C·tanh(s / C)) of p[from, from + n), in place (whole vectors;
     * lanes past n are scratch), and their maximum (Math.max, as a sequential fold gives it).
     */
    private static float scores(float[] p, int from, int n, float alpha, float cap) {
        if (cap <= 0) return PlanKernels.scaleMax(p, from, n, alpha);
        float bm = 0f;
        for (int j = from, end = from + n; j < end; j++) {
            float s = cap * (float) StrictMath.tanh(p[j] * alpha / cap);
            p[j] = s;
            bm = j == from ? s : Math.max(bm, s);
        }
        return bm;
    }

    /** y[off + e] = y[off + e] · c for e &lt; n. */
    private static void scale(float[] y, int off, int n, float c) {
        int e = 0;
        for (; e + LANES <= n; e += LANES) FloatVector.fromArray(FS, y, off + e).mul(c).intoArray(y, off + e);
        for (; e < n; e++) y[off + e] = y[off + e] * c;
    }

    /** y[off + e] = y[off + e] / z for e &lt; n. */
    private static void divide(float[] y, int off, int n, float z) {
        int e = 0;
        for (; e + LANES <= n; e += LANES) FloatVector.fromArray(FS, y, off + e).div(z).intoArray(y, off + e);
        for (; e < n; e++) y[off + e] = y[off + e] / z;
    }

    // ---- the backward -----------------------------------------------------------------------------

    /**
     * As Kernels.attentionGrads: dq (σ++[T, H·hd]), dk, dv (σ++[L, KV·hd]), any of them null (not
     * wanted). Per (batch, kv head) in parallel; per key block in order, per head of the group, per
     * tile of TR rows, per four rows: the scores (QK's chains), p = exp(s − lse), dp = g·v (QK's
     * chains on v), ds = p (dp − d) and du, and dq's chains continued over the block's keys in dq
     * itself; then per tile dv's and dk's chains continued over its rows, in per-thread [L, hd]
     * accumulators (so each key's terms come head by head, then row by row, as the reference's).
     * Last, α and the +0.0 of a chain with no term.
     */
    public static void backward(PlanKernels.Attn g, float[] qa, float[] ka, float[] va, float[] ga, float[] lse, float[] dd,
                         float[] dq, float[] dk, float[] dv) {
        int rows = g.rows(), l = g.l(), hd = g.hd(), h = g.heads(), kv = g.kv(), grp = g.groups();
        int kStride = kv * hd, qStride = h * hd;
        boolean ds = dq != null || dk != null;
        int[][] kr = AttentionProducts.keyRows(g);                     // the calling thread's: the workers only read it
        int[] tLo = kr[0], tHi = kr[1];
        long cost = (long) g.batch() * h * rows * Math.min(l, g.start() + rows) * hd * ((dq != null ? 2 : 0) + (dk != null ? 1 : 0) + (dv != null ? 1 : 0) + 1);
        Parallel.forEach(g.batch() * kv, cost, bc -> {
            int bt = bc / kv, c = bc % kv, kBase = bt * l * kStride + c * hd;
            Scratch sc = Scratch.get();
            float[][] f = sc.flash;
            int keysT = (l + KB - 1) / KB * KB * hd;
            float[] kt = f[0] = Scratch.atLeast(f[0], keysT), vt = f[1] = Scratch.atLeast(f[1], ds ? keysT : 0);
            float[] pt = f[2] = Scratch.atLeast(f[2], TR * PS), ut = f[3] = Scratch.atLeast(f[3], ds ? TR * PS : 0);
            float[] dpt = f[4] = Scratch.atLeast(f[4], ds ? RB * PS : 0), kp = f[5] = Scratch.atLeast(f[5], dq != null ? l * hd : 0);
            float[] accK = f[6] = Scratch.atLeast(f[6], dk != null ? l * hd : 0), accV = f[7] = Scratch.atLeast(f[7], dv != null ? l * hd : 0);
            float[] xp = f[8] = Scratch.atLeast(f[8], TR * hd);
            int[] bLo = sc.flashKeyLo, bHi = sc.flashKeyHi;
            AttentionProducts.transposeKeys(ka, kBase, kStride, l, hd, kt);
            if (ds) AttentionProducts.transposeKeys(va, kBase, kStride, l, hd, vt);
            if (dq != null) AttentionProducts.packRows(ka, kBase, kStride, l, hd, kp);
            if (dk != null) Arrays.fill(accK, 0, l * hd, -0.0f);
            if (dv != null) Arrays.fill(accV, 0, l * hd, -0.0f);
            if (dq != null)
                for (int hh = c * grp; hh < (c + 1) * grp; hh++)
                    for (int t = 0, off = bt * rows * qStride + hh * hd; t < rows; t++, off += qStride) Arrays.fill(dq, off, off + hd, -0.0f);
            for (int b0 = 0; b0 < l; b0 += B) {
                int b1 = Math.min(b0 + B, l) - 1, nk = b1 + 1 - b0, tFirst = tLo[b0], tLast = tHi[b1];
                if (tFirst > tLast) continue;                           // no row attends a key of the block
                for (int j = 0; j < nk; j++) { bLo[j] = tLo[b0 + j]; bHi[j] = tHi[b0 + j]; }
                for (int hh = c * grp; hh < (c + 1) * grp; hh++) {
                    int qBase = bt * rows * qStride + hh * hd;
                    for (int t0 = tFirst; t0 <= tLast; t0 += TR) {
                        int t1 = Math.min(tLast + 1, t0 + TR);
                        for (int r = t0; r < t1; r += RB)
                            backwardRows(g, qa, ga, lse, dd, kt, vt, kp, ka, kBase, kStride, bt, hh, qBase, r, Math.min(RB, t1 - r), t0,
                                    b0, pt, ut, dpt, dq, ds, sc);
                        if (dv != null) {
                            AttentionProducts.packRows(ga, qBase + t0 * qStride, qStride, t1 - t0, hd, xp);
                            AttentionProducts.pqRows(pt, PS, nk, -t0 * PS, xp, t0, t1, bLo, bHi, hd, accV, b0 * hd, hd);
                        }
                        if (dk != null) {
                            AttentionProducts.packRows(qa, qBase + t0 * qStride, qStride, t1 - t0, hd, xp);
                            AttentionProducts.pqRows(ut, PS, nk, -t0 * PS, xp, t0, t1, bLo, bHi, hd, accK, b0 * hd, hd);
                        }
                    }
                }
            }
            float alpha = g.alpha();
            for (int j = 0; j < l; j++) {                               // α, and +0.0 for a key no row attends
                int off = kBase + j * kStride;
                boolean none = tLo[j] > tHi[j];
                for (int e = 0; e < hd; e++) {
                    if (dk != null) dk[off + e] = none ? 0f : alpha * accK[j * hd + e];
                    if (dv != null) dv[off + e] = none ? 0f : accV[j * hd + e];
                }
            }
            if (dq != null)
                for (int hh = c * grp; hh < (c + 1) * grp; hh++)
                    for (int t = 0, off = bt * rows * qStride + hh * hd; t < rows; t++, off += qStride) {
                        boolean none = lo(g, t) > g.hi(t);
                        for (int e = 0; e < hd; e++) dq[off + e] = none ? 0f : alpha * dq[off + e];
                    }
        });
    }

    /**
     * Rows r … r + nr − 1 of head hh over the key block from b0: p into pt and (ds) du into ut, at
     * tile row t − t0 and column j − b0 for each attended key j; dq's chains continued over them.
     */
    private static void backwardRows(PlanKernels.Attn g, float[] qa, float[] ga, float[] lse, float[] dd, float[] kt, float[] vt,
                                     float[] kp, float[] ka, int kBase, int kStride, int bt, int hh, int qBase, int r, int nr, int t0,
                                     int b0, float[] pt, float[] ut, float[] dpt, float[] dq, boolean ds, Scratch sc) {
        int l = g.l(), hd = g.hd(), h = g.heads(), qStride = h * hd, b1 = Math.min(b0 + B, l) - 1;
        int[] los = sc.blockLo, his = sc.blockHi;
        int tile = (r - t0) * PS;
        if (!blockDots(g, qa, qBase + r * qStride, qStride, kt, r, nr, b0, b1, pt, tile, los, his)) return;
        if (ds) blockDots(g, ga, qBase + r * qStride, qStride, vt, r, nr, b0, b1, dpt, 0, los, his);
        float alpha = g.alpha(), cap = g.cap();
        for (int i = 0; i < nr; i++) {
            if (los[i] > his[i]) continue;
            int t = r + i, a = los[i] - b0, n = his[i] + 1 - los[i], po = tile + i * PS + a, dpo = i * PS + a;
            float m = lse[(bt * g.rows() + t) * h + hh], dt = dd[(bt * g.rows() + t) * h + hh];
            if (cap <= 0) {
                PlanKernels.scaleVec(pt, po, n, alpha);
                PlanKernels.expMinusVec(pt, po, n, m);
                if (ds) diffProducts(pt, po, dpt, dpo, dt, ut, n);
            } else {
                for (int j = 0; j < n; j++) {
                    float th = (float) StrictMath.tanh(pt[po + j] * alpha / cap);
                    float pj = KinaMath.exp(cap * th - m);
                    pt[po + j] = pj;
                    if (ds) ut[po + j] = pj * (dpt[dpo + j] - dt) * (1f - th * th);
                }
            }
        }
        if (dq != null) rowProducts(ut, tile - b0, nr, los, his, kp, l, ka, kBase, kStride, hd, dq, qBase + r * qStride, qStride);
    }

    /**
     * The dot products of rows row0 … row0 + nr − 1 (row i's a at aOff + i·aStride) with the keys of
     * the block [b0, b1] that each attends: los[i], his[i] get row i's keys (absolute; lo > hi when
     * none), p[pOff + i·PS + j − b0] its chain for each of them (QK's; lanes past them are scratch).
     * False when no row attends a key of the block.
     */
    private static boolean blockDots(PlanKernels.Attn g, float[] a, int aOff, int aStride, float[] kt, int row0, int nr,
                                       int b0, int b1, float[] p, int pOff, int[] los, int[] his) {
        int jlo = Integer.MAX_VALUE, jhi = -1;
        for (int i = 0; i < nr; i++) {
            los[i] = Math.max(lo(g, row0 + i), b0);
            his[i] = Math.min(g.hi(row0 + i), b1);
            if (los[i] <= his[i]) { jlo = Math.min(jlo, los[i]); jhi = Math.max(jhi, his[i]); }
        }
        if (jhi < 0) return false;
        int j0 = jlo / KB * KB, hd = g.hd();
        if (nr == RB) AttentionProducts.dots4(a, aOff, aStride, kt, hd, j0, jhi + 1, p, pOff - b0, PS);
        else for (int i = 0; i < nr; i++) AttentionProducts.dots1(a, aOff + i * aStride, kt, hd, j0, jhi + 1, p, pOff + i * PS - b0);
        return true;
    }

    /** ds[o + j] = p[o + j]·(dp[dpo + j] − d) for whole vectors covering j &lt; n. */
    private static void diffProducts(float[] p, int o, float[] dp, int dpo, float d, float[] ds, int n) {
        for (int j = 0; j < n; j += LANES)
            FloatVector.fromArray(FS, p, o + j).mul(FloatVector.fromArray(FS, dp, dpo + j).sub(d)).intoArray(ds, o + j);
    }
}
