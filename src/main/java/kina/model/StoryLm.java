package kina.model;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import kina.ad.ProgramBuilder;
import kina.ad.ProgramBuilder.Param;
import kina.ir.DType;
import kina.ir.Instr.AttnOpts;
import kina.ir.Payload;
import kina.ir.Perm;
import kina.ir.Program;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Var;

/**
 * Writes a StoryLM decoder as a kina program: token embedding gather, per layer a
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

    /** F32 host tensor type of these dims. */
    static TensorType f32(long... dims) { return TensorType.host(DType.F32, dims); }

    private static TensorType ids(int batch, int t) { return TensorType.host(DType.I64, batch, t); }

    /** What the forward fn answers: the mean NLL, the summed NLL (nats), the logits, or the logits and every layer's keys and values. */
    enum Output { LOSS, SUMMED, LOGITS, PREFILL }

    /**
     * The forward fn, bound by {@code b}: {@code storylm_loss(ids, targets, weights…)} (mean NLL,
     * [1, 1], or with {@code SUMMED} the summed NLL in nats), {@code storylm_logits(ids,
     * weights…)} ([B·T, V]) or {@code storylm_prefill(ids, weights…)} (logits and, per layer, the rotated keys and the values [T, KV·hd], batch 1).
     */
    static Var forwardFn(ProgramBuilder b, Config c, int batch, Output what) { return forwardFn(b, c, batch, what, 0); }

    /** The input of a train step with dropout: one key per dropout site, I64 [sites, 2] ({@link #dropoutSites}). */
    public static final String DROPOUT_KEYS = "dropout_keys";

    /**
     * The dropout sites of {@code c}, in order: per layer, the attention's output projection, then
     * the MLP's output (when it has one), each before it joins the residual stream (GPT-2's
     * resid_dropout). Site i takes row i of {@link #DROPOUT_KEYS}.
     */
    public static int dropoutSites(Config c) { return c.layers() * (c.mlpHidden() > 0 ? 2 : 1); }

    /**
     * {@link #forwardFn} with dropout at {@code rate} (0: none) at each of the
     * {@link #dropoutSites}, keyed by the body's input {@link #DROPOUT_KEYS} (a constant: no cotangent).
     */
    static Var forwardFn(ProgramBuilder b, Config c, int batch, Output what, double rate) {
        boolean loss = what == Output.LOSS || what == Output.SUMMED;
        int t = c.seq(), d = c.dModel(), hd = c.headDim(), h = c.heads(), kv = c.kvHeads();
        long n = (long) batch * t;
        List<Weight> ws = weights(c);
        List<Param> ps = new ArrayList<>();
        ps.add(new Param("ids", ids(batch, t)));
        if (loss) ps.add(new Param("targets", TensorType.host(DType.I64, n)));
        for (Weight w : ws) ps.add(new Param(w.name(), f32(w.shape())));
        List<Var> cache = new ArrayList<>();
        return b.fn(switch (what) { case LOSS, SUMMED -> "storylm_loss"; case LOGITS -> "storylm_logits"; case PREFILL -> "storylm_prefill"; }, ps, p -> {
            Map<String, Var> w = new HashMap<>();
            for (int i = 0; i < ws.size(); i++) w.put(ws.get(i).name(), p.get(p.size() - ws.size() + i));
            // The RoPE tables are inputs of the body, not parameters: constants, not differentiated.
            Var cos = b.input("cos", f32(t, hd / 2)), sin = b.input("sin", f32(t, hd / 2));
            Var keys = rate > 0 ? b.input(DROPOUT_KEYS, TensorType.host(DType.I64, dropoutSites(c), 2)) : null;
            Var x = b.let("x0", b.gather(w.get("emb"), p.getFirst()));                  // [B, T, D]
            int step = 0, site = 0;
            for (int l = 0; l < c.layers(); l++) {
                String pre = "l" + l + "_";
                Var hn = b.let(pre + "h", b.rmsnorm(x, Optional.of(w.get(pre + "attn_norm")), Optional.empty(), c.eps()));
                Var h2 = b.let(pre + "h2", b.reshape(hn, new Shape(n, d)));
                Map<String, Var> qkv = new HashMap<>();
                for (String m : new String[] {"q", "k", "v"}) {
                    int width = (m.equals("q") ? h : kv) * hd;
                    Var m2 = b.let(pre + m + "2", b.matmul(h2, w.get(pre + "w" + m)));
                    qkv.put(m, b.let(pre + m, b.reshape(m2, new Shape(batch, t, width))));
                }
                Var qr = b.let(pre + "qr", b.rope(qkv.get("q"), cos, sin, h, 0, 0));   // half-split pairs
                Var kr = b.let(pre + "kr", b.rope(qkv.get("k"), cos, sin, kv, 0, 0));
                if (what == Output.PREFILL) {                                            // the decode step's layouts
                    cache.add(b.let(pre + "k_cache", b.transpose(b.reshape(kr, new Shape(t, kv, hd)), new Perm(1, 2, 0))));           // [KV, hd, T]
                    cache.add(b.let(pre + "v_cache", b.transpose(b.reshape(qkv.get("v"), new Shape(t, kv, hd)), new Perm(1, 0, 2)))); // [KV, T, hd]
                }
                Var att = b.let(pre + "att", b.attention(qr, kr, qkv.get("v"), Optional.empty(), causal(c, 0)));
                Var att2 = b.let(pre + "att2", b.reshape(att, new Shape(n, (long) h * hd)));
                Var o2 = b.let(pre + "o2", b.matmul(att2, w.get(pre + "wo")));
                Var o = dropout(b, keys, site++, rate, b.let(pre + "o", b.reshape(o2, new Shape(batch, t, d))));
                x = b.let("x" + (++step), b.add(x, o));                                  // residual
                if (c.mlpHidden() > 0) {
                    Var m = b.let(pre + "m", b.rmsnorm(x, Optional.of(w.get(pre + "mlp_norm")), Optional.empty(), c.eps()));
                    Var m2 = b.let(pre + "m2", b.reshape(m, new Shape(n, d)));
                    Var gate = b.let(pre + "gate", b.matmul(m2, w.get(pre + "w_gate")));
                    Var up = b.let(pre + "up", b.matmul(m2, w.get(pre + "w_up")));
                    Var act = b.let(pre + "act", b.swiglu(gate, up));                    // silu(gate) * up
                    Var down2 = b.let(pre + "down2", b.matmul(act, w.get(pre + "w_down")));
                    Var down = dropout(b, keys, site++, rate, b.let(pre + "down", b.reshape(down2, new Shape(batch, t, d))));
                    x = b.let("x" + (++step), b.add(x, down));                           // residual
                }
            }
            Var xf = b.let("xf", b.rmsnorm(x, Optional.of(w.get("final_norm")), Optional.empty(), c.eps()));
            Var xf2 = b.let("xf2", b.reshape(xf, new Shape(n, d)));
            Var logits = b.let("logits", b.matmul(xf2, w.get("lm_head")));               // [B·T, V]
            if (what == Output.PREFILL) {
                List<Var> out = new ArrayList<>(List.of(logits));
                out.addAll(cache);
                return b.tuple(out);
            }
            if (!loss) return logits;
            Var lp = b.let("lp", b.logSoftmax(logits, 1));
            Var picked = b.let("picked", b.takeAlongAxis(lp, p.get(1), 1));              // log-likelihood of each next token
            Var nll = b.let("nll", b.neg(picked));
            Var total = b.let("total", b.sum(nll, 0, true));
            Var total2 = b.let("total2", b.reshape(total, new Shape(1, 1)));
            if (what == Output.SUMMED) return total2;                                   // summed NLL, nats
            Var invN = b.let("inv_n", b.literal(f32(1, 1), new Payload(1.0 / n)));
            return b.let("loss", b.mul(total2, invN));                                   // mean NLL, nats per token
        });
    }

    /** x, or x with dropout at {@code rate} keyed by row {@code site} of {@code keys} (named after x: {@code l0_o_drop}). */
    private static Var dropout(ProgramBuilder b, Var keys, int site, double rate, Var x) {
        if (keys == null) return x;
        Var key = b.let(x.name() + "_key", b.reshape(b.slice(keys, 0, site, 1), Shape.of(2)));
        return b.let(x.name() + "_drop", b.dropout(x, key, rate));
    }

    /** Causal grouped-query attention of {@code c}, scale 1/√hd, queries starting at position {@code start}. */
    static AttnOpts causal(Config c, int start) {
        return new AttnOpts(c.heads(), c.kvHeads(), Double.NaN, 0.0, 0, 0, start);
    }

    /** A header for the printed train step: the config's sizes, the batch and the optimizer, as comment lines. */
    public static String header(Config c, int batch, Optimizer opt) {
        return String.format(Locale.ROOT,
                "// StoryLM '%s' training step, built by kina.model.StoryLm: vocab %d, d_model %d, %d heads (%d kv) of %d,%n"
                        + "// seq %d, %d layers, SwiGLU hidden %d, batch %d; optimizer %s.%n",
                c.name(), c.vocab(), c.dModel(), c.heads(), c.kvHeads(), c.headDim(), c.seq(), c.layers(), c.mlpHidden(),
                batch, opt.describe());
    }

    /**
     * The whole training step: forward, transform_ad's gradients, gradient-norm clipping and the
     * optimizer update. Inputs: ids, targets, cos, sin, each weight, the optimizer state (see
     * {@link Optimizer#state}), and the step scalars {@code lr}, {@code bc1}, {@code bc2} ([1, 1]).
     * Result: (new weights…, new state…, loss, grad_norm). Checked, before transform_ad.
     */
    public static Program trainStep(Config c, int batch, Optimizer opt) { return trainStep(c, batch, opt, 0); }

    /** {@link #trainStep} with dropout at {@code rate} (0: none), keyed by the input {@link #DROPOUT_KEYS}. */
    public static Program trainStep(Config c, int batch, Optimizer opt, double rate) {
        if (c.toy()) throw new ConfigError(c.name(), "the toy config has its own program (examples/storylm0_train_step.kina); train on text needs vocab 256");
        ProgramBuilder b = new ProgramBuilder("<storylm " + c.name() + " train step>");
        Var f = forwardFn(b, c, batch, Output.LOSS, rate);
        Inputs in = inputs(b, c, batch, true);
        Map<String, List<Var>> state = new LinkedHashMap<>();
        for (String st : opt.state()) {
            List<Var> vs = new ArrayList<>();
            for (Weight w : in.weights()) vs.add(b.input(st + "_" + w.name(), f32(w.shape())));
            state.put(st, vs);
        }
        Map<String, Var> scalars = new LinkedHashMap<>();
        for (String s : new String[] {"lr", "bc1", "bc2"}) scalars.put(s, b.input(s, f32(1, 1)));
        scalars.putAll(opt.constants(b));
        List<String> names = new ArrayList<>(List.of("loss"));
        for (Weight w : in.weights()) names.add("g_" + w.name());
        List<Var> lossAndGrads = b.let(names, b.handle(f, in.args()));
        List<Var> out = new ArrayList<>(opt.update(b, in.weights(), in.vars(), lossAndGrads.subList(1, lossAndGrads.size()), state, scalars));
        out.add(out.size() - 1, lossAndGrads.getFirst());     // (new weights…, new state…, loss, grad_norm)
        return b.build(b.tuple(out));
    }

    /**
     * The gradient half of a large-batch step ({@link MicroBatchJob}): one micro-batch of
     * {@code rows} sequences, differentiated on its <em>summed</em> NLL (so micro-batches add up
     * to the batch's sum). Inputs: ids [rows, T], targets [rows·T] (I64), cos, sin, each weight.
     * Result: (loss_sum [1, 1], g_w… in {@link #weights} order), nothing scaled.
     */
    public static Program gradientStep(Config c, int rows) {
        if (c.toy()) throw new ConfigError(c.name(), "the toy config has its own program (examples/storylm0_train_step.kina); train on text needs vocab 256");
        ProgramBuilder b = new ProgramBuilder("<storylm " + c.name() + " micro-batch gradient>");
        Var f = forwardFn(b, c, rows, Output.SUMMED);
        Inputs in = inputs(b, c, rows, true);
        List<String> names = new ArrayList<>(List.of("loss_sum"));
        for (Weight w : in.weights()) names.add("g_" + w.name());
        return b.build(b.tuple(b.let(names, b.handle(f, in.args()))));
    }

    /**
     * The update half of a large-batch step: the summed gradients {@code gsum_w} (one per weight,
     * the micro-batch tree's result) scaled once by {@code scale}, then gradient-norm clipping and
     * the optimizer, as in {@link #trainStep}. Inputs: each weight, the optimizer state, each
     * {@code gsum_w}, and {@code lr}, {@code bc1}, {@code bc2} ([1, 1]). Result: (new weights…,
     * new state…, grad_norm), the order of {@link #trainStep} without its loss. Checked.
     */
    public static Program updateStep(Config c, Optimizer opt, double scale) {
        ProgramBuilder b = new ProgramBuilder("<storylm " + c.name() + " update>");
        List<Weight> ws = weights(c);
        List<Var> params = new ArrayList<>(), gsum = new ArrayList<>();
        for (Weight w : ws) params.add(b.input(w.name(), f32(w.shape())));
        Map<String, List<Var>> state = new LinkedHashMap<>();
        for (String st : opt.state()) {
            List<Var> vs = new ArrayList<>();
            for (Weight w : ws) vs.add(b.input(st + "_" + w.name(), f32(w.shape())));
            state.put(st, vs);
        }
        for (Weight w : ws) gsum.add(b.input("gsum_" + w.name(), f32(w.shape())));
        Map<String, Var> scalars = new LinkedHashMap<>();
        for (String s : new String[] {"lr", "bc1", "bc2"}) scalars.put(s, b.input(s, f32(1, 1)));
        Var k = b.let("grad_scale", b.literal(f32(1, 1), new Payload(scale)));
        Var k1 = b.let("grad_scale_1", b.reshape(k, new Shape(1)));
        List<Var> grads = new ArrayList<>();
        for (int i = 0; i < ws.size(); i++) {
            Weight w = ws.get(i);
            grads.add(b.let("g_" + w.name(), b.mul(gsum.get(i), b.broadcast(w.rank() == 2 ? k : k1, new Shape(w.shape())))));
        }
        scalars.putAll(opt.constants(b));
        return b.build(b.tuple(opt.update(b, ws, params, grads, state, scalars)));
    }

    /**
     * StoryLM-0, the toy decoder (vocab 8, width 4, 4 positions, 2 heads), one operator per let
     * (no norm, residual or MLP; heads split by reshape + transpose; an additive mask [1, 1, T, T]
     * and a scale [1, 1, 1, 1] reaching the scores through same-rank broadcasts), composed with the
     * mean next-token NLL and an SGD step on every floating weight, in one program. Inputs: token_ids,
     * targets [1, T] (I64), the 8 weights, lr [1, 1]. Result: (new weights…, loss). The same program
     * as examples/storylm0_train_step.kina.
     */
    public static Program toyTrainStep(Config c) {
        int v = c.vocab(), d = c.dModel(), h = c.heads(), hd = c.headDim(), t = c.seq();
        ProgramBuilder b = new ProgramBuilder("<storylm0 train step>");
        String[] names = {"emb", "mask", "scale", "wq", "wk", "wv", "wo", "lm_head"};
        long[][] shapes = {{v, d}, {1, 1, t, t}, {1, 1, 1, 1}, {d, d}, {d, d}, {d, d}, {d, d}, {d, v}};
        List<Param> ps = new ArrayList<>(List.of(new Param("token_ids", ids(1, t)), new Param("targets", ids(1, t))));
        for (int k = 0; k < names.length; k++) ps.add(new Param(names[k], f32(shapes[k])));
        Shape bthd = new Shape(1, t, h, hd), scores = new Shape(1, h, t, t);
        Var f = b.fn("storylm0_loss", ps, p -> {
            Map<String, Var> w = new HashMap<>();
            for (int k = 0; k < names.length; k++) w.put(names[k], p.get(2 + k));
            Var x = b.let("x", b.gather(w.get("emb"), p.get(0)));                         // [1, T, D]
            for (String m : new String[] {"wq", "wk", "wv"}) w.put(m + "3", b.let(m + "3", b.reshape(w.get(m), new Shape(1, d, d))));
            Map<String, Var> qkv = new HashMap<>();
            for (String m : new String[] {"q", "k", "v"}) qkv.put(m, b.let(m, b.matmul(x, w.get("w" + m + "3"))));
            for (String m : new String[] {"q", "k", "v"}) {
                Var m4 = b.let(m + "4", b.reshape(qkv.get(m), bthd));                       // [B, T, H, hd]
                qkv.put(m + "h", b.let(m + "h", b.transpose(m4, new Perm(0, 2, 1, 3))));   // [B, H, T, hd]
            }
            Var kt = b.let("kt", b.transpose(qkv.get("kh"), new Perm(0, 1, 3, 2)));
            Var s = b.let("s", b.matmul(qkv.get("qh"), kt));                               // scores [B, H, T, T]
            Var scaleB = b.let("scale_b", b.broadcast(w.get("scale"), scores));
            Var ss = b.let("ss", b.mul(s, scaleB));
            Var maskB = b.let("mask_b", b.broadcast(w.get("mask"), scores));              // 0 on and below the diagonal, -1e9 above
            Var sm = b.let("sm", b.add(ss, maskB));
            Var pr = b.let("p", b.softmax(sm, 3));
            Var a = b.let("a", b.matmul(pr, qkv.get("vh")));
            Var at = b.let("at", b.transpose(a, new Perm(0, 2, 1, 3)));
            Var m = b.let("m", b.reshape(at, new Shape(1, t, d)));                         // heads concatenated
            Var wo3 = b.let("wo3", b.reshape(w.get("wo"), new Shape(1, d, d)));
            Var o = b.let("o", b.matmul(m, wo3));
            Var lm3 = b.let("lm3", b.reshape(w.get("lm_head"), new Shape(1, d, v)));
            Var logits = b.let("logits", b.matmul(o, lm3));                                // [1, T, V]
            Var lp = b.let("lp", b.logSoftmax(logits, 2));
            Var picked = b.let("picked", b.takeAlongAxis(lp, p.get(1), 2));
            Var nll = b.let("nll", b.neg(picked));
            Var tot = b.let("tot", b.sum(nll, 1, true));
            Var invT = b.let("inv_t", b.literal(f32(1, 1), new Payload(1.0 / t)));
            return b.let("loss", b.mul(tot, invT));                                        // mean NLL
        });
        List<Var> args = new ArrayList<>(List.of(b.input("token_ids", ids(1, t)), b.input("targets", ids(1, t))));
        for (int k = 0; k < names.length; k++) args.add(b.input(names[k], f32(shapes[k])));
        Var lr = b.input("lr", f32(1, 1));
        List<Var> r = b.let(List.of("loss", "g_emb", "g_mask", "g_scale", "g_wq", "g_wk", "g_wv", "g_wo", "g_lm"),
                b.handle(f, args));
        Var lr4 = b.let("lr4", b.reshape(lr, new Shape(1, 1, 1, 1)));
        List<Var> out = new ArrayList<>();
        for (int k = 0; k < names.length; k++) {
            String nw = "new_" + (names[k].equals("lm_head") ? "lm" : names[k]);
            Var step = b.mul(b.broadcast(shapes[k].length == 4 ? lr4 : lr, new Shape(shapes[k])), r.get(1 + k));
            out.add(b.let(nw, b.sub(args.get(2 + k), step)));
        }
        out.add(r.getFirst());
        return b.build(b.tuple(out));
    }

    /** The mean NLL alone, for validation: {@code storylm_loss(ids, targets, weights…)}. */
    public static Program lossOnly(Config c, int batch) {
        ProgramBuilder b = new ProgramBuilder("<storylm " + c.name() + " loss>");
        Var f = forwardFn(b, c, batch, Output.LOSS);
        return b.build(b.call(f, inputs(b, c, batch, true).args()));
    }

    /** A forward program for sampling: logits [T, V] of one sequence of ids [1, T]. */
    public static Program logits(Config c) {
        ProgramBuilder b = new ProgramBuilder("<storylm " + c.name() + " logits>");
        Var f = forwardFn(b, c, 1, Output.LOGITS);
        return b.build(b.call(f, inputs(b, c, 1, false).args()));
    }

    /**
     * The window program that fills a KV cache: for ids [1, T], the logits [T, V] and per layer
     * {@code l<k>_k_cache} (the rotated keys, transposed: [KV, hd, T]) and {@code l<k>_v_cache} (the
     * values: [KV, T, hd]), as {@link #decodeStep} keeps them; the same arithmetic as {@link #logits}.
     */
    public static Program prefill(Config c) {
        ProgramBuilder b = new ProgramBuilder("<storylm " + c.name() + " prefill>");
        Var f = forwardFn(b, c, 1, Output.PREFILL);
        return b.build(b.call(f, inputs(b, c, 1, false).args()));
    }

    /**
     * One decode step against a KV cache of the config's seq positions L: the logits [1, V] of one
     * new token at position P, and every layer's cache with position P set to its key and value.
     * Inputs: {@code id} [1] (I64), {@code cos}, {@code sin} [1, hd/2] (row P of the RoPE tables),
     * {@code mask} [1, L] (0 at positions ≤ P, −1e9 after), {@code onehot} [1, L] (1 at P, else 0),
     * and {@code l<k>_k_cache} [KV, hd, L] (keys, transposed), {@code l<k>_v_cache} [KV, L, hd].
     * The weights are literals of the program (given once: an input would be copied into the plan
     * at every step, which on medium cost more than the step). Result: (logits, l0_k_cache',
     * l0_v_cache', …), the caches updated in place by the plan when carried.
     *
     * <p>The scores are written in the vocabulary: per kv group q·K by matmul (one fma chain from
     * −0.0, as attention's), × 1/√hd, + mask. The online softmax and the product with V are the
     * attention instruction's own, run on those scores: one unit query row (1 at each head's feature
     * 0) against keys whose feature 0 is the score and the rest 0, at scale 1 and start L − 1, so
     * each score it computes is the one given (fma(1, s, −0.0) = s, then exact zeros). Its blocks are
     * the window's; the masked positions (−1e9) raise no block's maximum and add exact zeros to the
     * sum and the output, so the logits equal the window program's row P bit for bit. The new key and value go
     * in as cache·(1 − onehot) + new·onehot, elementwise (exact: a product by 1 or 0, then a sum
     * with ±0): the plan has native kernels for that, where set_rows would take its generic one.
     */
    public static Program decodeStep(Config c, Map<String, kina.eval.Tensor> weights) {
        int l = c.seq(), hd = c.headDim(), h = c.heads(), kv = c.kvHeads(), g = c.groups();
        ProgramBuilder b = new ProgramBuilder("<storylm " + c.name() + " decode step>");
        Var id = b.input("id", TensorType.host(DType.I64, 1));
        Var cos = b.input("cos", f32(1, hd / 2)), sin = b.input("sin", f32(1, hd / 2));
        Var mask = b.input("mask", f32(1, l));
        Var onehot = b.input("onehot", f32(1, l));
        Map<String, Var> w = new HashMap<>();
        for (Weight wt : weights(c)) {
            kina.eval.Tensor t = weights.get(wt.name());
            if (t == null || !t.type().equals(f32(wt.shape()))) throw new IllegalArgumentException("weight " + wt.name() + " missing or not " + f32(wt.shape()));
            w.put(wt.name(), b.let(wt.name(), b.literal(t.type(), new Payload(t.floats()))));
        }
        Shape scores = new Shape(kv, g, l), kShape = new Shape(kv, hd, l), vShape = new Shape(kv, l, hd);
        List<Var> caches = new ArrayList<>();
        for (int k = 0; k < c.layers(); k++) {
            caches.add(b.input("l" + k + "_k_cache", f32(kShape.dims())));
            caches.add(b.input("l" + k + "_v_cache", f32(vShape.dims())));
        }
        Var alpha = b.let("alpha", b.literal(f32(1, 1, 1), new Payload(1.0 / StrictMath.sqrt(hd))));
        Var alphaB = b.let("alpha_b", b.broadcast(alpha, scores));
        Var maskB = b.let("mask_b", b.broadcast(b.reshape(mask, new Shape(1, 1, l)), scores));
        Var keep = b.let("keep", b.sub(b.fill(f32(1, l), 1.0), onehot));
        Var keepK = b.let("keep_k", b.broadcast(b.reshape(keep, new Shape(1, 1, l)), kShape));
        Var putK = b.let("put_k", b.broadcast(b.reshape(onehot, new Shape(1, 1, l)), kShape));
        Var keepV = b.let("keep_v", b.broadcast(b.reshape(keep, new Shape(1, l, 1)), vShape));
        Var putV = b.let("put_v", b.broadcast(b.reshape(onehot, new Shape(1, l, 1)), vShape));
        Var x = b.let("x0", b.gather(w.get("emb"), id));                                       // [1, D]
        double[] first = new double[hd], unit = new double[h * hd];
        first[0] = 1;
        for (int hh = 0; hh < h; hh++) unit[hh * hd] = 1;
        Shape scoreKeys = new Shape(l, h, hd);
        Var firstB = b.let("first_b", b.broadcast(b.literal(f32(1, 1, hd), new Payload(first)), scoreKeys));
        Var unitQ = b.let("unit_q", b.literal(f32(1, (long) h * hd), new Payload(unit)));
        // one query row attending all L keys (start L − 1), kv heads = heads, scale 1: its scores are the s given as keys
        AttnOpts scoreOnly = new AttnOpts(h, h, 1.0, 0.0, 0, 0, l - 1);
        List<Var> out = new ArrayList<>();
        int step = 0;
        for (int k = 0; k < c.layers(); k++) {
            String pre = "l" + k + "_";
            Var hn = b.let(pre + "h", b.rmsnorm(x, Optional.of(w.get(pre + "attn_norm")), Optional.empty(), c.eps()));
            Var q = b.let(pre + "q", b.matmul(hn, w.get(pre + "wq")));
            Var kk = b.let(pre + "k", b.matmul(hn, w.get(pre + "wk")));
            Var v = b.let(pre + "v", b.matmul(hn, w.get(pre + "wv")));
            Var qr = b.let(pre + "qr", b.rope(q, cos, sin, h, 0, 0));
            Var kr = b.let(pre + "kr", b.rope(kk, cos, sin, kv, 0, 0));
            Var kNew = b.broadcast(b.reshape(kr, new Shape(kv, hd, 1)), kShape);
            Var kc = b.let(pre + "k_cache_new", b.add(b.mul(caches.get(2 * k), keepK), b.mul(kNew, putK)));
            Var vNew = b.broadcast(b.reshape(v, new Shape(kv, 1, hd)), vShape);
            Var vc = b.let(pre + "v_cache_new", b.add(b.mul(caches.get(2 * k + 1), keepV), b.mul(vNew, putV)));
            out.add(kc);
            out.add(vc);
            Var q3 = b.let(pre + "q3", b.reshape(qr, new Shape(kv, g, hd)));                     // query head kv·G + g
            Var s = b.let(pre + "s", b.add(b.mul(b.matmul(q3, kc), alphaB), maskB));          // [KV, G, L]
            // The scores as keys [L, H·hd] of a unit query: head h's feature 0 is s_h,j, the rest 0
            Var sk = b.let(pre + "s_keys", b.reshape(b.mul(b.broadcast(
                    b.reshape(b.transpose(b.reshape(s, new Shape(h, l)), new Perm(1, 0)), new Shape(l, h, 1)), scoreKeys), firstB),
                    new Shape(l, (long) h * hd)));
            Var vh = b.let(pre + "v_heads", b.reshape(b.transpose(b.broadcast(b.reshape(vc, new Shape(kv, 1, l, hd)), new Shape(kv, g, l, hd)),
                    new Perm(2, 0, 1, 3)), new Shape(l, (long) h * hd)));                      // [L, H·hd]: head h is kv head h / G
            Var att = b.let(pre + "att", b.attention(unitQ, sk, vh, Optional.empty(), scoreOnly));
            Var o = b.let(pre + "o", b.matmul(att, w.get(pre + "wo")));
            x = b.let("x" + (++step), b.add(x, o));
            if (c.mlpHidden() > 0) {
                Var m = b.let(pre + "m", b.rmsnorm(x, Optional.of(w.get(pre + "mlp_norm")), Optional.empty(), c.eps()));
                Var act = b.let(pre + "act", b.swiglu(b.matmul(m, w.get(pre + "w_gate")), b.matmul(m, w.get(pre + "w_up"))));
                x = b.let("x" + (++step), b.add(x, b.matmul(act, w.get(pre + "w_down"))));
            }
        }
        Var xf = b.let("xf", b.rmsnorm(x, Optional.of(w.get("final_norm")), Optional.empty(), c.eps()));
        Var logits = b.let("logits", b.matmul(xf, w.get("lm_head")));                          // [1, V]
        out.addFirst(logits);
        return b.build(b.tuple(out));
    }

    /** The top-level inputs: ids, targets (when asked) and each weight, in the forward fn's parameter order. */
    private record Inputs(List<Var> args, List<Weight> weights, List<Var> vars) {}

    /** Declares the top-level inputs ids [B, T], targets [B·T] (when asked) and every weight. */
    private static Inputs inputs(ProgramBuilder b, Config c, int batch, boolean targets) {
        List<Var> args = new ArrayList<>();
        args.add(b.input("ids", ids(batch, c.seq())));
        if (targets) args.add(b.input("targets", TensorType.host(DType.I64, (long) batch * c.seq())));
        List<Weight> ws = weights(c);
        List<Var> vars = new ArrayList<>();
        for (Weight w : ws) vars.add(b.input(w.name(), f32(w.shape())));
        args.addAll(vars);
        return new Inputs(List.copyOf(args), ws, List.copyOf(vars));
    }
}
