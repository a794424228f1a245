package kina.plan;

import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;
import kina.eval.Parallel;

/**
 * The plan's F32 kernels of {@link kina.ir.Instr.AttentionProduct} (QK, PK, PQ): the same bits as
 * Kernels.attentionProduct. Every output is one fma chain from −0.0 over the attended pairs in the
 * instruction's order; lanes run across independent outputs (keys for QK, features e for PK and
 * PQ), and a lanewise fma is Math.fma per lane, so the chains are the oracle's. Pairs that are not
 * attended are never computed: a causal product costs half of a matmul's work.
 */
final class AttentionProducts {
    private AttentionProducts() {}

    private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
    private static final int LANES = FS.length();
    /** Output elements per block of {@link #pkPair} / {@link #pqPair}: four vectors. */
    private static final int EB = 4 * LANES;

    /**
     * Per-thread scratch: QK [0] = 4 score rows, [1] = bᵀ of one head; PK [1] = x's kv head; PQ [0] = one
     * head's s, [1] = its x. Copies are contiguous with strides off multiples of 512 bytes: walking a
     * head in place (rows H·hd or l floats apart, often 512 bytes) kept only a few L1 sets busy.
     */
    private static final ThreadLocal<float[][]> SCRATCH = ThreadLocal.withInitial(() -> new float[2][0]);

