package kina.model;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import kina.ad.ProgramBuilder;
import kina.ir.DType;
import kina.ir.Payload;
import kina.ir.Shape;
import kina.ir.TensorType;
import kina.ir.Var;

/**
 * An optimizer written as kina instructions appended after the recorded gradients:
 * gradient-norm clipping, then SGD (optionally with momentum) or AdamW with bias correction and
 * decoupled weight decay. Hyperparameters are F32 literals; the step-dependent scalars are inputs
 * of the step: {@code lr} (this step's learning rate), {@code bc1 = 1/(1−β1^t)} and
 * {@code bc2 = 1/(1−β2^t)} (t = step + 1), all [1, 1].
 */
public sealed interface Optimizer {

    /** The names of the per-weight state tensors, in the step's input and result order. */
    List<String> state();

    /** One line for logs and the checkpoint. */
    String describe();

    /** Global gradient-norm clip (≤ 0: off; grad_norm is still computed). */
    double clip();

    /**
     * SGD: p' = p − lr·g, or with momentum μ > 0: buf' = μ·buf + g, p' = p − lr·buf'.
     */
    record Sgd(double momentum, double clip) implements Optimizer {
        public List<String> state() { return momentum > 0 ? List.of("buf") : List.of(); }

        public String describe() {
            return String.format(Locale.ROOT, "sgd(momentum=%s, clip=%s)", momentum, clip);
        }
    }

    /**
     * AdamW (Loshchilov and Hutter): m' = β1·m + (1−β1)·g, v' = β2·v + (1−β2)·g², p' = p − lr·(m'·bc1 /
     * (√(v'·bc2) + ε) + wd·p), with weight decay on matrices only (rank 2), not on norm gains.
     */
    record AdamW(double beta1, double beta2, double eps, double weightDecay, double clip) implements Optimizer {
        public List<String> state() { return List.of("m", "v"); }

        public String describe() {
            return String.format(Locale.ROOT, "adamw(beta1=%s, beta2=%s, eps=%s, weight_decay=%s, clip=%s)",
                    beta1, beta2, eps, weightDecay, clip);
        }
    }

