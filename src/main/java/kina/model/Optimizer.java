package kina.model;

import java.util.List;
import java.util.Locale;

/**
 * An optimizer written as kina instructions appended after the recorded gradients (DESIGN §7):
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
     * AdamW (Loshchilov & Hutter): m' = β1·m + (1−β1)·g, v' = β2·v + (1−β2)·g², p' = p − lr·(m'·bc1 /
     * (√(v'·bc2) + ε) + wd·p), with weight decay on matrices only (rank 2), not on norm gains.
     */
    record AdamW(double beta1, double beta2, double eps, double weightDecay, double clip) implements Optimizer {
        public List<String> state() { return List.of("m", "v"); }

        public String describe() {
            return String.format(Locale.ROOT, "adamw(beta1=%s, beta2=%s, eps=%s, weight_decay=%s, clip=%s)",
                    beta1, beta2, eps, weightDecay, clip);
        }
    }

    /** Appends the clip and update lets; binds new_<w> and new_<state>_<w>, and grad_norm. */
    default void update(StringBuilder s, List<StoryLm.Weight> ws) {
        s.append("// gradient-norm clipping over every weight\n");
        String prev = null;
        for (StoryLm.Weight w : ws) {
            String sq = "(g_" + w.name() + " * g_" + w.name() + ")";
            String e = w.rank() == 2
                    ? sq + ".sum(axis=1, keepdims=true).sum(axis=0, keepdims=true)"
                    : sq + ".sum(axis=0, keepdims=true).reshape([1, 1])";
            if (prev == null) {
                top(s, "gsq_" + w.name(), e);
            } else {
                top(s, "ss_" + w.name(), e);
                top(s, "gsq_" + w.name(), prev + " + ss_" + w.name());
            }
            prev = "gsq_" + w.name();
        }
        top(s, "grad_norm", prev + ".sqrt()");
        boolean clipping = clip() > 0;
        if (clipping) {
            top(s, "clip_c", lit(clip()));
            top(s, "clip_scale", "clip_c / grad_norm.maximum(clip_c)");
        }
        for (String name : scalars()) top(s, name + "_1", name + ".reshape([1])");
        if (clipping) top(s, "clip_scale_1", "clip_scale.reshape([1])");
        s.append("// ").append(describe()).append('\n');
        for (StoryLm.Weight w : ws) {
            String sh = shape(w.shape()), r = w.rank() == 2 ? "" : "_1", n = w.name();
            String g = "g_" + n;
            if (clipping) {
                top(s, "gc_" + n, g + " * clip_scale" + r + ".broadcast(" + sh + ")");
                g = "gc_" + n;
            }
            switch (this) {
                case Sgd sgd when sgd.momentum() > 0 -> {
                    top(s, "new_buf_" + n, "buf_" + n + " * momentum" + r + ".broadcast(" + sh + ") + " + g);
                    top(s, "new_" + n, n + " - lr" + r + ".broadcast(" + sh + ") * new_buf_" + n);
                }
                case Sgd _ -> top(s, "new_" + n, n + " - lr" + r + ".broadcast(" + sh + ") * " + g);
                case AdamW a -> {
                    top(s, "new_m_" + n, "m_" + n + " * beta1" + r + ".broadcast(" + sh + ") + " + g + " * one_minus_beta1" + r + ".broadcast(" + sh + ")");
                    top(s, "new_v_" + n, "v_" + n + " * beta2" + r + ".broadcast(" + sh + ") + " + g + " * " + g + " * one_minus_beta2" + r + ".broadcast(" + sh + ")");
                    top(s, "mhat_" + n, "new_m_" + n + " * bc1" + r + ".broadcast(" + sh + ")");
                    top(s, "vhat_" + n, "new_v_" + n + " * bc2" + r + ".broadcast(" + sh + ")");
                    String step = "mhat_" + n + " / (vhat_" + n + ".sqrt() + adam_eps" + r + ".broadcast(" + sh + "))";
                    if (w.rank() == 2 && a.weightDecay() > 0) step = step + " + " + n + " * weight_decay.broadcast(" + sh + ")";
                    top(s, "upd_" + n, step);
                    top(s, "new_" + n, n + " - lr" + r + ".broadcast(" + sh + ") * upd_" + n);
                }
            }
        }
    }

    /** The [1, 1] scalars the update reads (each also gets a [1] form). */
    private List<String> scalars() {
        return switch (this) {
            case Sgd sgd when sgd.momentum() > 0 -> List.of("lr", "momentum");
            case Sgd _ -> List.of("lr");
            case AdamW _ -> List.of("lr", "bc1", "bc2", "beta1", "one_minus_beta1", "beta2", "one_minus_beta2", "adam_eps");
        };
    }

    /** The literal hyperparameters, bound before the update. */
    default void constants(StringBuilder s) {
        switch (this) {
            case Sgd sgd when sgd.momentum() > 0 -> top(s, "momentum", lit(sgd.momentum()));
            case Sgd _ -> { }
            case AdamW a -> {
                top(s, "beta1", lit(a.beta1()));
                top(s, "one_minus_beta1", lit(1 - a.beta1()));
                top(s, "beta2", lit(a.beta2()));
                top(s, "one_minus_beta2", lit(1 - a.beta2()));
                top(s, "adam_eps", lit(a.eps()));
                top(s, "weight_decay", lit(a.weightDecay()));
            }
        }
    }

    private static void top(StringBuilder s, String name, String expr) {
        s.append("let ").append(name).append(" = ").append(expr).append(" in\n");
    }

    private static String lit(double v) { return "tensor<F32, [1, 1], @host> payload { " + StoryLm.num(v) + " }"; }

    private static String shape(long[] dims) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < dims.length; i++) b.append(i > 0 ? ", " : "").append(dims[i]);
        return b.append(']').toString();
    }
}
