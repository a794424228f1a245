package kina.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import kina.ir.DType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The compiled loops of fused groups ({@link FusedCode}) against the chunked pass of {@link Fusion}
 * they replace: bit for bit on random groups (every instruction, every kind of leaf, lane tails,
 * NaN, ±0, ±∞ and subnormal values, an output sharing an input's buffer); in plans against the
 * interpreter: kina.plan.FusedCodePlanTest. Raw bits everywhere except between two NaNs: when both
 * operands of an add or a multiply are NaN, which payload survives depends on the JIT tier (C2
 * commutes the operands; a cold and a hot run of the chunked pass differ the same way), and a new
 * class starts cold.
 */
class FusedCodeTest {
    private final int saved = FusedCode.minElements, savedLimit = FusedCode.cacheLimit;

    @AfterEach void restore() {
        FusedCode.minElements = saved;
        FusedCode.cacheLimit = savedLimit;
        Parallel.setThreads(Runtime.getRuntime().availableProcessors());
    }

    private static final float[] SPECIAL = {Float.NaN, 0f, -0f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY,
        Float.MIN_VALUE, -Float.MIN_NORMAL / 3, 1f, -1f, Float.MAX_VALUE};

    private static float value(Random r) {
        return r.nextInt(12) == 0 ? SPECIAL[r.nextInt(SPECIAL.length)] : (r.nextFloat() - 0.5f) * 8;
    }

    /** A random valid group over slots: inputs 0…, outputs after, leaf sources after those. */
    private static Fusion.Group randomGroup(Random r, int n) {
        int nIn = 1 + r.nextInt(3), nOut = 1 + r.nextInt(2), nLeaf = r.nextInt(4), temps = 1 + r.nextInt(3);
        Fusion.Leaf[] leaves = new Fusion.Leaf[nLeaf];
        int slot = nIn + nOut;
        for (int j = 0; j < nLeaf; j++) {
            int inner, mid;
            switch (r.nextInt(4)) {
                case 0 -> { inner = 1; mid = 1; }                                            // scalar
                case 1 -> { inner = Fusion.FL * (1 + r.nextInt(4)); mid = 1 + r.nextInt(9); } // one value per vector
                case 2 -> { inner = 1; mid = Fusion.FL * (1 + r.nextInt(6)); }               // a contiguous run
                default -> { inner = 1 + r.nextInt(5); mid = 2 + r.nextInt(9); }             // often unsupported
            }
            leaves[j] = new Fusion.Leaf(slot++, inner, mid);
        }
        int regs = nLeaf + temps;
        List<Integer> defined = new ArrayList<>();
        for (int j = 0; j < nLeaf; j++) defined.add(j);
        for (int j = 0; j < nIn; j++) defined.add(regs + j);
        List<int[]> code = new ArrayList<>();
        int len = 1 + r.nextInt(14);
        Fusion.Code[] ops = Fusion.Code.values();
        for (int k = 0; k < len + nOut; k++) {
            int dst = k >= len ? regs + nIn + (k - len) : r.nextBoolean() ? nLeaf + r.nextInt(temps) : regs + nIn + r.nextInt(nOut);
            int a = defined.get(r.nextInt(defined.size())), b = defined.get(r.nextInt(defined.size()));
            code.add(new int[] {ops[r.nextInt(ops.length)].ordinal(), dst, a, b});
            if (!defined.contains(dst)) defined.add(dst);
        }
        int[] inputs = new int[nIn], outs = new int[nOut];
        for (int j = 0; j < nIn; j++) inputs[j] = j;
        for (int j = 0; j < nOut; j++) outs[j] = nIn + j;
        return new Fusion.Group(DType.F32, n, code.size(), regs, inputs, outs, leaves, code.toArray(int[][]::new));
    }

    private static Object[] buffers(Fusion.Group g, Random r, boolean alias) {
        int nIn = g.inputs().length, nOut = g.outs().length;
        Object[] buf = new Object[nIn + nOut + g.leaves().length];
        for (int j = 0; j < nIn + nOut; j++) {
            float[] f = new float[g.n()];
            for (int i = 0; i < f.length; i++) f[i] = value(r);
            buf[j] = f;
        }
        if (alias) buf[nIn] = buf[0];                     // output 0 written over input 0, as a carried value updated in place is
        for (int j = 0; j < g.leaves().length; j++) {
            float[] f = new float[g.leaves()[j].mid()];
            for (int i = 0; i < f.length; i++) f[i] = value(r);
            buf[nIn + nOut + j] = f;
        }
        return buf;
    }

    /**
     * Runs g on the chunked pass, then with compiled loops allowed (which it may or may not get), on the
     * same random buffers, and asserts the same bits; true when g got a compiled loop.
     */
    private static boolean runsCompiledAsChunked(Fusion.Group g, long seed, boolean alias, String what) {
        FusedCode.minElements = Integer.MAX_VALUE;
        Object[] want = buffers(g, new Random(seed), alias);
        Fusion.bind(g, want).run();
        FusedCode.minElements = 0;
        boolean compiled = FusedCode.of(g) != null;
        Object[] got = buffers(g, new Random(seed), alias);
        Fusion.bind(g, got).run();
        for (int j = 0; j < want.length; j++) {
            float[] w = (float[]) want[j], o = (float[]) got[j];
            for (int i = 0; i < w.length; i++)
                if (!(Float.isNaN(w[i]) && Float.isNaN(o[i])))   // which NaN survives a + b or a · b of two NaNs is the JIT's choice (C2 commutes them), in either pass
                    assertThat(Float.floatToRawIntBits(o[i])).as("%s, buffer %d, element %d of %d", what, j, i, w.length)
                            .isEqualTo(Float.floatToRawIntBits(w[i]));
        }
        return compiled;
    }

    @Test void randomGroupsEqualTheChunkedPassBitForBit() {
        int compiled = 0;
        for (int t = 0; t < 400; t++) {
            Random r = new Random(t);
            int n = 1 + r.nextInt(t % 4 == 0 ? 5000 : 200);
            Fusion.Group g = randomGroup(r, n);
            boolean alias = r.nextInt(4) == 0;
            long seed = r.nextLong();
            if (runsCompiledAsChunked(g, seed, alias, "group " + t)) compiled++;
        }
        assertThat(compiled).as("groups run by a compiled loop").isGreaterThan(200);
    }

    @Test void theClassCacheStaysWithinItsLimitAndGroupsStillRunRight() {
        FusedCode.clearCache();                           // whatever earlier tests left
        FusedCode.cacheLimit = 8;
        int compiled = 0;
        for (int t = 0; t < 60; t++) {
            Random r = new Random(1000 + t);
            Fusion.Group g = randomGroup(r, 1 + r.nextInt(300));
            long seed = r.nextLong();
            if (runsCompiledAsChunked(g, seed, false, "group " + t)) compiled++;
            assertThat(FusedCode.cached()).as("after group %d", t).isLessThanOrEqualTo(8);
        }
        assertThat(compiled).as("groups compiled past the limit").isGreaterThan(16);
    }

    @Test void leavesReadByWholeVectorsCompileAndOthersDoNot() {
        FusedCode.minElements = 0;
        int[][] code = {{Fusion.Code.ADD.ordinal(), 2, 0, 1}};
        Fusion.Group perVector = new Fusion.Group(DType.F32, 64, 1, 1, new int[] {0}, new int[] {1},
                new Fusion.Leaf[] {new Fusion.Leaf(2, 2 * Fusion.FL, 3)}, code);
        Fusion.Group run = new Fusion.Group(DType.F32, 64, 1, 1, new int[] {0}, new int[] {1},
                new Fusion.Leaf[] {new Fusion.Leaf(2, 1, 4 * Fusion.FL)}, code);
        Fusion.Group odd = new Fusion.Group(DType.F32, 64, 1, 1, new int[] {0}, new int[] {1},
                new Fusion.Leaf[] {new Fusion.Leaf(2, 3, 5)}, code);
        assertThat(FusedCode.of(perVector)).isNotNull();
        assertThat(FusedCode.of(run)).isNotNull();
        assertThat(FusedCode.of(odd)).isNull();
        assertThat(FusedCode.of(new Fusion.Group(DType.F64, 64, 1, 1, new int[] {0}, new int[] {1},
                new Fusion.Leaf[] {new Fusion.Leaf(2, 1, 1)}, code))).isNull();
        FusedCode.minElements = 65;
        assertThat(FusedCode.of(run)).as("below minElements").isNull();
    }
}
