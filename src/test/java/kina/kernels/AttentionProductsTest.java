package kina.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.SplittableRandom;
import kina.eval.AttentionKernels;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Instr.AttentionProduct.Form;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The plan's AttentionProduct kernels (QK, PK, PQ) against AttentionKernels.attentionProduct, raw bits, over
 * random geometries: blocks of 4 rows and their tails, key pairs whose row ranges do not meet, rows
 * and keys with nothing attended, GQA, widths below, at and past a block of four vectors, windows,
 * chunks and start > 0, at 1 and 2 threads. Entries of s at pairs that are not attended are NaN: no
 * output may read them.
 */
class AttentionProductsTest {

    @AfterAll static void restoreThreads() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    @Test
    void eachFormEqualsTheOracleBitForBitAndNeverReadsUnattendedPairs() {
        SplittableRandom r = new SplittableRandom(29);
        for (int rep = 0; rep < 300; rep++) {
            Parallel.setThreads(1 + rep % 2);
            int kv = 1 + r.nextInt(2), h = kv * (1 + r.nextInt(3));
            // hd: below one vector, whole panels, and (case 4) panels then a tail with a scalar part, up to
            // 72: two 32-wide panels on AVX-512 (PQ's panels are two vectors)
            int hd = switch (r.nextInt(5)) { case 0 -> 1 + r.nextInt(9); case 1 -> 32; case 2 -> 40; case 3 -> 8 * (1 + r.nextInt(5)); default -> 17 + r.nextInt(56); };
            int rows = 1 + r.nextInt(23), l = 1 + r.nextInt(40), b = 1 + r.nextInt(2), start = r.nextInt(3) == 0 ? r.nextInt(l + 3) : 0;
            int kind = r.nextInt(3), window = kind == 1 ? 1 + r.nextInt(9) : 0, chunk = kind == 2 ? 1 + r.nextInt(9) : 0;
            boolean specials = r.nextInt(10) == 0;
            Instr.AttnOpts o = new Instr.AttnOpts(h, kv, Double.NaN, 0, window, chunk, start);
            PlanKernels.Attn g = new PlanKernels.Attn(b, rows, l, hd, h, kv, start, window, chunk,
                    (float) AttentionKernels.attentionScale(DType.F32, o, hd), 0f);
            float[] q = PlanKernelsExpTest.random(b * rows * h * hd, r, specials), k = PlanKernelsExpTest.random(b * l * kv * hd, r, specials);
            float[] s = PlanKernelsExpTest.random(b * h * rows * l, r, specials);
            for (int bh = 0; bh < b * h; bh++)                          // unattended pairs: NaN, never to be read
                for (int t = 0; t < rows; t++)
                    for (int j = 0; j < l; j++)
                        if (j < g.lo(t) || j > g.hi(t)) s[(bh * rows + t) * l + j] = Float.NaN;
            Tensor tq = PlanKernelsExpTest.tensor(q, b, rows, h * hd), tk = PlanKernelsExpTest.tensor(k, b, l, kv * hd);
            Tensor ts = PlanKernelsExpTest.tensor(s, b, h, rows, l);
            String what = "rep " + rep + " " + o + " b=" + b + " rows=" + rows + " l=" + l + " hd=" + hd;

            float[] y = stale(b * h * rows * l);
            AttentionProducts.qk(g, q, k, y);
            PlanKernelsExpTest.assertBits(y, y.length - 3, AttentionKernels.attentionProduct(tq, tk, o, Form.QK), what + " QK");
            assertThat(y[y.length - 1]).as("QK writes past its output").isNaN();

            y = stale(q.length);
            AttentionProducts.pk(g, s, k, y);
            Tensor want = AttentionKernels.attentionProduct(ts, tk, o, Form.PK);
            PlanKernelsExpTest.assertBits(y, y.length - 3, want, what + " PK");
            if (!specials) assertThat(Arrays.stream(want.floats()).anyMatch(Double::isNaN)).as(what + " PK read an unattended pair").isFalse();

            y = stale(k.length);
            AttentionProducts.pq(g, s, q, y);
            want = AttentionKernels.attentionProduct(ts, tq, o, Form.PQ);
            PlanKernelsExpTest.assertBits(y, y.length - 3, want, what + " PQ");
            if (!specials) assertThat(Arrays.stream(want.floats()).anyMatch(Double::isNaN)).as(what + " PQ read an unattended pair").isFalse();
        }
    }

    /** n + 3 NaNs: stale values that must not survive, and a guard past the end. */
    private static float[] stale(int n) {
        float[] y = new float[n + 3];
        Arrays.fill(y, Float.NaN);
        return y;
    }
}
