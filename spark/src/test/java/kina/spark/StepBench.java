package kina.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import kina.ad.TransformAd;
import kina.check.Checker;
import kina.eval.Tensor;
import kina.ir.DType;
import kina.ir.TensorType;
import kina.model.Batches;
import kina.model.Config;
import kina.model.Corpus;
import kina.model.Engine;
import kina.model.GradientTree;
import kina.model.GradientWorkers;
import kina.model.Init;
import kina.model.MicroBatchJob;
import kina.model.Optimizer;
import kina.model.ParameterLayout;
import kina.model.Rope;
import kina.model.Runner;
import kina.model.StoryLm;
import kina.syntax.Parser;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * What a Spark job costs per step in local mode (docs/distributed.md), as whole steps (gradients,
 * then the update program) at fixed parameters: the one-program step of the plain trainer, the
 * micro-batch tree in this process, and the tree as one Spark job over N = 1, 2, 4 tasks on
 * {@code local[4]}. The variants take turns step by step, so a busy host slows them alike;
 * medians in ms and tokens/s. Not a test: run by hand (see docs/distributed.md),
 * {@code java … kina.spark.StepBench CONFIG BATCH M STEPS}.
 */
public final class StepBench {
    private StepBench() {}

    public static void main(String[] args) {
        Config c = Config.byName(args.length > 0 ? args[0] : "tiny");
        int batch = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        int m = args.length > 2 ? Integer.parseInt(args[2]) : 4;
        int steps = args.length > 3 ? Integer.parseInt(args[3]) : 12;
        int warm = Math.max(3, steps / 3);
        Optimizer opt = new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0);
        Corpus corpus = Corpus.embedded();
        MicroBatchJob job = MicroBatchJob.of(c, corpus, batch, m, 1);
        ParameterLayout layout = new ParameterLayout(c);
        Map<String, Tensor> weights = Init.weights(c, 1);
        float[] params = layout.flatten(weights::get);
        Map<String, Tensor> fixed = new HashMap<>(weights);      // weights, zero moments, step scalars
        for (String st : opt.state())
            for (StoryLm.Weight w : StoryLm.weights(c))
                fixed.put(st + "_" + w.name(), Tensor.ofFloats(TensorType.host(DType.F32, w.shape()),
                        new double[Math.toIntExact(new kina.ir.Shape(w.shape()).vol())]));
        for (String s : new String[] {"lr", "bc1", "bc2"}) fixed.put(s, Tensor.ofFloats(TensorType.host(DType.F32, 1, 1), new double[] {1e-3}));
        Runner whole = Engine.PLAN.compile(compile(StoryLm.trainStep(c, batch, opt)));
        Runner update = Engine.PLAN.compile(compile(StoryLm.updateStep(c, opt, job.scale())));
        Batches train = corpus.trainBatches(batch, c.seq(), 1);
        Tensor[] rope = Rope.tables(c);

        JavaSparkContext sc = new JavaSparkContext(new SparkConf().setMaster("local[4]").setAppName("kina StepBench")
                .set("spark.ui.enabled", "false").set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1"));
        sc.setLogLevel("WARN");
        Map<String, GradientWorkers> trees = new LinkedHashMap<>();
        trees.put("tree, this process", GradientWorkers.inProcess(Engine.PLAN).open(job));
        for (int n = 1; n <= Math.min(4, m); n *= 2)
            trees.put("tree, spark " + n + " task" + (n == 1 ? "" : "s"), new SparkWorkers(sc, false, n, job, SparkWorkers.Fault.NONE));

        Map<String, Supplier<Void>> variants = new LinkedHashMap<>();
        long[] step = {0};
        variants.put("one program", () -> {
            Map<String, Tensor> in = new HashMap<>(fixed);
            Batches.tokens(train.at(step[0]), c.seq(), in);
            in.put("cos", rope[0]);
            in.put("sin", rope[1]);
            whole.run(in);
            return null;
        });
        int[][] first = {null};
        trees.forEach((name, w) -> variants.put(name, () -> {
            GradientTree.Subtree g = GradientTree.sum(w.gradients(step[0], params));
            int[] bits = new int[g.gradient().length];
            for (int i = 0; i < bits.length; i++) bits[i] = Float.floatToRawIntBits(g.gradient()[i]);
            if (first[0] == null) first[0] = bits;
            else if (!Arrays.equals(bits, first[0])) throw new IllegalStateException(name + ": other bits than the tree in this process");
            Map<String, Tensor> in = new HashMap<>(fixed);
            in.putAll(layout.tensors(g.gradient(), "gsum_"));
            update.run(in);
            return null;
        }));

        Map<String, List<Double>> ms = new LinkedHashMap<>();
        variants.keySet().forEach(k -> ms.put(k, new ArrayList<>()));
        for (int s = 0; s < warm + steps; s++) {
            step[0] = s;
            first[0] = null;
            for (var e : variants.entrySet()) {
                long t0 = System.nanoTime();
                e.getValue().get();
                if (s >= warm) ms.get(e.getKey()).add((System.nanoTime() - t0) / 1e6);
            }
        }
        long tokens = (long) batch * c.seq();
        double one = median(ms.get("one program")), tree = median(ms.get("tree, this process"));
        System.out.printf(Locale.ROOT, "%s, batch %d = %s; whole steps at fixed parameters, %d timed after %d (medians; %d processors)%n",
                c.name(), batch, job.describe(), steps, warm, Runtime.getRuntime().availableProcessors());
        for (var e : ms.entrySet()) {
            double med = median(e.getValue());
            System.out.printf(Locale.ROOT, "  %-22s %8.1f ms/step %8.0f tok/s   vs one program %+8.1f ms   vs the tree here %+8.1f ms%n",
                    e.getKey(), med, tokens / (med / 1e3), med - one, med - tree);
        }
        trees.values().forEach(GradientWorkers::close);
        sc.stop();
    }

    static kina.ir.Program compile(kina.ir.Program checked) { return TransformAd.transform(checked); }

    static double median(List<Double> xs) {
        double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    }
}
