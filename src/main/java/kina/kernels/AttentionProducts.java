package kina.kernels;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The plan's F32 kernels of {@link kina.ir.Instr.AttentionProduct} (QK, PK, PQ), and the helpers the
 * attention kernels share with them ({@link #transposeKeys}, {@link #dots4}, {@link #pkRow}, {@link #pqRows}): the same bits as
 * Kernels.attentionProduct. Every output is one fma chain from −0.0 over the attended pairs in the
 * instruction's order; lanes run across independent outputs (keys for QK, features e for PK and
 * PQ), and a lanewise fma is Math.fma per lane, so the chains are the oracle's. Pairs that are not
 * attended are never computed: a causal product costs half of a matmul's work.
 *
 * <p>The pair kernel {@link #pkPair} writes each row's own segments (before the shared range, after
 * it) out in full, row A's then row B's: a helper taking the accumulators would get them boxed (C2
 * passes a vector to a method it did not inline as an object), and one that stored and reloaded
 * them through memory per segment ran slower at T = 128. PQ runs on
 * sgemm's micro-kernel ({@link #pq}).
 */
public final class AttentionProducts {
    private AttentionProducts() {}

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int LANES = FS.length();
    /** Output elements per block of {@link #pkPair}: four vectors. */
    static final int EB = 4 * LANES;
    /** Keys per block of {@link #dots4}: two vectors. */
    static final int KB = 2 * LANES;

    /**
     * This thread's scratch ({@link Scratch#products}), [0] to [3] at least n0 … n3 floats long: QK [0]
     * = 4 score rows, [1] = bᵀ of one head; PK and PQ [1] = x's head. Copies are contiguous, in blocks of a constant
     * width: C2 drops the range checks of an index j·constant + offset, not of j·stride, and walking
     * a head in place (rows H·hd floats apart, often 512 bytes) kept only a few L1 sets busy.
     */
    private static float[][] scratch(int n0, int n1, int n2, int n3) {
        float[][] sc = Scratch.get().products;
        sc[0] = Scratch.atLeast(sc[0], n0);
        sc[1] = Scratch.atLeast(sc[1], n1);
        sc[2] = Scratch.atLeast(sc[2], n2);
        sc[3] = Scratch.atLeast(sc[3], n3);
        return sc;
    }

    /** A row stride of at least n floats, whole vectors, and an odd number of vectors (so not a multiple of 512 bytes). */
    static int oddStride(int n) {
        int v = (n + LANES - 1) / LANES;
        return (v | 1) * LANES;
    }

    /** First attended key of row t, clamped to l (so lo > hi when nothing is attended). */
    private static int lo(PlanKernels.Attn g, int t) { return (int) Math.min(g.lo(t), (long) g.l()); }

    // ---- QK: y[h, t, j] = Σ_e a[t, h, e]·b[j, kv(h), e] ------------------------------------------

    /** QK: a [batch, rows, H·hd], b [batch, l, KV·hd] → y [batch, H, rows, l], +0.0 where not attended. */
    public static void qk(PlanKernels.Attn g, float[] a, float[] b, float[] y) {
        int rows = g.rows(), l = g.l(), hd = g.hd(), h = g.heads(), kv = g.kv(), grp = g.groups();
        int bStride = kv * hd, aStride = h * hd, kBlocks = (l + KB - 1) / KB, ps = oddStride(l + KB);
        long cost = (long) g.batch() * h * rows * l * hd / 2;
        Parallel.forEach(g.batch() * h, cost, bh -> {
            int bt = bh / h, hh = bh % h;
            float[][] sc = scratch(4 * ps, kBlocks * hd * KB, 0, 0);
            float[] p = sc[0], kt = sc[1];
            transposeKeys(b, bt * l * bStride + (hh / grp) * hd, bStride, l, hd, kt);
            for (int r0 = 0; r0 < rows; r0 += 4) {
                int nr = Math.min(4, rows - r0);
                blockDots(g, r0, nr, a, (bt * rows + r0) * aStride + hh * hd, aStride, kt, p, ps);
                for (int i = 0; i < nr; i++) {
                    int yOff = ((bt * h + hh) * rows + r0 + i) * l, rl = lo(g, r0 + i), rh = g.hi(r0 + i);
                    if (hd == 0 || rl > rh) { Arrays.fill(y, yOff, yOff + l, 0f); continue; }
                    Arrays.fill(y, yOff, yOff + rl, 0f);
                    System.arraycopy(p, i * ps + rl, y, yOff + rl, rh + 1 - rl);
                    Arrays.fill(y, yOff + rh + 1, yOff + l, 0f);
                }
            }
        });
    }

    /** kt[(j / KB · hd + e) · KB + j % KB] = k[kBase + j·kStride + e]: one head's keys transposed in blocks of KB keys. */
    static void transposeKeys(float[] k, int kBase, int kStride, int l, int hd, float[] kt) {
        int full = l / KB * KB;
        for (int j0 = 0; j0 < full; j0 += KB) {         // whole blocks: kt written in order, KB rows read side by side
            for (int e = 0, dst = j0 * hd, src = kBase + j0 * kStride; e < hd; e++, dst += KB, src++)
                for (int c = 0, s = src; c < KB; c++, s += kStride) kt[dst + c] = k[s];
        }
        for (int j = full; j < l; j++) {
            int kOff = kBase + j * kStride, base = j / KB * hd * KB + j % KB;
            for (int e = 0; e < hd; e++) kt[base + e * KB] = k[kOff + e];
        }
    }

    /**
     * Four rows' chains (row i's a at aOff + i·aStride) against the keys of whole vectors from j0
     * (a multiple of KB) past j1: p[pOff + i·ps + j] = fma over e from −0.0. Lanes past the last key
     * read kt's padding: callers ignore them.
     */
    static void dots4(float[] a, int aOff, int aStride, float[] kt, int hd, int j0, int j1, float[] p, int pOff, int ps) {
        int s2 = 2 * aStride, s3 = 3 * aStride, aEnd = aOff + hd;
        FloatVector z = FloatVector.broadcast(FS, -0.0f);
        int j = j0;
        for (; j + LANES < j1; j += KB) {
            FloatVector a0 = z, a1 = z, b0 = z, b1 = z, c0 = z, c1 = z, d0 = z, d1 = z;
            // Row 0's index is the loop variable and the other rows sit constant strides after it: fewer
            // live values than four row offsets and e.
            for (int ai = aOff, bi = j / KB * hd * KB; ai < aEnd; ai++, bi += KB) {
                FloatVector k0 = FloatVector.fromArray(FS, kt, bi), k1 = FloatVector.fromArray(FS, kt, bi + LANES);
                FloatVector x = FloatVector.broadcast(FS, a[ai]);
                a0 = x.fma(k0, a0); a1 = x.fma(k1, a1);
                x = FloatVector.broadcast(FS, a[ai + aStride]);
                b0 = x.fma(k0, b0); b1 = x.fma(k1, b1);
                x = FloatVector.broadcast(FS, a[ai + s2]);
                c0 = x.fma(k0, c0); c1 = x.fma(k1, c1);
                x = FloatVector.broadcast(FS, a[ai + s3]);
                d0 = x.fma(k0, d0); d1 = x.fma(k1, d1);
            }
            int o = pOff + j;
            a0.intoArray(p, o); a1.intoArray(p, o + LANES);
            b0.intoArray(p, ps + o); b1.intoArray(p, ps + o + LANES);
            c0.intoArray(p, 2 * ps + o); c1.intoArray(p, 2 * ps + o + LANES);
            d0.intoArray(p, 3 * ps + o); d1.intoArray(p, 3 * ps + o + LANES);
        }
        if (j < j1) {                                   // the first half of a block
            FloatVector a0 = z, b0 = z, c0 = z, d0 = z;
            for (int ai = aOff, bi = j / KB * hd * KB; ai < aEnd; ai++, bi += KB) {
                FloatVector k0 = FloatVector.fromArray(FS, kt, bi);
                a0 = FloatVector.broadcast(FS, a[ai]).fma(k0, a0);
                b0 = FloatVector.broadcast(FS, a[ai + aStride]).fma(k0, b0);
                c0 = FloatVector.broadcast(FS, a[ai + s2]).fma(k0, c0);
                d0 = FloatVector.broadcast(FS, a[ai + s3]).fma(k0, d0);
            }
            a0.intoArray(p, pOff + j);
            b0.intoArray(p, pOff + ps + j);
            c0.intoArray(p, pOff + 2 * ps + j);
            d0.intoArray(p, pOff + 3 * ps + j);
        }
    }

    /** {@link #dots4} for one row, written at p[pOff + j]; j0 a multiple of LANES. */
    static void dots1(float[] a, int aOff, float[] kt, int hd, int j0, int j1, float[] p, int pOff) {
        FloatVector z = FloatVector.broadcast(FS, -0.0f);
        for (int j = j0; j < j1; j += LANES) {
            int kb = j / KB * hd * KB + j % KB;
            FloatVector acc = z;
            for (int e = 0; e < hd; e++) acc = FloatVector.broadcast(FS, a[aOff + e]).fma(FloatVector.fromArray(FS, kt, kb + e * KB), acc);
            acc.intoArray(p, pOff + j);
        }
    }

    /**
     * The QK dot products of rows r0 … r0 + nr − 1 (nr ≤ 4; row i's a at aOff + i·aStride) against a
     * head's kᵀ ({@link #transposeKeys}) over the union of their attended keys in whole blocks:
     * p[i·ps + j] holds row i's chain for every j in [lo(i), hi(i)] (other lanes are scratch); +0.0
     * throughout the nr rows when hd = 0 (a width the checker refuses; kept for the kernels' direct
     * callers). Four rows run as {@link #dots4}, fewer as {@link #dots1}; nothing is written when no
     * row attends a key.
     */
    static void blockDots(PlanKernels.Attn g, int r0, int nr, float[] a, int aOff, int aStride, float[] kt, float[] p, int ps) {
        int jlo = Integer.MAX_VALUE, jhi = -1, hd = g.hd();
        for (int i = 0; i < nr; i++) {
            int rl = lo(g, r0 + i), rh = g.hi(r0 + i);
            if (rl <= rh) { jlo = Math.min(jlo, rl); jhi = Math.max(jhi, rh); }
        }
        if (jhi < 0) return;
        int j0 = jlo / KB * KB;
        if (hd == 0) Arrays.fill(p, 0, nr * ps, 0f);
        else if (nr == 4) dots4(a, aOff, aStride, kt, hd, j0, jhi + 1, p, 0, ps);
        else for (int i = 0; i < nr; i++) dots1(a, aOff + i * aStride, kt, hd, j0, jhi + 1, p, i * ps);
    }

    /** n rows of one head (row i's hd features at x[off + i·stride]) into xp as {@link #pqRows} reads them: [panel][n][PQ_FEATS], then [n][tail]. */
    static void packRows(float[] x, int off, int stride, int n, int hd, float[] xp) {
        int panels = hd / PQ_FEATS, e0 = panels * PQ_FEATS;
        headBlocks(x, off, stride, n, PQ_FEATS, panels, xp);
        if (e0 < hd) for (int t = 0; t < n; t++) System.arraycopy(x, off + t * stride + e0, xp, e0 * n + t * (hd - e0), hd - e0);
    }

    /**
     * The rows attending key j form [keyRows[0][j], keyRows[1][j]] for j &lt; l (empty when the first
     * exceeds the second): hi(t) and lo(t) are nondecreasing in t. The arrays are the calling thread's
     * scratch (at least l long), valid until its next call.
     */
    static int[][] keyRows(PlanKernels.Attn g) {
        int rows = g.rows(), l = g.l();
        int[][] kr = Scratch.get().keyRows;             // the calling thread's: its workers only read them
        int[] tLo = kr[0] = Scratch.atLeast(kr[0], l), tHi = kr[1] = Scratch.atLeast(kr[1], l);
        for (int j = 0, a = 0, b = -1; j < l; j++) {
            while (a < rows && g.hi(a) < j) a++;
            while (b + 1 < rows && lo(g, b + 1) <= j) b++;
            tLo[j] = a;
            tHi[j] = b;
        }
        return kr;
    }

    // ---- PK: y[t, h, e] = Σ_j s[h, t, j]·x[j, kv(h), e] ------------------------------------------

    /** PK: s [batch, H, rows, l], x [batch, l, KV·hd] → y [batch, rows, H·hd]; +0.0 for a row with no key. */
    public static void pk(PlanKernels.Attn g, float[] s, float[] x, float[] y) {
        int rows = g.rows(), l = g.l(), hd = g.hd(), h = g.heads(), kv = g.kv(), grp = g.groups();
        int xStride = kv * hd, yStride = h * hd;
        long cost = (long) g.batch() * h * rows * l * hd / 2;
        Parallel.forEach(g.batch() * h, cost, bh -> {
            int bt = bh / h, hh = bh % h;
            int xBase = bt * l * xStride + (hh / grp) * hd, sBase = (bt * h + hh) * rows * l, yBase = bt * rows * yStride + hh * hd;
            int blocks = hd / EB;
            float[] xp = scratch(0, blocks * l * EB, 0, 0)[1];
            headBlocks(x, xBase, xStride, l, EB, blocks, xp);
            int t = 0;
            for (; t + 1 < rows; t += 2)
                pkPair(s, sBase + t * l, sBase + (t + 1) * l, lo(g, t), g.hi(t), lo(g, t + 1), g.hi(t + 1),
                        xp, l, blocks, x, xBase, xStride, hd, y, yBase + t * yStride, yBase + (t + 1) * yStride);
            if (t < rows) pkRow(s, sBase + t * l, lo(g, t), g.hi(t), x, xBase, xStride, hd, 0, y, yBase + t * yStride, false);
        });
    }

    /**
     * xp[(b·n + j)·w + e] = x[base + j·stride + b·w + e] for b &lt; blocks, j &lt; n, e &lt; w: one head of n
     * rows in blocks of w features ([block][n][w]; PK reads blocks of EB, PQ panels of PQ_FEATS: whole vectors).
     */
    static void headBlocks(float[] x, int base, int stride, int n, int w, int blocks, float[] xp) {
        // Whole vectors (w is EB or PQ_FEATS, a multiple of the lanes): an arraycopy call per 16 or 32 floats
        // cost ~2 ns a float (JFR, medium's attention backward; AttentionAB: pk 3–8 %, the backward 1–12 % faster).
        for (int b = 0; b < blocks; b++)
            for (int j = 0, src = base + b * w, dst = b * n * w; j < n; j++, src += stride, dst += w)
                for (int e = 0; e < w; e += LANES) FloatVector.fromArray(FS, x, src + e).intoArray(xp, dst + e);
    }

    /**
     * Two rows of {@link #pkRow} in one pass over x where their key ranges meet: eight chains side
     * by side (A's alone, B's alone, both, then A's and B's tails), each in increasing j.
     */
    static void pkPair(float[] s, int sA, int sB, int loA, int hiA, int loB, int hiB, float[] xp, int l, int blocks,
                       float[] x, int xBase, int xStride, int hd, float[] y, int yA, int yB) {
        int e = 0;
        int top = Math.max(loA, loB), bot = Math.min(hiA, hiB);
        if (loA <= hiA && loB <= hiB && top <= bot) {
            FloatVector z = FloatVector.broadcast(FS, -0.0f);
            for (int eb = 0; eb < blocks; eb++, e += EB) {
                int xb = eb * l * EB;
                FloatVector a0 = z, a1 = z, a2 = z, a3 = z, b0 = z, b1 = z, b2 = z, b3 = z;
                for (int j = loA; j < top; j++) {
                    int xj = xb + j * EB;
                    FloatVector w = FloatVector.broadcast(FS, s[sA + j]);
                    a0 = w.fma(FloatVector.fromArray(FS, xp, xj), a0);
                    a1 = w.fma(FloatVector.fromArray(FS, xp, xj + LANES), a1);
                    a2 = w.fma(FloatVector.fromArray(FS, xp, xj + 2 * LANES), a2);
                    a3 = w.fma(FloatVector.fromArray(FS, xp, xj + 3 * LANES), a3);
                }
                for (int j = loB; j < top; j++) {
                    int xj = xb + j * EB;
                    FloatVector w = FloatVector.broadcast(FS, s[sB + j]);
                    b0 = w.fma(FloatVector.fromArray(FS, xp, xj), b0);
                    b1 = w.fma(FloatVector.fromArray(FS, xp, xj + LANES), b1);
                    b2 = w.fma(FloatVector.fromArray(FS, xp, xj + 2 * LANES), b2);
                    b3 = w.fma(FloatVector.fromArray(FS, xp, xj + 3 * LANES), b3);
                }
                // The x index is the loop variable and row B's weight sits a constant distance after row A's: fewer
                // live values, so C2 keeps the loop's bases in registers (hsdis: with j as the variable it reloaded
                // xp's base from the stack every key).
                int dBA = sB - sA;
                for (int xj = xb + top * EB, sa = sA + top, xEnd = xb + (bot + 1) * EB; xj < xEnd; xj += EB, sa++) {
                    FloatVector v0 = FloatVector.fromArray(FS, xp, xj), v1 = FloatVector.fromArray(FS, xp, xj + LANES),
                            v2 = FloatVector.fromArray(FS, xp, xj + 2 * LANES), v3 = FloatVector.fromArray(FS, xp, xj + 3 * LANES);
                    FloatVector wa = FloatVector.broadcast(FS, s[sa]), wb = FloatVector.broadcast(FS, s[sa + dBA]);
                    a0 = wa.fma(v0, a0); a1 = wa.fma(v1, a1); a2 = wa.fma(v2, a2); a3 = wa.fma(v3, a3);
                    b0 = wb.fma(v0, b0); b1 = wb.fma(v1, b1); b2 = wb.fma(v2, b2); b3 = wb.fma(v3, b3);
                }
                for (int j = bot + 1, endA = hiA + 1; j < endA; j++) {
                    int xj = xb + j * EB;
                    FloatVector w = FloatVector.broadcast(FS, s[sA + j]);
                    a0 = w.fma(FloatVector.fromArray(FS, xp, xj), a0);
                    a1 = w.fma(FloatVector.fromArray(FS, xp, xj + LANES), a1);
                    a2 = w.fma(FloatVector.fromArray(FS, xp, xj + 2 * LANES), a2);
                    a3 = w.fma(FloatVector.fromArray(FS, xp, xj + 3 * LANES), a3);
                }
                for (int j = bot + 1, endB = hiB + 1; j < endB; j++) {
                    int xj = xb + j * EB;
                    FloatVector w = FloatVector.broadcast(FS, s[sB + j]);
                    b0 = w.fma(FloatVector.fromArray(FS, xp, xj), b0);
                    b1 = w.fma(FloatVector.fromArray(FS, xp, xj + LANES), b1);
                    b2 = w.fma(FloatVector.fromArray(FS, xp, xj + 2 * LANES), b2);
                    b3 = w.fma(FloatVector.fromArray(FS, xp, xj + 3 * LANES), b3);
                }
                a0.intoArray(y, yA + e); a1.intoArray(y, yA + e + LANES); a2.intoArray(y, yA + e + 2 * LANES); a3.intoArray(y, yA + e + 3 * LANES);
                b0.intoArray(y, yB + e); b1.intoArray(y, yB + e + LANES); b2.intoArray(y, yB + e + 2 * LANES); b3.intoArray(y, yB + e + 3 * LANES);
            }
        }
        if (e < hd) {
            pkRow(s, sA, loA, hiA, x, xBase, xStride, hd, e, y, yA, false);
            pkRow(s, sB, loB, hiB, x, xBase, xStride, hd, e, y, yB, false);
        }
    }

    /**
     * y[yOff + e] = fma chain over j in [lo, hi] of s[sOff + j]·x[xBase + j·xStride + e], e in [e0, hd);
     * +0.0 when lo > hi. With {@code cont} each chain continues from y (and an empty range leaves y).
     */
    static void pkRow(float[] s, int sOff, int lo, int hi, float[] x, int xBase, int xStride, int hd, int e0, float[] y, int yOff,
                      boolean cont) {
        if (lo > hi) { if (!cont) Arrays.fill(y, yOff + e0, yOff + hd, 0f); return; }
        FloatVector z = FloatVector.broadcast(FS, -0.0f);
        int e = e0;
        for (; e + LANES <= hd; e += LANES) {
            FloatVector acc = cont ? FloatVector.fromArray(FS, y, yOff + e) : z;
            for (int j = lo, endHi = hi + 1; j < endHi; j++)
                acc = FloatVector.broadcast(FS, s[sOff + j]).fma(FloatVector.fromArray(FS, x, xBase + j * xStride + e), acc);
            acc.intoArray(y, yOff + e);
        }
        for (; e < hd; e++) {
            float acc = cont ? y[yOff + e] : -0.0f;
            for (int j = lo, endHi = hi + 1; j < endHi; j++) acc = Math.fma(s[sOff + j], x[xBase + j * xStride + e], acc);
            y[yOff + e] = acc;
        }
    }

    // ---- PQ: y[j, c, e] = Σ_{h of c} Σ_{t attending j} s[h, t, j]·x[t, h, e] ----------------------

    /** Keys per tile of {@link #pq} (rows of sgemm's register tile) and features per tile (two vectors). */
    static final int PQ_KEYS = Matmul.Tile.ROWS, PQ_FEATS = Matmul.Tile.COLS;

    /**
     * PQ: s [batch, H, rows, l], x [batch, rows, H·hd] → y [batch, l, KV·hd]; +0.0 for a key no row
     * attends. It is sgemm's TN product y = sᵀ·x per head, run on sgemm's micro-kernel
     * (Matmul.Tile.transA): a tile of PQ_KEYS keys reads their s values side by side in row t in
     * place, and x's head is copied in panels of PQ_FEATS features. Per (batch, kv head), one head at
     * a time, every key's chains started at −0.0 in y and continued there head after head; per tile, the rows only
     * some of its keys attend (before and after the range all attend) run as single-key chains
     * ({@link #pqChain}) before and after the tile's joint range, so each chain stays in increasing t.
     * Keys of a partial last tile (l not a multiple of PQ_KEYS), and of a tile with no row all its keys
     * attend, run whole as single-key chains; features past the last whole panel run in
     * {@link #pqTail} (x's tail copied after the panels).
     */
    public static void pq(PlanKernels.Attn g, float[] s, float[] x, float[] y) {
        int rows = g.rows(), l = g.l(), hd = g.hd(), h = g.heads(), kv = g.kv(), grp = g.groups();
        int xStride = h * hd, yStride = kv * hd;
        int[][] kr = keyRows(g);
        int[] tLo = kr[0], tHi = kr[1];
        long cost = (long) g.batch() * h * rows * l * hd / 2;
        Parallel.forEach(g.batch() * kv, cost, bc -> {
            int bt = bc / kv, c = bc % kv, yBase = bt * l * yStride + c * hd;
            float[] xp = scratch(0, rows * hd, 0, 0)[1];              // one head's x: [panel][rows][PQ_FEATS], then [rows][tail]
            for (int j = 0; j < l; j++) Arrays.fill(y, yBase + j * yStride, yBase + j * yStride + hd, -0.0f);   // every chain's start
            for (int hh = c * grp; hh < (c + 1) * grp; hh++) {
                int col = (bt * h + hh) * rows * l;             // s read in place: a copy cost more than its strided reads (T = 256)
                packRows(x, bt * rows * xStride + hh * hd, xStride, rows, hd, xp);
                pqRows(s, l, l, col, xp, 0, rows, tLo, tHi, hd, y, yBase, yStride);
            }
            for (int j = 0; j < l; j++)                                 // no term: +0.0, not the chain's −0.0
                if (tLo[j] > tHi[j] || grp == 0) Arrays.fill(y, yBase + j * yStride, yBase + j * yStride + hd, 0f);
        });
    }

    /**
     * One head's PQ chains over rows [t0, t1): key j &lt; keys (s's rows ls apart) takes its rows [max(tLo[j], t0), min(tHi[j], t1 − 1)],
     * in increasing t, continuing the chains in y (key j's row at yBase + j·yStride); s at s[col + t·ls + j]; x's rows t0 … t1 − 1 copied in xp as [panel][t1 − t0][PQ_FEATS],
     * then [t1 − t0][tail]. Per tile of PQ_KEYS keys the rows all of them attend run on sgemm's
     * micro-kernel (a last tile of four keys on {@link #pq4}), the others as single-key chains before and after.
     */
    static void pqRows(float[] s, int ls, int keys, int col, float[] xp, int t0, int t1, int[] tLo, int[] tHi, int hd,
                       float[] y, int yBase, int yStride) {
        int l = keys, r = t1 - t0, panels = hd / PQ_FEATS, e0 = panels * PQ_FEATS, w = hd - e0;
        for (int p = 0; p < panels; p++) {                 // a panel of x (rows × PQ_FEATS) stays in L1 over all keys
            int xo = p * r * PQ_FEATS - t0 * PQ_FEATS, yo = yBase + p * PQ_FEATS;     // row t at xo + t·PQ_FEATS
            for (int j0 = 0; j0 < l; ) {
                int nk = l - j0 >= PQ_KEYS ? PQ_KEYS : l - j0 >= 4 ? 4 : 1, top = 0, bot = Integer.MAX_VALUE;
                for (int j = j0; j < j0 + nk; j++) { top = Math.max(top, Math.max(tLo[j], t0)); bot = Math.min(bot, Math.min(tHi[j], t1 - 1)); }
                if (nk == 1 || top > bot) {                 // a tile needs every key to attend all of [top, bot]
                    for (int j = j0; j < j0 + nk; j++) {
                        int lo = Math.max(tLo[j], t0), hi = Math.min(tHi[j], t1 - 1);
                        if (lo <= hi) pqChain(s, ls, col, xp, xo, j, lo, hi, y, yo + j * yStride);
                    }
                    j0 += nk;
                    continue;
                }
                for (int j = j0; j < j0 + nk; j++)
                    if (Math.max(tLo[j], t0) < top) pqChain(s, ls, col, xp, xo, j, Math.max(tLo[j], t0), top - 1, y, yo + j * yStride);
                if (nk == PQ_KEYS)
                    Matmul.Tile.transA(s, col + top * ls + j0, ls, xp, xo + top * PQ_FEATS, bot + 1 - top, y, yo + j0 * yStride, yStride);
                else pq4(s, ls, col, xp, xo, j0, top, bot, y, yo + j0 * yStride, yStride);
                for (int j = j0; j < j0 + nk; j++) {
                    int hi = Math.min(tHi[j], t1 - 1);
                    if (bot < hi) pqChain(s, ls, col, xp, xo, j, bot + 1, hi, y, yo + j * yStride);
                }
                j0 += nk;
            }
        }
        if (w > 0)
            for (int j = 0; j < l; j++) {
                int lo = Math.max(tLo[j], t0), hi = Math.min(tHi[j], t1 - 1);
                if (lo <= hi) pqTail(s, ls, col, xp, e0 * r - t0 * w, w, e0, j, lo, hi, y, yBase + j * yStride);
            }
    }

    /**
     * Key j's chains over one panel of PQ_FEATS features (x's panel at xp[xo + t·PQ_FEATS]), rows [lo, hi]
     * (none when lo > hi), s at s[col + t·ls + j]: continued from y at yOff and stored there.
     */
    static void pqChain(float[] s, int ls, int col, float[] xp, int xo, int j, int lo, int hi, float[] y, int yOff) {
        FloatVector a0 = FloatVector.fromArray(FS, y, yOff), a1 = FloatVector.fromArray(FS, y, yOff + LANES);
        for (int t = lo, end = hi + 1; t < end; t++) {
            int xt = xo + t * PQ_FEATS;
            FloatVector w = FloatVector.broadcast(FS, s[col + t * ls + j]);
            a0 = w.fma(FloatVector.fromArray(FS, xp, xt), a0);
            a1 = w.fma(FloatVector.fromArray(FS, xp, xt + LANES), a1);
        }
        a0.intoArray(y, yOff);
        a1.intoArray(y, yOff + LANES);
    }

    /**
     * Keys j0 … j0 + 3's chains over one panel (as {@link #pqChain} each), rows [lo, hi] that all
     * four attend, side by side: the four keys a block of keys leaves after its tiles of PQ_KEYS.
     */
    static void pq4(float[] s, int ls, int col, float[] xp, int xo, int j0, int lo, int hi, float[] y, int yOff, int yStride) {
        int o1 = yOff + yStride, o2 = o1 + yStride, o3 = o2 + yStride;
        FloatVector a0 = FloatVector.fromArray(FS, y, yOff), a1 = FloatVector.fromArray(FS, y, yOff + LANES);
        FloatVector b0 = FloatVector.fromArray(FS, y, o1), b1 = FloatVector.fromArray(FS, y, o1 + LANES);
        FloatVector c0 = FloatVector.fromArray(FS, y, o2), c1 = FloatVector.fromArray(FS, y, o2 + LANES);
        FloatVector d0 = FloatVector.fromArray(FS, y, o3), d1 = FloatVector.fromArray(FS, y, o3 + LANES);
        for (int t = lo, end = hi + 1; t < end; t++) {
            int xt = xo + t * PQ_FEATS, st = col + t * ls + j0;
            FloatVector x0 = FloatVector.fromArray(FS, xp, xt), x1 = FloatVector.fromArray(FS, xp, xt + LANES);
            FloatVector w = FloatVector.broadcast(FS, s[st]);
            a0 = w.fma(x0, a0); a1 = w.fma(x1, a1);
            w = FloatVector.broadcast(FS, s[st + 1]);
            b0 = w.fma(x0, b0); b1 = w.fma(x1, b1);
            w = FloatVector.broadcast(FS, s[st + 2]);
            c0 = w.fma(x0, c0); c1 = w.fma(x1, c1);
            w = FloatVector.broadcast(FS, s[st + 3]);
            d0 = w.fma(x0, d0); d1 = w.fma(x1, d1);
        }
        a0.intoArray(y, yOff); a1.intoArray(y, yOff + LANES);
        b0.intoArray(y, o1); b1.intoArray(y, o1 + LANES);
        c0.intoArray(y, o2); c1.intoArray(y, o2 + LANES);
        d0.intoArray(y, o3); d1.intoArray(y, o3 + LANES);
    }

    /**
     * Key j's chains over the tail features e in [e0, e0 + w) (x's tail at xp[xo + t·w]),
     * rows [lo, hi], continued from y (key j's row at yOff).
     */
    static void pqTail(float[] s, int ls, int col, float[] xp, int xo, int w, int e0, int j, int lo, int hi, float[] y, int yOff) {
        int e = 0;
        for (; e + LANES <= w; e += LANES) {
            FloatVector acc = FloatVector.fromArray(FS, y, yOff + e0 + e);
            for (int t = lo, end = hi + 1; t < end; t++)
                acc = FloatVector.broadcast(FS, s[col + t * ls + j]).fma(FloatVector.fromArray(FS, xp, xo + t * w + e), acc);
            acc.intoArray(y, yOff + e0 + e);
        }
        for (; e < w; e++) {
            float acc = y[yOff + e0 + e];
            for (int t = lo, end = hi + 1; t < end; t++) acc = Math.fma(s[col + t * ls + j], xp[xo + t * w + e], acc);
            y[yOff + e0 + e] = acc;
        }
    }
}
