package kina.model;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Writes a StoryLM decoder as a kina program (DESIGN §7): token embedding gather, per layer a
 * pre-norm RMSNorm, causal attention with RoPE and a pre-norm SwiGLU MLP, each added to the
 * residual stream; a final RMSNorm, an untied lm_head, and the mean next-token NLL. The program
 * differentiates that loss with {@code handle … with reverseMode} and appends the optimizer's
 * update as ordinary instructions, so one program is one whole training step.
 *
 * <p>Shapes: ids [B, T] (I64), targets [B·T] (I64), cos/sin [T, hd/2] (the RoPE tables, inputs that
 * are not differentiated), weights stored [in, out] and applied as x @ W on the flattened
 * [B·T, in] activations. The weight order is {@link #weights}.
 */
public final class StoryLm {
    private StoryLm() {}

    /** A named weight and its shape. */
    public record Weight(String name, long[] shape) {
        public int rank() { return shape.length; }
    }

    /** The weights of a config, in parameter order. */
    public static List<Weight> weights(Config c) {
        List<Weight> w = new ArrayList<>();
        int d = c.dModel(), hd = c.headDim();
        w.add(new Weight("emb", new long[] {c.vocab(), d}));
        for (int l = 0; l < c.layers(); l++) {
            String p = "l" + l + "_";
            w.add(new Weight(p + "attn_norm", new long[] {d}));
            w.add(new Weight(p + "wq", new long[] {d, (long) c.heads() * hd}));
            w.add(new Weight(p + "wk", new long[] {d, (long) c.kvHeads() * hd}));
            w.add(new Weight(p + "wv", new long[] {d, (long) c.kvHeads() * hd}));
            w.add(new Weight(p + "wo", new long[] {(long) c.heads() * hd, d}));
            if (c.mlpHidden() > 0) {
                w.add(new Weight(p + "mlp_norm", new long[] {d}));
                w.add(new Weight(p + "w_gate", new long[] {d, c.mlpHidden()}));
                w.add(new Weight(p + "w_up", new long[] {d, c.mlpHidden()}));
                w.add(new Weight(p + "w_down", new long[] {c.mlpHidden(), d}));
            }
        }
        w.add(new Weight("final_norm", new long[] {d}));
        w.add(new Weight("lm_head", new long[] {d, c.vocab()}));
        return w;
    }

    /** The forward fn: {@code storylm_loss} (mean NLL, [1, 1]) or {@code storylm_logits} ([B·T, V]). */
    static void forwardFn(StringBuilder s, Config c, int batch, boolean loss) { forwardFn(s, c, batch, loss, false); }

    /** {@link #forwardFn}; with {@code summed}, {@code storylm_loss} answers the summed NLL (nats, [1, 1]) instead of the mean. */
    static void forwardFn(StringBuilder s, Config c, int batch, boolean loss, boolean summed) {
        int b = batch, t = c.seq(), d = c.dModel(), hd = c.headDim(), h = c.heads(), kv = c.kvHeads();
        long n = (long) b * t;
        s.append("let ").append(loss ? "storylm_loss" : "storylm_logits").append(" = fn(ids: tensor<I64, [")
                .append(b).append(", ").append(t).append("], @host>,\n");
        if (loss) s.append("    targets: tensor<I64, [").append(n).append("], @host>");
        else s.setLength(s.length() - 2);
        for (Weight w : weights(c)) s.append(",\n    ").append(w.name()).append(": ").append(type(w.shape()));
        s.append(") -> ").append(loss ? type(1, 1) : type(n, c.vocab())).append(" {\n");
        String eps = num(c.eps());
        // The RoPE tables are inputs of the body, not parameters: they are constants, not differentiated.
        line(s, "cos", type(t, hd / 2), "RoPE cos(θ), θ(t, i) = t · base^(−2i/hd)");
        line(s, "sin", type(t, hd / 2), null);
        line(s, "x0", "emb.gather(ids)", "[B, T, D] token embeddings");
        String x = "x0";
        int step = 0;
        for (int l = 0; l < c.layers(); l++) {
            String p = "l" + l + "_";
            s.append("  // layer ").append(l).append(": attention\n");
            line(s, p + "h", x + ".rmsnorm(" + p + "attn_norm, eps=" + eps + ")", null);
            line(s, p + "h2", p + "h.reshape([" + n + ", " + d + "])", null);
            for (String m : new String[] {"q", "k", "v"}) {
                int width = (m.equals("q") ? h : kv) * hd;
                line(s, p + m + "2", p + "h2 @ " + p + "w" + m, null);
                line(s, p + m, p + m + "2.reshape([" + b + ", " + t + ", " + width + "])", null);
            }
            line(s, p + "qr", p + "q.rope(cos, sin, heads=" + h + ")", "RoPE, half-split pairs");
            line(s, p + "kr", p + "k.rope(cos, sin, heads=" + kv + ")", null);
            line(s, p + "att", p + "qr.attention(" + p + "kr, " + p + "v, heads=" + h + ", kv_heads=" + kv + ")",
                    "causal, scale 1/sqrt(hd)");
            line(s, p + "att2", p + "att.reshape([" + n + ", " + (h * hd) + "])", null);
            line(s, p + "o2", p + "att2 @ " + p + "wo", null);
            line(s, p + "o", p + "o2.reshape([" + b + ", " + t + ", " + d + "])", null);
            String xa = "x" + (++step);
            line(s, xa, x + " + " + p + "o", "residual");
            x = xa;
            if (c.mlpHidden() > 0) {
                s.append("  // layer ").append(l).append(": SwiGLU MLP\n");
                line(s, p + "m", x + ".rmsnorm(" + p + "mlp_norm, eps=" + eps + ")", null);
                line(s, p + "m2", p + "m.reshape([" + n + ", " + d + "])", null);
                line(s, p + "gate", p + "m2 @ " + p + "w_gate", null);
                line(s, p + "up", p + "m2 @ " + p + "w_up", null);
                line(s, p + "act", p + "gate.swiglu(" + p + "up)", "silu(gate) * up");
                line(s, p + "down2", p + "act @ " + p + "w_down", null);
                line(s, p + "down", p + "down2.reshape([" + b + ", " + t + ", " + d + "])", null);
                String xm = "x" + (++step);
                line(s, xm, x + " + " + p + "down", "residual");
                x = xm;
            }
        }
        s.append("  // head\n");
        line(s, "xf", x + ".rmsnorm(final_norm, eps=" + eps + ")", null);
        line(s, "xf2", "xf.reshape([" + n + ", " + d + "])", null);
        line(s, "logits", "xf2 @ lm_head", "[B*T, V]");
        if (!loss) {
            s.append("  logits\n} in\n");
            return;
        }
        line(s, "lp", "logits.log_softmax(axis=1)", null);
        line(s, "picked", "lp.take_along_axis(targets, axis=1)", "[B*T] log-likelihood of each next byte");
        line(s, "nll", "-picked", null);
        line(s, "total", "nll.sum(axis=0, keepdims=true)", null);
        line(s, "total2", "total.reshape([1, 1])", summed ? "summed NLL, nats" : null);
        if (summed) {
            s.append("  total2\n} in\n");
            return;
        }
        line(s, "inv_n", type(1, 1) + " payload { " + num(1.0 / n) + " }", "1 / (B*T)");
        line(s, "loss", "total2 * inv_n", "mean NLL, nats per byte");
        s.append("  loss\n} in\n");
    }

    /**
     * The whole training step: forward, transform_ad's gradients, gradient-norm clipping and the
     * optimizer update. Inputs: ids, targets, cos, sin, each weight, the optimizer state (see
     * {@link Optimizer#state}), and the step scalars {@code lr}, {@code bc1}, {@code bc2} ([1, 1]).
     * Result: (new weights…, new state…, loss, grad_norm).
     */
    public static String trainStep(Config c, int batch, Optimizer opt) {
        if (c.toy()) throw new ConfigError(c.name(), "the toy config has its own program (examples/storylm0_train_step.kina); train on text needs vocab 256");
        StringBuilder s = new StringBuilder();
        s.append(String.format(Locale.ROOT,
                "// StoryLM '%s' training step, written by kina.model.StoryLm: vocab %d, d_model %d, %d heads (%d kv) of %d,%n"
                        + "// seq %d, %d layers, SwiGLU hidden %d, batch %d; optimizer %s.%n",
                c.name(), c.vocab(), c.dModel(), c.heads(), c.kvHeads(), c.headDim(), c.seq(), c.layers(), c.mlpHidden(),
                batch, opt.describe()));
        forwardFn(s, c, batch, true);
        List<Weight> ws = inputs(s, c, batch, true);
        for (String st : opt.state())
            for (Weight w : ws) s.append("let ").append(st).append("_").append(w.name()).append(" = ").append(type(w.shape())).append(" in\n");
        s.append("let lr = ").append(type(1, 1)).append(" in\n");
        s.append("let bc1 = ").append(type(1, 1)).append(" in\n");
        s.append("let bc2 = ").append(type(1, 1)).append(" in\n");
        opt.constants(s);
        s.append("let (loss");
        for (Weight w : ws) s.append(", g_").append(w.name());
        s.append(") =\n  handle storylm_loss(ids, targets");
        for (Weight w : ws) s.append(", ").append(w.name());
        s.append(") with reverseMode in\n");
        opt.update(s, ws);
        s.append("(");
        List<String> out = new ArrayList<>();
        for (Weight w : ws) out.add("new_" + w.name());
        for (String st : opt.state()) for (Weight w : ws) out.add("new_" + st + "_" + w.name());
        out.add("loss");
        out.add("grad_norm");
        s.append(String.join(", ", out)).append(")\n");
        return s.toString();
    }

    /**
     * The gradient half of a large-batch step ({@link MicroBatchJob}): one micro-batch of
     * {@code rows} sequences, differentiated on its <em>summed</em> NLL (so micro-batches add up
     * to the batch's sum). Inputs: ids [rows, T], targets [rows·T] (I64), cos, sin, each weight.
     * Result: (loss_sum [1, 1], g_w… in {@link #weights} order), nothing scaled.
     */
    public static String gradientStep(Config c, int rows) {
        if (c.toy()) throw new ConfigError(c.name(), "the toy config has its own program (examples/storylm0_train_step.kina); train on text needs vocab 256");
        StringBuilder s = new StringBuilder(String.format(Locale.ROOT,
                "// StoryLM '%s' micro-batch gradient of the summed NLL, written by kina.model.StoryLm: %d sequences of %d%n",
                c.name(), rows, c.seq()));
        forwardFn(s, c, rows, true, true);
        List<Weight> ws = inputs(s, c, rows, true);
        s.append("handle storylm_loss(ids, targets");
        for (Weight w : ws) s.append(", ").append(w.name());
        s.append(") with reverseMode\n");
        return s.toString();
    }

    /**
     * The update half of a large-batch step: the summed gradients {@code gsum_w} (one per weight,
     * the micro-batch tree's result) scaled once by {@code scale}, then gradient-norm clipping and
     * the optimizer, as in {@link #trainStep}. Inputs: each weight, the optimizer state, each
     * {@code gsum_w}, and {@code lr}, {@code bc1}, {@code bc2} ([1, 1]). Result: (new weights…,
     * new state…, grad_norm), the order of {@link #trainStep} without its loss.
     */
    public static String updateStep(Config c, Optimizer opt, double scale) {
        StringBuilder s = new StringBuilder(String.format(Locale.ROOT,
                "// StoryLM '%s' update from a micro-batch tree's gradient sum, written by kina.model.StoryLm: scale %s; %s%n",
                c.name(), num(scale), opt.describe()));
        List<Weight> ws = weights(c);
        for (Weight w : ws) s.append("let ").append(w.name()).append(" = ").append(type(w.shape())).append(" in\n");
        for (String st : opt.state())
            for (Weight w : ws) s.append("let ").append(st).append("_").append(w.name()).append(" = ").append(type(w.shape())).append(" in\n");
        for (Weight w : ws) s.append("let gsum_").append(w.name()).append(" = ").append(type(w.shape())).append(" in\n");
        for (String in : new String[] {"lr", "bc1", "bc2"}) s.append("let ").append(in).append(" = ").append(type(1, 1)).append(" in\n");
        s.append("let grad_scale = ").append(type(1, 1)).append(" payload { ").append(num(scale)).append(" } in\n");
        s.append("let grad_scale_1 = grad_scale.reshape([1]) in\n");
        for (Weight w : ws) {
            String sh = java.util.Arrays.toString(w.shape());
            s.append("let g_").append(w.name()).append(" = gsum_").append(w.name()).append(" * grad_scale")
                    .append(w.rank() == 2 ? "" : "_1").append(".broadcast(").append(sh).append(") in\n");
        }
        opt.constants(s);
        opt.update(s, ws);
        List<String> out = new ArrayList<>();
        for (Weight w : ws) out.add("new_" + w.name());
        for (String st : opt.state()) for (Weight w : ws) out.add("new_" + st + "_" + w.name());
        out.add("grad_norm");
        s.append("(").append(String.join(", ", out)).append(")\n");
        return s.toString();
    }

    /**
     * StoryLM-0, the seeds' toy (DESIGN §9.1): the Section 14 decoder graph, one operator per let
     * (no norm, residual or MLP; heads split by reshape + transpose; an additive mask [1, 1, T, T]
     * and a scale [1, 1, 1, 1] reaching the scores through same-rank broadcasts), composed with the
     * mean next-token NLL and an SGD step on every floating weight (Section 15). Inputs: token_ids,
     * targets [1, T] (I64), the 8 weights, lr [1, 1]. Result: (new weights…, loss). The same program
     * as examples/storylm0_train_step.kina.
     */
    public static String toyTrainStep(Config c) {
        int v = c.vocab(), d = c.dModel(), h = c.heads(), hd = c.headDim(), t = c.seq();
        StringBuilder s = new StringBuilder(String.format(Locale.ROOT,
                "// StoryLM-0 '%s' (the seeds' toy) SGD step on the mean NLL, written by kina.model.StoryLm%n", c.name()));
        s.append("let storylm0_loss = fn(token_ids: tensor<I64, [1, ").append(t).append("], @host>,\n")
                .append("    targets: tensor<I64, [1, ").append(t).append("], @host>,\n")
                .append("    emb: ").append(type(v, d)).append(",\n    mask: ").append(type(1, 1, t, t))
                .append(",\n    scale: ").append(type(1, 1, 1, 1));
        for (String w : new String[] {"wq", "wk", "wv", "wo"}) s.append(",\n    ").append(w).append(": ").append(type(d, d));
        s.append(",\n    lm_head: ").append(type(d, v)).append(") -> ").append(type(1, 1)).append(" {\n");
        String bthd = "[1, " + t + ", " + h + ", " + hd + "]", scores = "[1, " + h + ", " + t + ", " + t + "]";
        line(s, "x", "emb.gather(token_ids)", "[1, T, D]");
        for (String w : new String[] {"wq", "wk", "wv"}) line(s, w + "3", w + ".reshape([1, " + d + ", " + d + "])", null);
        for (String m : new String[] {"q", "k", "v"}) line(s, m, "x @ w" + m + "3", null);
        for (String m : new String[] {"q", "k", "v"}) {
            line(s, m + "4", m + ".reshape(" + bthd + ")", "[B, T, H, hd]");
            line(s, m + "h", m + "4.transpose([0, 2, 1, 3])", "[B, H, T, hd]");
        }
        line(s, "kt", "kh.transpose([0, 1, 3, 2])", null);
        line(s, "s", "qh @ kt", "scores " + scores);
        line(s, "scale_b", "scale.broadcast(" + scores + ")", null);
        line(s, "ss", "s * scale_b", null);
        line(s, "mask_b", "mask.broadcast(" + scores + ")", "0 on and below the diagonal, -1e9 above");
        line(s, "sm", "ss + mask_b", null);
        line(s, "p", "sm.softmax(axis=3)", null);
        line(s, "a", "p @ vh", null);
        line(s, "at", "a.transpose([0, 2, 1, 3])", null);
        line(s, "m", "at.reshape([1, " + t + ", " + d + "])", "heads concatenated");
        line(s, "wo3", "wo.reshape([1, " + d + ", " + d + "])", null);
        line(s, "o", "m @ wo3", null);
        line(s, "lm3", "lm_head.reshape([1, " + d + ", " + v + "])", null);
        line(s, "logits", "o @ lm3", "[1, T, V]");
        line(s, "lp", "logits.log_softmax(axis=2)", null);
        line(s, "picked", "lp.take_along_axis(targets, axis=2)", null);
        line(s, "nll", "-picked", null);
        line(s, "tot", "nll.sum(axis=1, keepdims=true)", null);
        line(s, "inv_t", type(1, 1) + " payload { " + num(1.0 / t) + " }", "1 / T");
        line(s, "loss", "tot * inv_t", "mean NLL");
        s.append("  loss\n} in\n");
        String[][] ws = {{"emb", "[" + v + ", " + d + "]"}, {"mask", "[1, 1, " + t + ", " + t + "]"}, {"scale", "[1, 1, 1, 1]"},
                {"wq", "[" + d + ", " + d + "]"}, {"wk", "[" + d + ", " + d + "]"}, {"wv", "[" + d + ", " + d + "]"},
                {"wo", "[" + d + ", " + d + "]"}, {"lm_head", "[" + d + ", " + v + "]"}};
        s.append("let token_ids = tensor<I64, [1, ").append(t).append("], @host> in\n");
        s.append("let targets = tensor<I64, [1, ").append(t).append("], @host> in\n");
        for (String[] w : ws) s.append("let ").append(w[0]).append(" = tensor<F32, ").append(w[1]).append(", @host> in\n");
        s.append("let lr = ").append(type(1, 1)).append(" in\n");
        s.append("let (loss, g_emb, g_mask, g_scale, g_wq, g_wk, g_wv, g_wo, g_lm) =\n")
                .append("  handle storylm0_loss(token_ids, targets, emb, mask, scale, wq, wk, wv, wo, lm_head) with reverseMode in\n");
        s.append("let lr4 = lr.reshape([1, 1, 1, 1]) in\n");
        List<String> out = new ArrayList<>();
        for (String[] w : ws) {
            String g = w[0].equals("lm_head") ? "g_lm" : "g_" + w[0];
            String lr = w[1].chars().filter(ch -> ch == ',').count() == 3 ? "lr4" : "lr";
            String nw = "new_" + (w[0].equals("lm_head") ? "lm" : w[0]);
            s.append("let ").append(nw).append(" = ").append(w[0]).append(" - ").append(lr).append(".broadcast(").append(w[1])
                    .append(") * ").append(g).append(" in\n");
            out.add(nw);
        }
        out.add("loss");
        s.append("(").append(String.join(", ", out)).append(")\n");
        return s.toString();
    }

    /** The mean NLL alone, for validation: {@code storylm_loss(ids, targets, weights…)}. */
    public static String lossOnly(Config c, int batch) {
        StringBuilder s = new StringBuilder("// StoryLM '" + c.name() + "' validation loss, written by kina.model.StoryLm\n");
        forwardFn(s, c, batch, true);
        List<Weight> ws = inputs(s, c, batch, true);
        s.append("storylm_loss(ids, targets");
        for (Weight w : ws) s.append(", ").append(w.name());
        s.append(")\n");
        return s.toString();
    }

    /** A forward program for sampling: logits [T, V] of one sequence of ids [1, T]. */
    public static String logits(Config c) {
        StringBuilder s = new StringBuilder("// StoryLM '" + c.name() + "' logits for sampling, written by kina.model.StoryLm\n");
        forwardFn(s, c, 1, false);
        List<Weight> ws = inputs(s, c, 1, false);
        s.append("storylm_logits(ids");
        for (Weight w : ws) s.append(", ").append(w.name());
        s.append(")\n");
        return s.toString();
    }

    /** Declares the top-level inputs ids [B, T], targets [B·T] (when asked) and every weight; answers the weights. */
    private static List<Weight> inputs(StringBuilder s, Config c, int batch, boolean targets) {
        s.append("let ids = tensor<I64, [").append(batch).append(", ").append(c.seq()).append("], @host> in\n");
        if (targets) s.append("let targets = tensor<I64, [").append((long) batch * c.seq()).append("], @host> in\n");
        List<Weight> ws = weights(c);
        for (Weight w : ws) s.append("let ").append(w.name()).append(" = ").append(type(w.shape())).append(" in\n");
        return ws;
    }

    static void line(StringBuilder s, String name, String expr, String comment) {
        s.append("  let ").append(name).append(" = ").append(expr).append(" in");
        if (comment != null) s.append("  // ").append(comment);
        s.append('\n');
    }

    static String type(long... dims) {
        StringBuilder b = new StringBuilder("tensor<F32, [");
        for (int i = 0; i < dims.length; i++) b.append(i > 0 ? ", " : "").append(dims[i]);
        return b.append("], @host>").toString();
    }

    static String num(double v) {
        String s = Double.toString(v);
        return s.contains("E") ? s.replace("E", "e") : s;
    }
}
