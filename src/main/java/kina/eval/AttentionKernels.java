package kina.eval;

import static kina.eval.Kernels.check;
import static kina.eval.Kernels.exp;
import static kina.eval.Kernels.make;
import static kina.eval.Kernels.prod;
import static kina.eval.Kernels.requireFloating;
import static kina.eval.Kernels.round;
import static kina.eval.Kernels.sameType;
import static kina.eval.Kernels.volume;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import kina.ir.DType;
import kina.ir.Instr;
import kina.ir.Instr.AttnOpts;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * The reference kernels of causal attention and its adjoint vocabulary ({@link Instr.Attend}):
 * the online softmax over key blocks (attention, attention_lse), the materialised probabilities
 * (attention_exp), the blockwise cotangents (attention_dq, _dk, _dv) and the masked products.
 * Scores and products are fma chains ({@link Kernels}' bit discipline); the plan's blockwise
 * kernels compute the same bits.
 */
public final class AttentionKernels {
    private AttentionKernels() {}

    // ---- attention ----------------------------------------------------------------------------------

    /** The attention scale α = r(scale), or r(1/√hd) by default. */
    public static double attentionScale(DType d, Instr.AttnOpts o, long hd) {
        return round(d, o.alpha(hd));
    }

    /**
     * The score of query row qOff against key kOff: dot = Σ_e q_e·k_e, one fma chain from −0.0 in
     * increasing e (as attention_qk; 0 when hd = 0), u = r(dot · α), s = r(C·r(tanh(r(u / C)))) with a
     * softcap C, else u.
     */
    private static double score(DType d, double[] q, int qOff, double[] k, int kOff, int hd, double alpha, double cap) {
        boolean f32 = d == DType.F32;
        double dot = -0.0;
        for (int e = 0; e < hd; e++) dot = fma(f32, q[qOff + e], k[kOff + e], dot);
        if (hd == 0) dot = 0;
        double u = round(d, dot * alpha);
        return cap > 0 ? round(d, cap * round(d, StrictMath.tanh(round(d, u / cap)))) : u;
    }

    /**
     * One query row of attention's online softmax; writes out[yOff, yOff + hd) when y is not null and
     * returns the row's lse. Row {@code row} attends [lo, hi] (hi = min(start + row, L − 1); lo = 0, or
     * max(0, start + row − W + 1) with a window W, or ⌊(start + row)/C⌋·C with a chunk C), visited in
     * key blocks [b·B, b·B + B) ∩ [lo, hi] of B = {@link AttnOpts#KEY_BLOCK}, in increasing b. State: m,
     * l, o_e; with a sink σ it starts at m = σ, l = 1, without one m is the first block's maximum and
     * l = +0.0; o_e starts at −0.0. Per block: its scores s_j ({@link #score}), bm = Math.max over them;
     * if bm &gt; m (a block after the first, or after the sink): c = r(exp(r(m − bm))), l = r(l·c),
     * o_e = r(o_e·c), m = bm; then in increasing j, p = r(exp(r(s_j − m))), l = r(l + p),
     * o_e = fma(p, v_{j,e}, o_e). Then out_e = r(o_e / l) (+0.0 for a row that attends nothing) and
     * lse = r(m + r(log l)) (−∞ for a row with neither a position nor a sink).
     */
    private static double onlineRow(DType d, double[] q, int qOff, double[] k, double[] v, int kBase, int kStride, int hd,
                                    int l, int row, AttnOpts o, double alpha, double cap, double sink, boolean hasSink,
                                    double[] y, int yOff, double[] s) {
        boolean f32 = d == DType.F32;
        int hi = o.hi(row, l);
        long lo = o.lo(row);
        boolean started = hasSink;
        double m = hasSink ? sink : Double.NEGATIVE_INFINITY, z = hasSink ? 1.0 : 0.0;
        if (y != null) Arrays.fill(y, yOff, yOff + hd, -0.0);
        int block = AttnOpts.KEY_BLOCK;
        for (long b0 = lo / block * block; lo <= hi && b0 <= hi; b0 += block) {
            int j0 = (int) Math.max(lo, b0), j1 = (int) Math.min(hi, b0 + block - 1);
            double bm = 0;
            for (int j = j0; j <= j1; j++) {
                s[j - j0] = score(d, q, qOff, k, kBase + j * kStride, hd, alpha, cap);
                bm = j == j0 ? s[0] : Math.max(bm, s[j - j0]);
            }
            if (!started) {
                m = bm;
                started = true;
            } else if (bm > m) {
                double c = round(d, exp(d, round(d, m - bm)));
                z = round(d, z * c);
                if (y != null) for (int e = 0; e < hd; e++) y[yOff + e] = round(d, y[yOff + e] * c);
                m = bm;
            }
            for (int j = j0; j <= j1; j++) {
                double p = round(d, exp(d, round(d, s[j - j0] - m)));
                z = round(d, z + p);
                if (y != null)
                    for (int e = 0, vOff = kBase + j * kStride; e < hd; e++) y[yOff + e] = fma(f32, p, v[vOff + e], y[yOff + e]);
            }
        }
        if (y != null)
            for (int e = 0; e < hd; e++) y[yOff + e] = lo > hi ? 0.0 : round(d, y[yOff + e] / z);
        return started ? round(d, m + round(d, StrictMath.log(z))) : Double.NEGATIVE_INFINITY;
    }

    /** Checks q, k (and v, sinks) against the options; returns {batch, rows, L, hd}. */
    private static int[] attentionDims(String op, Tensor q, Tensor k, Tensor v, Tensor sinks, Instr.AttnOpts o) {
        requireFloating(op, q);
        Shape qs = q.shape(), ks = k.shape();
        int r = qs.rank();
        check(r >= 2 && ks.rank() == r && qs.prefix(r - 2).equals(ks.prefix(r - 2)) && k.dtype() == q.dtype()
                && o.heads() > 0 && o.kvHeads() > 0 && o.heads() % o.kvHeads() == 0,
                op + ": q " + q.type() + " and k " + k.type() + " do not fit heads " + o.heads() + ", kv_heads " + o.kvHeads());
        int rows = (int) qs.dim(r - 2), l = (int) ks.dim(r - 2), hd = (int) (qs.dim(r - 1) / o.heads());
        check(qs.dim(r - 1) == (long) hd * o.heads() && ks.dim(r - 1) == (long) hd * o.kvHeads(),
                op + ": q " + q.type() + " and k " + k.type() + " head widths differ");
        if (v != null) sameType(op, k, v);
        if (sinks != null) check(sinks.size() == o.heads() && sinks.dtype() == q.dtype(), op + ": sinks " + sinks.type());
        int batch = prod(qs, 0, r - 2);
        return new int[] {batch, rows, l, hd};
    }

    /** The type σ++[T, H] of a per-row, per-head value (lse, d) of q σ++[T, H·hd]. */
    private static TensorType rowHeadType(Tensor q, int heads) {
        Shape qs = q.shape();
        return q.type().withShape(qs.prefix(qs.rank() - 1).concat(heads));
    }

    /** Runs {@link #onlineRow} over every (batch, head, row); y (σ++[T, H·hd]) may be null; returns lse σ++[T, H]. */
    private static double[] online(String op, Tensor q, Tensor k, Tensor v, Tensor sinks, Instr.AttnOpts o, double[] y) {
        int[] dims = attentionDims(op, q, k, v, sinks, o);
        int batch = dims[0], rows = dims[1], l = dims[2], hd = dims[3], h = o.heads(), kv = o.kvHeads(), g = h / kv;
        DType d = q.dtype();
        double alpha = attentionScale(d, o, hd), cap = round(d, o.softcap());
        double[] qa = q.floats(), ka = k.floats(), va = v == null ? null : v.floats(), lse = new double[batch * rows * h];
        double[] s = new double[AttnOpts.KEY_BLOCK];
        for (int bt = 0; bt < batch; bt++)
            for (int hh = 0; hh < h; hh++)
                for (int row = 0; row < rows; row++) {
                    int qOff = (bt * rows + row) * h * hd + hh * hd, kBase = bt * l * kv * hd + (hh / g) * hd;
                    lse[(bt * rows + row) * h + hh] = onlineRow(d, qa, qOff, ka, va, kBase, kv * hd, hd, l, row, o, alpha, cap,
                            sinks == null ? 0 : sinks.floats()[hh], sinks != null, y, qOff, s);
                }
        return lse;
    }

    /**
     * {@code q.attention(k, v, sinks, opts)}: q σ++[T, H·hd], k, v σ++[L, KV·hd], sinks [H] or null.
     * Query head h reads kv head h / (H/KV). Per row and head, the online softmax of {@link #onlineRow}.
     */
    public static Tensor attention(Tensor q, Tensor k, Tensor v, Tensor sinks, Instr.AttnOpts o) {
        double[] y = new double[q.size()];
        online("attention", q, k, v, sinks, o, y);
        return make(q.type(), y);
    }

    /** AttentionLse: σ++[T, H] of each row's lse, as {@link #attention} computes it ({@link #onlineRow}). */
    public static Tensor attentionLse(Tensor q, Tensor k, Tensor sinks, Instr.AttnOpts o) {
        return make(rowHeadType(q, o.heads()), online("attention_lse", q, k, null, sinks, o, null));
    }

    /** Whether query row {@code row} attends key position j. */
    private static boolean attended(Instr.AttnOpts o, int row, int j, int l) {
        return j >= o.lo(row) && j <= o.hi(row, l);
    }

    /** Checks a σ++[T, H] operand of the attention backward against q σ++[T, H·hd]. */
    private static void rowHeads(String op, String what, Tensor x, Tensor q, int heads) {
        check(x.type().equals(rowHeadType(q, heads)), op + ": " + what + " " + x.type() + " is not " + rowHeadType(q, heads));
    }

    /**
     * AttentionExp: σ++[H, T, L], p = r(exp(r(s − lse))) at each attended pair ({@link #score}), +0.0
     * at every other pair.
     */
    public static Tensor attentionExp(Tensor q, Tensor k, Tensor lse, Instr.AttnOpts o) {
        int[] dims = attentionDims("attention_exp", q, k, null, null, o);
        int batch = dims[0], rows = dims[1], l = dims[2], hd = dims[3], h = o.heads(), kv = o.kvHeads(), g = h / kv;
        rowHeads("attention_exp", "lse", lse, q, h);
        DType d = q.dtype();
        double alpha = attentionScale(d, o, hd), cap = round(d, o.softcap());
        Shape qs = q.shape();
        TensorType out = q.type().withShape(qs.prefix(qs.rank() - 2).concat(h, rows, l));
        double[] qa = q.floats(), ka = k.floats(), ls = lse.floats(), y = new double[volume("attention_exp", out.shape())];
        for (int bt = 0; bt < batch; bt++)
            for (int hh = 0; hh < h; hh++)
                for (int t = 0; t < rows; t++) {
                    int qOff = (bt * rows + t) * h * hd + hh * hd, kBase = bt * l * kv * hd + (hh / g) * hd;
                    double m = ls[(bt * rows + t) * h + hh];
                    for (int j = (int) o.lo(t), end = o.hi(t, l); j <= end; j++)
                        y[((bt * h + hh) * rows + t) * l + j] = round(d, exp(d, round(d, score(d, qa, qOff, ka, kBase + j * kv * hd, hd, alpha, cap) - m)));
                }
        return make(out, y);
    }

    /**
     * attention_dq, attention_dk, attention_dv ({@link Instr.AttentionGrad}): those asked for, in that
     * order. Per attended pair (t, j) of head h (kv head c = h / (H/KV)): p = r(exp(r(s − lse_t)))
     * ({@link #score}; u = r(dot·α) its scaled dot), dp = Σ_e g_{t,e}·v_{j,e} (one fma chain from −0.0
     * in increasing e), ds = r(p·r(dp − d_t)), du = r(ds·r(1 − r(th·th))) with th = r(tanh(r(u / C)))
     * under a softcap C, else ds. Chains (fma, from −0.0): dq_{t,e} over the attended j in increasing
     * j of du·k_{j,e}; dk_{j,e} of du·q_{t,e} and dv_{j,e} of p·g_{t,e} over the heads of c in
     * increasing h, then the rows attending j in increasing t; a chain with no term is +0.0. Then
     * dq = r(α·chain), dk = r(α·chain), dv = chain.
     */
    public static List<Tensor> attentionGrads(Tensor q, Tensor k, Tensor v, Tensor g, Tensor lse, Tensor dd, Instr.AttnOpts o,
                                              boolean wantQ, boolean wantK, boolean wantV) {
        String op = wantQ ? "attention_dq" : wantK ? "attention_dk" : "attention_dv";
        int[] dims = attentionDims(op, q, k, v, null, o);
        int batch = dims[0], rows = dims[1], l = dims[2], hd = dims[3], h = o.heads(), kv = o.kvHeads(), grp = h / kv;
        sameType(op, q, g);
        rowHeads(op, "lse", lse, q, h);
        rowHeads(op, "d", dd, q, h);
        DType d = q.dtype();
        boolean f32 = d == DType.F32;
        double alpha = attentionScale(d, o, hd), cap = round(d, o.softcap());
        double[] qa = q.floats(), ka = k.floats(), va = v.floats(), ga = g.floats(), ls = lse.floats(), da = dd.floats();
        double[] dq = new double[qa.length], dk = new double[ka.length], dv = new double[ka.length];
        boolean[] anyQ = new boolean[qa.length], anyK = new boolean[ka.length];
        Arrays.fill(dq, -0.0);
        Arrays.fill(dk, -0.0);
        Arrays.fill(dv, -0.0);
        int kStride = kv * hd, qStride = h * hd;
        // bt, h, t, j in increasing order: dq_t's terms come in increasing j, dk_j's and dv_j's in increasing (h, t)
        for (int bt = 0; bt < batch; bt++)
            for (int hh = 0; hh < h; hh++)
                for (int t = 0; t < rows; t++) {
                    int qOff = (bt * rows + t) * qStride + hh * hd, kBase = bt * l * kStride + (hh / grp) * hd;
                    double m = ls[(bt * rows + t) * h + hh], dt = da[(bt * rows + t) * h + hh];
                    for (int j = (int) o.lo(t), end = o.hi(t, l); j <= end; j++) {
                        int kOff = kBase + j * kStride;
                        double sc = score(d, qa, qOff, ka, kOff, hd, alpha, cap);
                        double p = round(d, exp(d, round(d, sc - m)));
                        anyQ[qOff] = true;
                        anyK[kOff] = true;
                        if (wantV)
                            for (int e = 0; e < hd; e++) dv[kOff + e] = fma(f32, p, ga[qOff + e], dv[kOff + e]);
                        if (!wantQ && !wantK) continue;
                        double dp = -0.0;
                        for (int e = 0; e < hd; e++) dp = fma(f32, ga[qOff + e], va[kOff + e], dp);
                        if (hd == 0) dp = 0;
                        double du = round(d, p * round(d, dp - dt));
                        if (cap > 0) {
                            double dot = -0.0;
                            for (int e = 0; e < hd; e++) dot = fma(f32, qa[qOff + e], ka[kOff + e], dot);
                            if (hd == 0) dot = 0;
                            double th = round(d, StrictMath.tanh(round(d, round(d, dot * alpha) / cap)));
                            du = round(d, du * round(d, 1 - round(d, th * th)));
                        }
                        if (wantQ) for (int e = 0; e < hd; e++) dq[qOff + e] = fma(f32, du, ka[kOff + e], dq[qOff + e]);
                        if (wantK) for (int e = 0; e < hd; e++) dk[kOff + e] = fma(f32, du, qa[qOff + e], dk[kOff + e]);
                    }
                }
        List<Tensor> out = new ArrayList<>();
        if (wantQ) out.add(make(q.type(), scaled(d, dq, anyQ, hd, alpha)));
        if (wantK) out.add(make(k.type(), scaled(d, dk, anyK, hd, alpha)));
        if (wantV) out.add(make(k.type(), scaled(d, dv, anyK, hd, Double.NaN)));
        return out;
    }

    /** Each head's chains of hd values (anyAt[first] marks one with a term): r(α·chain), or the chain for α NaN; +0.0 with no term. */
    private static double[] scaled(DType d, double[] chain, boolean[] anyAt, int hd, double alpha) {
        for (int i = 0; i < chain.length; i += Math.max(hd, 1))
            for (int e = 0; e < hd; e++)
                chain[i + e] = !anyAt[i] ? 0.0 : Double.isNaN(alpha) ? chain[i + e] : round(d, alpha * chain[i + e]);
        return chain;
    }

    /**
     * AttentionProduct ({@link Instr.AttentionProduct}, forms QK, PK, PQ): sums over attended pairs only,
     * each output one fma chain from −0.0 (F32: Math.fma on floats, one rounding per term) in the order of
     * the instruction's docstring; an output with no term is +0.0, as are QK's pairs that are not attended.
     */
    public static Tensor attentionProduct(Tensor a, Tensor b, Instr.AttnOpts o, Instr.AttentionProduct.Form form) {
        String op = form.op();
        requireFloating(op, a);
        check(b.dtype() == a.dtype(), op + ": a " + a.type() + " and b " + b.type() + " differ in dtype");
        DType d = a.dtype();
        boolean f32 = d == DType.F32;
        int h = o.heads(), kv = o.kvHeads(), g = h / kv;
        double[] x = a.floats(), w = b.floats();
        return switch (form) {
            case QK -> {                                        // a σ++[T, H·hd], b σ++[L, KV·hd] → σ++[H, T, L]
                int[] dims = attentionDims(op, a, b, null, null, o);
                int batch = dims[0], rows = dims[1], l = dims[2], hd = dims[3];
                Shape as = a.shape();
                TensorType out = a.type().withShape(as.prefix(as.rank() - 2).concat(h, rows, l));
                double[] y = new double[batch * h * rows * l];
                for (int bt = 0; bt < batch; bt++)
                    for (int hh = 0; hh < h; hh++)
                        for (int t = 0; t < rows; t++)
                            for (int j = (int) o.lo(t), end = o.hi(t, l); j <= end; j++) {
                                int ao = (bt * rows + t) * h * hd + hh * hd, bo = (bt * l + j) * kv * hd + (hh / g) * hd;
                                double acc = f32 ? -0.0f : -0.0;
                                for (int e = 0; e < hd; e++) acc = fma(f32, x[ao + e], w[bo + e], acc);
                                y[((bt * h + hh) * rows + t) * l + j] = hd == 0 ? 0.0 : acc;
                            }
                yield make(out, y);
            }
            case PK, PQ -> {                                    // a σ++[H, T, L]
                Shape as = a.shape(), bs = b.shape();
                int r = bs.rank();
                check(as.rank() == r + 1 && as.dim(r - 2) == h, op + ": a " + a.type() + " is not σ++[" + h + ", T, L]");
                int rows = (int) as.dim(r - 1), l = (int) as.dim(r), batch = prod(bs, 0, r - 2);
                boolean pk = form == Instr.AttentionProduct.Form.PK;
                int hd = (int) (bs.dim(r - 1) / (pk ? kv : h));
                check(bs.dim(r - 2) == (pk ? l : rows), op + ": a " + a.type() + " and b " + b.type() + " do not fit");
                Shape lead = bs.prefix(r - 2);
                if (pk) {                                       // b σ++[L, KV·hd] → σ++[T, H·hd]
                    double[] y = new double[batch * rows * h * hd];
                    for (int bt = 0; bt < batch; bt++)
                        for (int t = 0; t < rows; t++)
                            for (int hh = 0; hh < h; hh++) {
                                int lo = (int) Math.min(o.lo(t), (long) l), hi = o.hi(t, l), so = ((bt * h + hh) * rows + t) * l;
                                for (int e = 0; e < hd; e++) {
                                    double acc = f32 ? -0.0f : -0.0;
                                    for (int j = lo; j <= hi; j++) acc = fma(f32, x[so + j], w[(bt * l + j) * kv * hd + (hh / g) * hd + e], acc);
                                    y[(bt * rows + t) * h * hd + hh * hd + e] = lo > hi ? 0.0 : acc;
                                }
                            }
                    yield make(b.type().withShape(lead.concat(rows, (long) h * hd)), y);
                }
                double[] y = new double[batch * l * kv * hd];   // b σ++[T, H·hd] → σ++[L, KV·hd]
                for (int bt = 0; bt < batch; bt++)
                    for (int j = 0; j < l; j++)
                        for (int c = 0; c < kv; c++)
                            for (int e = 0; e < hd; e++) {
                                double acc = f32 ? -0.0f : -0.0;
                                boolean any = false;
                                for (int hh = c * g; hh < (c + 1) * g; hh++)
                                    for (int t = 0; t < rows; t++) {
                                        if (!attended(o, t, j, l)) continue;
                                        acc = fma(f32, x[((bt * h + hh) * rows + t) * l + j], w[(bt * rows + t) * h * hd + hh * hd + e], acc);
                                        any = true;
                                    }
                                y[(bt * l + j) * kv * hd + c * hd + e] = any ? acc : 0.0;
                            }
                yield make(b.type().withShape(lead.concat(l, (long) kv * hd)), y);
            }
        };
    }

    /** One fma step of a chain: in float when {@code f32} (operands are floats held in doubles). */
    private static double fma(boolean f32, double x, double y, double acc) {
        return f32 ? Math.fma((float) x, (float) y, (float) acc) : Math.fma(x, y, acc);
    }
}
