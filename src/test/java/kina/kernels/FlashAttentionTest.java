package kina.kernels;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import kina.eval.AttentionKernels;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Instr;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The blockwise attention kernels against their Kernels twins, raw bits (NaN payloads aside, see
 * PlanKernelsExpTest), over random geometries: rows in blocks of 4 and 32 and their tails, keys
 * over one to four key blocks and partial last blocks, windows and chunks that start inside a
 * block or skip whole blocks, start > 0 and rows that attend nothing, GQA, softcap, sinks, head
 * widths below, at and past a block of features, special values, 1 and 2 threads. Every output
 * buffer starts as NaN: stale values must not survive, and nothing past the output is written.
 */
class FlashAttentionTest {

    @AfterAll static void restoreThreads() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    /** A random geometry: its options, sizes and operands. */
    private record Case(Instr.AttnOpts o, PlanKernels.Attn g, int b, int rows, int l, int hd, float[] q, float[] k, float[] v,
                        float[] sinks, String what) {
        Tensor tq() { return PlanKernelsExpTest.tensor(q, b, rows, o.heads() * hd); }
        Tensor tk() { return PlanKernelsExpTest.tensor(k, b, l, o.kvHeads() * hd); }
        Tensor tv() { return PlanKernelsExpTest.tensor(v, b, l, o.kvHeads() * hd); }
        Tensor ts() { return sinks == null ? null : PlanKernelsExpTest.tensor(sinks, o.heads()); }
    }

    private static Case draw(SplittableRandom r, int rep) {
        int kv = 1 + r.nextInt(2), h = kv * (1 + r.nextInt(2));
        int hd = switch (r.nextInt(4)) { case 0 -> 1 + r.nextInt(7); case 1 -> 32; case 2 -> 48; default -> 8 * (1 + r.nextInt(5)); };
        int block = Instr.AttnOpts.KEY_BLOCK;
        boolean longRows = r.nextInt(3) > 0;
        int rows = longRows ? 1 + r.nextInt(3 * block) : 1 + r.nextInt(23), l = longRows ? 1 + r.nextInt(4 * block) : 1 + r.nextInt(40);
        int b = 1 + r.nextInt(2), start = r.nextInt(3) == 0 ? r.nextInt(l + 3) : 0;
        int kind = r.nextInt(3), reach = longRows ? 2 * block : 9;
        int window = kind == 1 ? 1 + r.nextInt(reach) : 0, chunk = kind == 2 ? 1 + r.nextInt(reach) : 0;
        double cap = r.nextInt(4) == 0 ? 1 + r.nextInt(20) : 0;
        boolean sinks = r.nextBoolean(), specials = r.nextInt(10) == 0;
        Instr.AttnOpts o = new Instr.AttnOpts(h, kv, r.nextBoolean() ? Double.NaN : 0.3, cap, window, chunk, start);
        PlanKernels.Attn g = new PlanKernels.Attn(b, rows, l, hd, h, kv, start, window, chunk,
                (float) AttentionKernels.attentionScale(DType.F32, o, hd), (float) o.softcap());
        float[] q = PlanKernelsExpTest.random(b * rows * h * hd, r, specials), k = PlanKernelsExpTest.random(b * l * kv * hd, r, specials);
        float[] v = PlanKernelsExpTest.random(k.length, r, specials), sk = sinks ? PlanKernelsExpTest.random(h, r, false) : null;
        String what = "rep " + rep + " " + o + " b=" + b + " rows=" + rows + " l=" + l + " hd=" + hd + " sinks=" + sinks + " specials=" + specials;
        return new Case(o, g, b, rows, l, hd, q, k, v, sk, what);
    }

    /** n + 3 NaNs: stale values that must not survive, and a guard past the end. */
    private static float[] stale(int n) {
        float[] y = new float[n + 3];
        Arrays.fill(y, Float.NaN);
        return y;
    }