    /** The scratch arrays, at least n0 and n1 long. */
    private static float[][] scratch(int n0, int n1) {
        float[][] sc = SCRATCH.get();
        if (sc[0].length < n0) sc[0] = new float[n0];
        if (sc[1].length < n1) sc[1] = new float[n1];
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
    static void qk(PlanKernels.Attn g, float[] a, float[] b, float[] y) {
        int rows = g.rows(), l = g.l(), hd = g.hd(), h = g.heads(), kv = g.kv(), grp = g.groups();
        int bStride = kv * hd, aStride = h * hd, ks = oddStride(l), ps = oddStride(l + LANES);
        long cost = (long) g.batch() * h * rows * l * hd / 2;
        Parallel.forEach(g.batch() * h, cost, bh -> {
            int bt = bh / h, hh = bh % h;
            float[][] sc = scratch(4 * ps, hd * ks);
            float[] p = sc[0], bt_ = sc[1];
            PlanKernels.transposeKeys(b, bt * l * bStride + (hh / grp) * hd, bStride, l, hd, bt_, ks);
            for (int r0 = 0; r0 < rows; r0 += 4) {
                int nr = Math.min(4, rows - r0), jlo = Integer.MAX_VALUE, jhi = -1;
                for (int i = 0; i < nr; i++) {
                    int rl = lo(g, r0 + i), rh = g.hi(r0 + i);
                    if (rl <= rh) { jlo = Math.min(jlo, rl); jhi = Math.max(jhi, rh); }
                }
                int aOff = (bt * rows + r0) * aStride + hh * hd;
                if (hd > 0 && jhi >= 0) {
                    int j0 = jlo / LANES * LANES;
                    if (nr == 4) dots4(a, aOff, aStride, bt_, ks, hd, j0, jhi + 1, p, ps);
                    else for (int i = 0; i < nr; i++) dots1(a, aOff + i * aStride, bt_, ks, hd, j0, jhi + 1, p, i * ps);
                }
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

    /**
     * Four rows' chains (row i's a at aOff + i·aStride) against the keys of whole vectors from j0
     * (a multiple of LANES) past j1: p[i·ps + j] = fma over e from −0.0. Lanes past the last key
     * read bᵀ's padding: callers ignore them.
     */
    static void dots4(float[] a, int aOff, int aStride, float[] kt, int ks, int hd, int j0, int j1, float[] p, int ps) {
        int q0 = aOff, q1 = q0 + aStride, q2 = q1 + aStride, q3 = q2 + aStride;
        FloatVector z = FloatVector.broadcast(FS, -0.0f);
        int j = j0;
        for (; j + LANES < j1; j += 2 * LANES) {
            FloatVector a0 = z, a1 = z, b0 = z, b1 = z, c0 = z, c1 = z, d0 = z, d1 = z;
            for (int e = 0; e < hd; e++) {
                int r = e * ks + j;
                FloatVector k0 = FloatVector.fromArray(FS, kt, r), k1 = FloatVector.fromArray(FS, kt, r + LANES);
                FloatVector x = FloatVector.broadcast(FS, a[q0 + e]);
                a0 = x.fma(k0, a0); a1 = x.fma(k1, a1);
                x = FloatVector.broadcast(FS, a[q1 + e]);
                b0 = x.fma(k0, b0); b1 = x.fma(k1, b1);
                x = FloatVector.broadcast(FS, a[q2 + e]);
                c0 = x.fma(k0, c0); c1 = x.fma(k1, c1);
                x = FloatVector.broadcast(FS, a[q3 + e]);
                d0 = x.fma(k0, d0); d1 = x.fma(k1, d1);
            }
            a0.intoArray(p, j); a1.intoArray(p, j + LANES);
            b0.intoArray(p, ps + j); b1.intoArray(p, ps + j + LANES);
            c0.intoArray(p, 2 * ps + j); c1.intoArray(p, 2 * ps + j + LANES);
            d0.intoArray(p, 3 * ps + j); d1.intoArray(p, 3 * ps + j + LANES);
        }
        if (j < j1) {
            FloatVector a0 = z, b0 = z, c0 = z, d0 = z;
            for (int e = 0; e < hd; e++) {
                FloatVector k0 = FloatVector.fromArray(FS, kt, e * ks + j);
                a0 = FloatVector.broadcast(FS, a[q0 + e]).fma(k0, a0);
                b0 = FloatVector.broadcast(FS, a[q1 + e]).fma(k0, b0);
                c0 = FloatVector.broadcast(FS, a[q2 + e]).fma(k0, c0);
                d0 = FloatVector.broadcast(FS, a[q3 + e]).fma(k0, d0);
            }
            a0.intoArray(p, j);
            b0.intoArray(p, ps + j);
            c0.intoArray(p, 2 * ps + j);
            d0.intoArray(p, 3 * ps + j);
        }
    }

    /** {@link #dots4} for one row, written at p[pOff + j]. */
    static void dots1(float[] a, int aOff, float[] kt, int ks, int hd, int j0, int j1, float[] p, int pOff) {
        FloatVector z = FloatVector.broadcast(FS, -0.0f);
        for (int j = j0; j < j1; j += LANES) {
            FloatVector acc = z;
            for (int e = 0; e < hd; e++) acc = FloatVector.broadcast(FS, a[aOff + e]).fma(FloatVector.fromArray(FS, kt, e * ks + j), acc);
            acc.intoArray(p, pOff + j);
        }
    }

    // ---- PK: y[t, h, e] = Σ_j s[h, t, j]·x[j, kv(h), e] ------------------------------------------

    /** PK: s [batch, H, rows, l], x [batch, l, KV·hd] → y [batch, rows, H·hd]; +0.0 for a row with no key. */
    static void pk(PlanKernels.Attn g, float[] s, float[] x, float[] y) {
        int rows = g.rows(), l = g.l(), hd = g.hd(), h = g.heads(), kv = g.kv(), grp = g.groups();
        int xStride = kv * hd, yStride = h * hd;
        long cost = (long) g.batch() * h * rows * l * hd / 2;
        Parallel.forEach(g.batch() * h, cost, bh -> {
            int bt = bh / h, hh = bh % h;
            int xBase = bt * l * xStride + (hh / grp) * hd, sBase = (bt * h + hh) * rows * l, yBase = bt * rows * yStride + hh * hd;
            float[] xp = scratch(0, l * hd)[1];                         // x's kv head, [l][hd] contiguous
            for (int j = 0; j < l; j++) System.arraycopy(x, xBase + j * xStride, xp, j * hd, hd);
            int t = 0;
            for (; t + 1 < rows; t += 2)
                pkPair(s, sBase + t * l, sBase + (t + 1) * l, lo(g, t), g.hi(t), lo(g, t + 1), g.hi(t + 1),
                        xp, 0, hd, hd, y, yBase + t * yStride, yBase + (t + 1) * yStride);
            if (t < rows) pkRow(s, sBase + t * l, lo(g, t), g.hi(t), xp, 0, hd, hd, 0, y, yBase + t * yStride);
        });
    }

    /**
     * Two rows of {@link #pkRow} in one pass over x where their key ranges meet: eight chains side
     * by side (A's alone, B's alone, both, then A's and B's tails), each in increasing j.
     */
    static void pkPair(float[] s, int sA, int sB, int loA, int hiA, int loB, int hiB, float[] x, int xBase, int xStride, int hd,
                       float[] y, int yA, int yB) {
        int e = 0;
        int top = Math.max(loA, loB), bot = Math.min(hiA, hiB);
        if (loA <= hiA && loB <= hiB && top <= bot) {
            FloatVector z = FloatVector.broadcast(FS, -0.0f);
            for (; e + EB <= hd; e += EB) {
                int xb = xBase + e;
                FloatVector a0 = z, a1 = z, a2 = z, a3 = z, b0 = z, b1 = z, b2 = z, b3 = z;
                for (int j = loA; j < top; j++) {
                    int xj = xb + j * xStride;
                    FloatVector w = FloatVector.broadcast(FS, s[sA + j]);
                    a0 = w.fma(FloatVector.fromArray(FS, x, xj), a0);
                    a1 = w.fma(FloatVector.fromArray(FS, x, xj + LANES), a1);
                    a2 = w.fma(FloatVector.fromArray(FS, x, xj + 2 * LANES), a2);
                    a3 = w.fma(FloatVector.fromArray(FS, x, xj + 3 * LANES), a3);
                }
                for (int j = loB; j < top; j++) {
                    int xj = xb + j * xStride;
                    FloatVector w = FloatVector.broadcast(FS, s[sB + j]);
                    b0 = w.fma(FloatVector.fromArray(FS, x, xj), b0);
                    b1 = w.fma(FloatVector.fromArray(FS, x, xj + LANES), b1);
                    b2 = w.fma(FloatVector.fromArray(FS, x, xj + 2 * LANES), b2);
                    b3 = w.fma(FloatVector.fromArray(FS, x, xj + 3 * LANES), b3);
                }
                for (int j = top; j <= bot; j++) {
                    int xj = xb + j * xStride;
                    FloatVector v0 = FloatVector.fromArray(FS, x, xj), v1 = FloatVector.fromArray(FS, x, xj + LANES),
                            v2 = FloatVector.fromArray(FS, x, xj + 2 * LANES), v3 = FloatVector.fromArray(FS, x, xj + 3 * LANES);
                    FloatVector wa = FloatVector.broadcast(FS, s[sA + j]), wb = FloatVector.broadcast(FS, s[sB + j]);
                    a0 = wa.fma(v0, a0); a1 = wa.fma(v1, a1); a2 = wa.fma(v2, a2); a3 = wa.fma(v3, a3);
                    b0 = wb.fma(v0, b0); b1 = wb.fma(v1, b1); b2 = wb.fma(v2, b2); b3 = wb.fma(v3, b3);
                }
                for (int j = bot + 1; j <= hiA; j++) {
                    int xj = xb + j * xStride;
                    FloatVector w = FloatVector.broadcast(FS, s[sA + j]);
                    a0 = w.fma(FloatVector.fromArray(FS, x, xj), a0);
                    a1 = w.fma(FloatVector.fromArray(FS, x, xj + LANES), a1);
                    a2 = w.fma(FloatVector.fromArray(FS, x, xj + 2 * LANES), a2);
                    a3 = w.fma(FloatVector.fromArray(FS, x, xj + 3 * LANES), a3);
                }
                for (int j = bot + 1; j <= hiB; j++) {
                    int xj = xb + j * xStride;
                    FloatVector w = FloatVector.broadcast(FS, s[sB + j]);
                    b0 = w.fma(FloatVector.fromArray(FS, x, xj), b0);
                    b1 = w.fma(FloatVector.fromArray(FS, x, xj + LANES), b1);
                    b2 = w.fma(FloatVector.fromArray(FS, x, xj + 2 * LANES), b2);
                    b3 = w.fma(FloatVector.fromArray(FS, x, xj + 3 * LANES), b3);
                }
                a0.intoArray(y, yA + e); a1.intoArray(y, yA + e + LANES); a2.intoArray(y, yA + e + 2 * LANES); a3.intoArray(y, yA + e + 3 * LANES);
                b0.intoArray(y, yB + e); b1.intoArray(y, yB + e + LANES); b2.intoArray(y, yB + e + 2 * LANES); b3.intoArray(y, yB + e + 3 * LANES);
            }
        }
        if (e < hd) {
            pkRow(s, sA, loA, hiA, x, xBase, xStride, hd, e, y, yA);
            pkRow(s, sB, loB, hiB, x, xBase, xStride, hd, e, y, yB);
        }
    }

    /** y[yOff + e] = fma chain over j in [lo, hi] of s[sOff + j]·x[xBase + j·xStride + e], e in [e0, hd); +0.0 when lo > hi. */
    static void pkRow(float[] s, int sOff, int lo, int hi, float[] x, int xBase, int xStride, int hd, int e0, float[] y, int yOff) {
        if (lo > hi) { Arrays.fill(y, yOff + e0, yOff + hd, 0f); return; }
        FloatVector z = FloatVector.broadcast(FS, -0.0f);
        int e = e0;
        for (; e + LANES <= hd; e += LANES) {
            FloatVector acc = z;
            for (int j = lo; j <= hi; j++)
                acc = FloatVector.broadcast(FS, s[sOff + j]).fma(FloatVector.fromArray(FS, x, xBase + j * xStride + e), acc);
            acc.intoArray(y, yOff + e);
        }
        for (; e < hd; e++) {
            float acc = -0.0f;
            for (int j = lo; j <= hi; j++) acc = Math.fma(s[sOff + j], x[xBase + j * xStride + e], acc);
            y[yOff + e] = acc;
        }
    }

    // ---- PQ: y[j, c, e] = Σ_{h of c} Σ_{t attending j} s[h, t, j]·x[t, h, e] ----------------------

    /**
     * PQ: s [batch, H, rows, l], x [batch, rows, H·hd] → y [batch, l, KV·hd]; +0.0 for a key no row
     * attends. Per (batch, kv head): one head at a time (its s and x copied contiguous), every key's
     * chains continued through y from the previous head (stored and reloaded unchanged).
     */
    static void pq(PlanKernels.Attn g, float[] s, float[] x, float[] y) {
        int rows = g.rows(), l = g.l(), hd = g.hd(), h = g.heads(), kv = g.kv(), grp = g.groups();
        int xStride = h * hd, yStride = kv * hd, ls = oddStride(l);
        // The rows attending key j form [tLo[j], tHi[j]]: hi(t) and lo(t) are nondecreasing in t.
        int[] tLo = new int[l], tHi = new int[l];
        for (int j = 0, a = 0, b = -1; j < l; j++) {
            while (a < rows && g.hi(a) < j) a++;
            while (b + 1 < rows && lo(g, b + 1) <= j) b++;
            tLo[j] = a;
            tHi[j] = b;
        }
        long cost = (long) g.batch() * h * rows * l * hd / 2;
        Parallel.forEach(g.batch() * kv, cost, bc -> {
            int bt = bc / kv, c = bc % kv, yBase = bt * l * yStride + c * hd;
            float[][] sc = scratch(rows * ls, rows * hd);
            float[] sp = sc[0], xp = sc[1];
            for (int hh = c * grp; hh < (c + 1) * grp; hh++) {
                boolean first = hh == c * grp;
                for (int t = 0; t < rows; t++) {
                    System.arraycopy(s, ((bt * h + hh) * rows + t) * l, sp, t * ls, l);
                    System.arraycopy(x, (bt * rows + t) * xStride + hh * hd, xp, t * hd, hd);
                }
                int j = 0;
                for (; j + 1 < l; j += 2)
                    pqPair(sp, ls, xp, hd, j, tLo[j], tHi[j], tLo[j + 1], tHi[j + 1], first, y, yBase + j * yStride, yBase + (j + 1) * yStride);
                if (j < l) pqKey(sp, ls, xp, hd, j, tLo[j], tHi[j], 0, first, y, yBase + j * yStride);
            }
            for (int j = 0; j < l; j++)                                 // no term: +0.0, not the chain's −0.0
                if (tLo[j] > tHi[j] || grp == 0) Arrays.fill(y, yBase + j * yStride, yBase + j * yStride + hd, 0f);
        });
    }

    /**
     * Keys j (rows [loA, hiA]) and j + 1 (rows [loB, hiB]) of one head in one pass over the rows where
     * their ranges meet: eight chains side by side, each in increasing t, started at −0.0 ({@code first})
     * or continued from y. s at sp[t·ls + j], x at xp[t·hd + e].
     */
    static void pqPair(float[] sp, int ls, float[] xp, int hd, int j, int loA, int hiA, int loB, int hiB, boolean first,
                       float[] y, int yA, int yB) {
        int top = Math.max(loA, loB), bot = Math.min(hiA, hiB), e = 0;
        if (loA <= hiA && loB <= hiB && top <= bot) {
            FloatVector z = FloatVector.broadcast(FS, -0.0f);
            for (; e + EB <= hd; e += EB) {
                FloatVector a0, a1, a2, a3, b0, b1, b2, b3;
                if (first) { a0 = z; a1 = z; a2 = z; a3 = z; b0 = z; b1 = z; b2 = z; b3 = z; }
                else {
                    a0 = FloatVector.fromArray(FS, y, yA + e); a1 = FloatVector.fromArray(FS, y, yA + e + LANES);
                    a2 = FloatVector.fromArray(FS, y, yA + e + 2 * LANES); a3 = FloatVector.fromArray(FS, y, yA + e + 3 * LANES);
                    b0 = FloatVector.fromArray(FS, y, yB + e); b1 = FloatVector.fromArray(FS, y, yB + e + LANES);
                    b2 = FloatVector.fromArray(FS, y, yB + e + 2 * LANES); b3 = FloatVector.fromArray(FS, y, yB + e + 3 * LANES);
                }
                for (int t = loA; t < top; t++) {
                    int xt = t * hd + e;
                    FloatVector w = FloatVector.broadcast(FS, sp[t * ls + j]);
                    a0 = w.fma(FloatVector.fromArray(FS, xp, xt), a0);
                    a1 = w.fma(FloatVector.fromArray(FS, xp, xt + LANES), a1);
                    a2 = w.fma(FloatVector.fromArray(FS, xp, xt + 2 * LANES), a2);
                    a3 = w.fma(FloatVector.fromArray(FS, xp, xt + 3 * LANES), a3);
                }
                for (int t = loB; t < top; t++) {
                    int xt = t * hd + e;
                    FloatVector w = FloatVector.broadcast(FS, sp[t * ls + j + 1]);
                    b0 = w.fma(FloatVector.fromArray(FS, xp, xt), b0);
                    b1 = w.fma(FloatVector.fromArray(FS, xp, xt + LANES), b1);
                    b2 = w.fma(FloatVector.fromArray(FS, xp, xt + 2 * LANES), b2);
                    b3 = w.fma(FloatVector.fromArray(FS, xp, xt + 3 * LANES), b3);
                }
                for (int t = top; t <= bot; t++) {
                    int xt = t * hd + e, st = t * ls + j;
                    FloatVector v0 = FloatVector.fromArray(FS, xp, xt), v1 = FloatVector.fromArray(FS, xp, xt + LANES),
                            v2 = FloatVector.fromArray(FS, xp, xt + 2 * LANES), v3 = FloatVector.fromArray(FS, xp, xt + 3 * LANES);
                    FloatVector wa = FloatVector.broadcast(FS, sp[st]), wb = FloatVector.broadcast(FS, sp[st + 1]);
                    a0 = wa.fma(v0, a0); a1 = wa.fma(v1, a1); a2 = wa.fma(v2, a2); a3 = wa.fma(v3, a3);
                    b0 = wb.fma(v0, b0); b1 = wb.fma(v1, b1); b2 = wb.fma(v2, b2); b3 = wb.fma(v3, b3);
                }
                for (int t = bot + 1; t <= hiA; t++) {
                    int xt = t * hd + e;
                    FloatVector w = FloatVector.broadcast(FS, sp[t * ls + j]);
                    a0 = w.fma(FloatVector.fromArray(FS, xp, xt), a0);
                    a1 = w.fma(FloatVector.fromArray(FS, xp, xt + LANES), a1);
                    a2 = w.fma(FloatVector.fromArray(FS, xp, xt + 2 * LANES), a2);
                    a3 = w.fma(FloatVector.fromArray(FS, xp, xt + 3 * LANES), a3);
                }
                for (int t = bot + 1; t <= hiB; t++) {
                    int xt = t * hd + e;
                    FloatVector w = FloatVector.broadcast(FS, sp[t * ls + j + 1]);
                    b0 = w.fma(FloatVector.fromArray(FS, xp, xt), b0);
                    b1 = w.fma(FloatVector.fromArray(FS, xp, xt + LANES), b1);
                    b2 = w.fma(FloatVector.fromArray(FS, xp, xt + 2 * LANES), b2);
                    b3 = w.fma(FloatVector.fromArray(FS, xp, xt + 3 * LANES), b3);
                }
                a0.intoArray(y, yA + e); a1.intoArray(y, yA + e + LANES); a2.intoArray(y, yA + e + 2 * LANES); a3.intoArray(y, yA + e + 3 * LANES);
                b0.intoArray(y, yB + e); b1.intoArray(y, yB + e + LANES); b2.intoArray(y, yB + e + 2 * LANES); b3.intoArray(y, yB + e + 3 * LANES);
            }
        }
        if (e < hd) {
            pqKey(sp, ls, xp, hd, j, loA, hiA, e, first, y, yA);
            pqKey(sp, ls, xp, hd, j + 1, loB, hiB, e, first, y, yB);
        }
    }

    /** One key's chains of one head for e in [e0, hd) over rows [lo, hi], from −0.0 ({@code first}) or continued from y. */
    static void pqKey(float[] sp, int ls, float[] xp, int hd, int j, int lo, int hi, int e0, boolean first, float[] y, int yOff) {
        FloatVector z = FloatVector.broadcast(FS, -0.0f);
        int e = e0;
        for (; e + LANES <= hd; e += LANES) {
            FloatVector acc = first ? z : FloatVector.fromArray(FS, y, yOff + e);
            for (int t = lo; t <= hi; t++) acc = FloatVector.broadcast(FS, sp[t * ls + j]).fma(FloatVector.fromArray(FS, xp, t * hd + e), acc);
            acc.intoArray(y, yOff + e);
        }
        for (; e < hd; e++) {
            float acc = first ? -0.0f : y[yOff + e];
            for (int t = lo; t <= hi; t++) acc = Math.fma(sp[t * ls + j], xp[t * hd + e], acc);
            y[yOff + e] = acc;
        }
    }
}
