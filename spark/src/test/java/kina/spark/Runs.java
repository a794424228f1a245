package kina.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import kina.eval.Tensor;
import kina.model.Checkpoint;
import kina.model.Config;
import kina.model.Corpus;
import kina.model.Engine;
import kina.model.GradientTree;
import kina.model.GradientWorkers;
import kina.model.Optimizer;
import kina.model.Progress;
import kina.model.Trainer;

/** The runs the Spark tests compare: `tiny`, M = 4 micro-batches of 2 sequences, 3 steps, a checkpoint every step. */
final class Runs {
    private Runs() {}

    static final PrintStream QUIET = new PrintStream(OutputStream.nullOutputStream());
    static final int STEPS = 3, MICRO_BATCHES = 4;

    /** A fixed 120 KB slice of the embedded corpus. */
    static Corpus slice() {
        return Corpus.of("slice", Arrays.copyOf(Corpus.embedded().bytes(), 120_000), 0.1);
    }

    /** {@code workers} null: one process (plain kina, no Spark). */
    static Trainer.Options options(Path out, Path resume, GradientWorkers.Factory workers) {
        return new Trainer.Options(Config.byName("tiny"), 8, STEPS, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0), 3e-3, 1,
                7, 2, out, STEPS, 1, 1, resume, Progress.Mode.OFF, Engine.PLAN, MICRO_BATCHES, workers);
    }

    private static int[] single;

    /** The bits of N = 1: plain kina in this process, no Spark (computed once per JVM, into a directory of its own). */
    static synchronized int[] single() {
        if (single == null) {
            try {
                Path dir = java.nio.file.Files.createTempDirectory("kina-single");
                single = bits(train(dir, null));
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        return single.clone();
    }

    static Trainer.Summary train(Path out, GradientWorkers.Factory workers) {
        return new Trainer(options(out, null, workers), slice()).run(QUIET);
    }

    /** The raw bits of a run: each step's loss, then every weight and moment of its last checkpoint (as floats). */
    static int[] bits(Trainer.Summary s) {
        Checkpoint.Loaded ck = Checkpoint.load(s.checkpoint());
        int n = s.trainCurve().size();
        for (Tensor t : ck.weights().values()) n += t.size();
        for (Tensor t : ck.moments().values()) n += t.size();
        int[] out = new int[n];
        int k = 0;
        for (double[] p : s.trainCurve()) out[k++] = Float.floatToRawIntBits((float) p[1]);
        for (Map<String, Tensor> m : List.of(ck.weights(), ck.moments()))
            for (Tensor t : m.values())
                for (double d : t.floats()) out[k++] = Float.floatToRawIntBits((float) d);
        return out;
    }

    /** Asserts two runs are the same bits, with the first differing position in the message. */
    static void assertSameBits(int[] got, int[] expected, String what) {
        assertThat(got.length).as(what + ": length").isEqualTo(expected.length);
        int first = mismatch(got, expected);
        assertThat(first).as(what + ": first differing float at %d of %d", first, got.length).isEqualTo(-1);
    }

    static int mismatch(int[] a, int[] b) { return Arrays.mismatch(a, b); }

    /** Spark workers on an existing context (left running at close), with a fault hook. */
    static GradientWorkers.Factory spark(org.apache.spark.api.java.JavaSparkContext sc, int n, SparkWorkers.Fault fault) {
        return job -> new SparkWorkers(sc, false, n, job, fault);
    }

    /** {@code inner}'s parts, left-folded into one part: the negative control (not the contract's tree). */
    static GradientWorkers.Factory leftFold(GradientWorkers.Factory inner) {
        return job -> {
            GradientWorkers w = inner.open(job);
            return new GradientWorkers() {
                public List<GradientTree.Subtree> gradients(long step, float[] params) {
                    return List.of(GradientTree.leftFold(w.gradients(step, params)));
                }

                public String describe() { return w.describe() + ", left fold"; }

                public void close() { w.close(); }
            };
        };
    }

    /** {@code inner}, except that step {@code failAt} (0-based) throws on the driver, as a lost driver would stop there. */
    static GradientWorkers.Factory driverLostAt(long failAt, GradientWorkers.Factory inner) {
        return job -> {
            GradientWorkers w = inner.open(job);
            return new GradientWorkers() {
                public List<GradientTree.Subtree> gradients(long step, float[] params) {
                    if (step == failAt) throw new IllegalStateException("the driver is lost at step " + (step + 1));
                    return w.gradients(step, params);
                }

                public String describe() { return w.describe(); }

                public void close() { w.close(); }
            };
        };
    }
}