    /**
     * Binds the clip and update lets with {@code b}: {@code grad_norm}, then per weight
     * {@code new_<w>} and {@code new_<state>_<w>}. {@code params}, {@code grads} and each list of
     * {@code state} follow {@code ws}; {@code scalars} holds lr, bc1, bc2 and {@link #constants}'
     * values. Answers (new weights…, new state… state by state, grad_norm).
     */
    default List<Var> update(ProgramBuilder b, List<StoryLm.Weight> ws, List<Var> params, List<Var> grads,
                             Map<String, List<Var>> state, Map<String, Var> scalars) {
        // gradient-norm clipping over every weight
        Var sumSq = null;
        for (int i = 0; i < ws.size(); i++) {
            String n = ws.get(i).name();
            Var sq = b.mul(grads.get(i), grads.get(i));
            Var e = ws.get(i).rank() == 2 ? b.sum(b.sum(sq, 1, true), 0, true) : b.reshape(b.sum(sq, 0, true), new Shape(1, 1));
            sumSq = sumSq == null ? b.let("gsq_" + n, e) : b.let("gsq_" + n, b.add(sumSq, b.let("ss_" + n, e)));
        }
        Var gradNorm = b.let("grad_norm", b.sqrt(sumSq));
        boolean clipping = clip() > 0;
        Var clipScale = null;
        if (clipping) {
            Var c = b.let("clip_c", literal(b, clip()));
            clipScale = b.let("clip_scale", b.div(c, b.maximum(gradNorm, c)));
        }
        // rank-1 weights (norm gains) read each [1, 1] scalar through a [1] form
        Map<String, Var> one = new HashMap<>();
        for (String name : scalars()) one.put(name, b.let(name + "_1", b.reshape(scalars.get(name), new Shape(1))));
        if (clipping) one.put("clip_scale", b.let("clip_scale_1", b.reshape(clipScale, new Shape(1))));
        Map<String, Var> two = new HashMap<>(scalars);
        if (clipping) two.put("clip_scale", clipScale);
        List<Var> newWeights = new ArrayList<>();
        Map<String, List<Var>> newState = new LinkedHashMap<>();
        for (String st : state()) newState.put(st, new ArrayList<>());
        for (int i = 0; i < ws.size(); i++) {
            StoryLm.Weight w = ws.get(i);
            String n = w.name();
            Shape sh = new Shape(w.shape());
            Map<String, Var> k = w.rank() == 2 ? two : one;
            Function<String, Var> bc = name -> b.broadcast(k.get(name), sh);
            Var p = params.get(i), g = grads.get(i);
            if (clipping) g = b.let("gc_" + n, b.mul(g, bc.apply("clip_scale")));
            switch (this) {
                case Sgd sgd when sgd.momentum() > 0 -> {
                    Var buf = b.let("new_buf_" + n, b.add(b.mul(state.get("buf").get(i), bc.apply("momentum")), g));
                    newState.get("buf").add(buf);
                    newWeights.add(b.let("new_" + n, b.sub(p, b.mul(bc.apply("lr"), buf))));
                }
                case Sgd _ -> newWeights.add(b.let("new_" + n, b.sub(p, b.mul(bc.apply("lr"), g))));
                case AdamW a -> {
                    Var m = b.let("new_m_" + n, b.add(b.mul(state.get("m").get(i), bc.apply("beta1")), b.mul(g, bc.apply("one_minus_beta1"))));
                    Var v = b.let("new_v_" + n, b.add(b.mul(state.get("v").get(i), bc.apply("beta2")),
                            b.mul(b.mul(g, g), bc.apply("one_minus_beta2"))));
                    newState.get("m").add(m);
                    newState.get("v").add(v);
                    Var mhat = b.let("mhat_" + n, b.mul(m, bc.apply("bc1")));
                    Var vhat = b.let("vhat_" + n, b.mul(v, bc.apply("bc2")));
                    Var step = b.div(mhat, b.add(b.sqrt(vhat), bc.apply("adam_eps")));
                    if (w.rank() == 2 && a.weightDecay() > 0) step = b.add(step, b.mul(p, b.broadcast(scalars.get("weight_decay"), sh)));
                    Var upd = b.let("upd_" + n, step);
                    newWeights.add(b.let("new_" + n, b.sub(p, b.mul(bc.apply("lr"), upd))));
                }
            }
        }
        List<Var> out = new ArrayList<>(newWeights);
        newState.values().forEach(out::addAll);
        out.add(gradNorm);
        return out;
    }

    /** The [1, 1] scalars the update reads (each also gets a [1] form). */
    private List<String> scalars() {
        return switch (this) {
            case Sgd sgd when sgd.momentum() > 0 -> List.of("lr", "momentum");
            case Sgd _ -> List.of("lr");
            case AdamW _ -> List.of("lr", "bc1", "bc2", "beta1", "one_minus_beta1", "beta2", "one_minus_beta2", "adam_eps");
        };
    }

    /** Binds the literal hyperparameters (before the update); answers them by name. */
    default Map<String, Var> constants(ProgramBuilder b) {
        Map<String, Var> m = new LinkedHashMap<>();
        switch (this) {
            case Sgd sgd when sgd.momentum() > 0 -> m.put("momentum", b.let("momentum", literal(b, sgd.momentum())));
            case Sgd _ -> { }
            case AdamW a -> {
                String[] names = {"beta1", "one_minus_beta1", "beta2", "one_minus_beta2", "adam_eps", "weight_decay"};
                double[] values = {a.beta1(), 1 - a.beta1(), a.beta2(), 1 - a.beta2(), a.eps(), a.weightDecay()};
                for (int i = 0; i < names.length; i++) m.put(names[i], b.let(names[i], literal(b, values[i])));
            }
        }
        return m;
    }

    private static Var literal(ProgramBuilder b, double v) {
        return b.literal(TensorType.host(DType.F32, 1, 1), new Payload(v));
    }
}