    private static void assertGuard(float[] y, String what) {
        for (int i = y.length - 3; i < y.length; i++) assertThat(y[i]).as(what + " writes past its output").isNaN();
    }

    @Test
    void theForwardWritesAttentionsOutputAndLse() {
        SplittableRandom r = new SplittableRandom(17);
        for (int rep = 0; rep < 200; rep++) {
            Parallel.setThreads(1 + rep % 2);
            Case c = draw(r, rep);
            float[] y = stale(c.q().length), lse = stale(c.b() * c.rows() * c.o().heads());
            FlashAttention.forward(c.g(), c.q(), c.k(), c.v(), c.sinks(), y, lse);
            PlanKernelsExpTest.assertBits(y, c.q().length, AttentionKernels.attention(c.tq(), c.tk(), c.tv(), c.ts(), c.o()), c.what() + " y", true);
            Tensor wantLse = AttentionKernels.attentionLse(c.tq(), c.tk(), c.ts(), c.o());
            PlanKernelsExpTest.assertBits(lse, lse.length - 3, wantLse, c.what() + " lse", true);
            assertGuard(y, c.what() + " y");
            assertGuard(lse, c.what() + " lse");
            float[] lseAlone = stale(lse.length - 3);                     // attention_lse alone: no output
            FlashAttention.forward(c.g(), c.q(), c.k(), null, c.sinks(), null, lseAlone);
            PlanKernelsExpTest.assertBits(lseAlone, lse.length - 3, wantLse, c.what() + " lse alone", true);
        }
    }

    @Test
    void theBackwardWritesTheReferenceCotangents() {
        SplittableRandom r = new SplittableRandom(23);
        for (int rep = 0; rep < 200; rep++) {
            Parallel.setThreads(1 + rep % 2);
            Case c = draw(r, rep);
            int h = c.o().heads();
            float[] gy = PlanKernelsExpTest.random(c.q().length, r, false);
            Tensor tg = PlanKernelsExpTest.tensor(gy, c.b(), c.rows(), h * c.hd());
            // lse as the forward makes it (so p stays in range), d as the VJP makes it
            Tensor lse = AttentionKernels.attentionLse(c.tq(), c.tk(), c.ts(), c.o());
            Tensor out = AttentionKernels.attention(c.tq(), c.tk(), c.tv(), c.ts(), c.o());
            float[] d = new float[c.b() * c.rows() * h];
            for (int i = 0; i < d.length; i++) {
                float acc = gy[i * c.hd()] * (float) out.floats()[i * c.hd()];
                for (int e = 1; e < c.hd(); e++) acc = acc + gy[i * c.hd() + e] * (float) out.floats()[i * c.hd() + e];
                d[i] = acc;
            }
            float[] ls = new float[d.length];
            for (int i = 0; i < ls.length; i++) ls[i] = (float) lse.floats()[i];
            Tensor td = PlanKernelsExpTest.tensor(d, c.b(), c.rows(), h);
            boolean wq = r.nextInt(4) > 0, wk = r.nextInt(4) > 0, wv = r.nextInt(4) > 0 || !(wq || wk);
            float[] dq = wq ? stale(c.q().length) : null, dk = wk ? stale(c.k().length) : null, dv = wv ? stale(c.k().length) : null;
            FlashAttention.backward(c.g(), c.q(), c.k(), c.v(), gy, ls, d, dq, dk, dv);
            List<Tensor> want = AttentionKernels.attentionGrads(c.tq(), c.tk(), c.tv(), tg, lse, td, c.o(), wq, wk, wv);
            int at = 0;
            for (float[] got : new float[][] {dq, dk, dv}) {
                if (got == null) continue;
                String what = c.what() + " " + (got == dq ? "dq" : got == dk ? "dk" : "dv");
                PlanKernelsExpTest.assertBits(got, got.length - 3, want.get(at++), what, true);
                assertGuard(got, what);
            }
        }
    }
}
