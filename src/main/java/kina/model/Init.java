package kina.model;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import kina.eval.Kernels;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.Shape;
import kina.ir.TensorType;

/**
 * The starting values of a fresh training run: the weights (GPT-2's initialisation: N(0, 0.02),
 * residual output projections scaled by 1/√(2·layers), norm gains 1) and the optimizer moments
 * (+0.0). Deterministic in (config, seed).
 */
public final class Init {
    private Init() {}

    /** Initial weights, F32, in {@link StoryLm#weights} order: N(0, 0.02) matrices (output projections scaled by 1/√(2·layers)), norm gains 1. */
    public static Map<String, Tensor> weights(Config c, long seed) {
        SplittableRandom rng = new SplittableRandom(Batches.mix(seed, -1));
        Map<String, Tensor> w = new LinkedHashMap<>();
        for (StoryLm.Weight wt : StoryLm.weights(c)) {
            int n = Math.toIntExact(new Shape(wt.shape()).vol());
            double[] d = new double[n];
            if (wt.rank() == 1) Arrays.fill(d, 1.0);
            else {
                double std = 0.02;
                if (wt.name().endsWith("_wo") || wt.name().endsWith("_w_down")) std /= Math.sqrt(2.0 * c.layers());
                for (int i = 0; i < n; i++) d[i] = std * gaussian(rng);
            }
            w.put(wt.name(), Tensor.ofFloats(TensorType.host(DType.F32, wt.shape()), d));
        }
        return w;
    }

    /** A fresh run's optimizer moments: +0.0 for every state and weight ({@code state_weight}), F32. */
    public static Map<String, Tensor> moments(Config c, Optimizer opt) {
        Map<String, Tensor> m = new LinkedHashMap<>();
        for (String st : opt.state())
            for (StoryLm.Weight wt : StoryLm.weights(c))
                m.put(st + "_" + wt.name(), Kernels.fill(TensorType.host(DType.F32, wt.shape()), 0.0));
        return m;
    }

    /** A standard normal draw (Box–Muller, the cosine branch). */
    private static double gaussian(SplittableRandom r) {
        double u = 1 - r.nextDouble(), v = r.nextDouble();
        return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    }
}
