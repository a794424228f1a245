package kina.spark;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.stream.IntStream;
import kina.ir.KinaException;
import kina.model.GradientTree;
import kina.model.GradientWorkers;
import kina.model.MicroBatchJob;
import kina.model.ParameterLayout;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.broadcast.Broadcast;

/**
 * The gradient half of a large-batch step on Spark, with the public API only: one Spark job per
 * step. The driver broadcasts the parameters and the hash of the gradient program; partition p of
 * an N-partition RDD computes the subtree of micro-batches [p·M/N, (p+1)·M/N) with its own
 * compiled plan ({@link Tasks}); {@code collect()} answers the N parts in partition order, and the
 * trainer sums them with the same tree. Parameters and gradients travel as raw little-endian
 * float bits. Nothing depends on which task finished first (no reduce, no treeAggregate: those
 * merge in completion order), so a retried or speculative task gives the same bits.
 */
public final class SparkWorkers implements GradientWorkers {

    /**
     * What every task needs for the whole run, in one broadcast. {@code trainText}: the training
     * bytes only; {@code jobKey}: a digest of everything else here, so executors keep their compiled
     * workers for a job with the same key (a run resumed in the same JVMs) and drop them otherwise.
     */
    record JobSpec(String jobKey, String configJson, String dataName, byte[] trainText, int batch, int microBatches, long seed,
                   String programHash) implements Serializable {}

    /** What a step's tasks need: the step, the driver's program hash, the parameters as little-endian float bits. */
    record StepSpec(long step, String programHash, byte[] params) implements Serializable {}

    /**
     * Called at the start of every task with (step, partition, attempt number); it may throw to
     * fail that attempt (tests inject failures with it). Runs on the executors, so it is serializable.
     */
    @FunctionalInterface
    public interface Fault extends Serializable {
        void at(long step, int partition, int attempt);

        Fault NONE = (s, p, a) -> { };
    }

    private final JavaSparkContext sc;
    private final boolean ownsContext;
    private final String master;
    private final int n;
    private final ParameterLayout layout;
    private final Broadcast<JobSpec> jobSpec;
    private final JavaRDD<Integer> shards;
    private final Fault fault;
    private boolean closed;

    /**
     * Workers over {@code n} partitions of {@code sc} for {@code job}; stops {@code sc} at
     * {@link #close} when {@code ownsContext}. KinaException (naming --workers) unless n is a power
     * of two dividing M. Compiles the gradient program once here for its hash.
     */
    public SparkWorkers(JavaSparkContext sc, boolean ownsContext, int n, MicroBatchJob job, Fault fault) {
        job.checkWorkers(n);
        this.sc = sc;
        this.ownsContext = ownsContext;
        this.master = sc.master();
        this.n = n;
        this.layout = new ParameterLayout(job.config());
        this.fault = fault;
        String hash = MicroBatchJob.hash(job.gradientProgram());
        byte[] train = Arrays.copyOf(job.text(), job.trainEnd());
        String config = job.config().toJson().toString();
        String key = digest(hash, config, job.dataName(), job.batch() + "/" + job.microBatches() + "/" + job.seed(), train);
        this.jobSpec = sc.broadcast(new JobSpec(key, config, job.dataName(), train, job.batch(), job.microBatches(), job.seed(), hash));
        this.shards = sc.parallelize(IntStream.range(0, n).boxed().toList(), n);
    }

    @Override public List<GradientTree.Subtree> gradients(long step, float[] params) {
        Broadcast<StepSpec> st = sc.broadcast(new StepSpec(step, jobSpec.value().programHash(), ParameterLayout.encode(params)));
        List<byte[]> parts;
        try {
            parts = shards.mapPartitionsWithIndex(task(jobSpec, st, n, fault), false).collect();
        } catch (Exception e) {                              // collect declares nothing; Spark throws SparkException
            throw new KinaException(null, "spark: step " + (step + 1) + " failed: " + firstLine(e), e);
        } finally {
            st.destroy();
        }
        List<GradientTree.Subtree> out = new ArrayList<>(parts.size());
        for (byte[] p : parts) out.add(decode(p, layout.size()));
        return out;
    }

    /** The task: partition p's subtree, encoded. Static, so the closure holds only what it names. */
    private static Function2<Integer, Iterator<Integer>, Iterator<byte[]>> task(Broadcast<JobSpec> job, Broadcast<StepSpec> st, int n, Fault fault) {
        return (p, unused) -> {
            StepSpec s = st.value();
            TaskContext tc = TaskContext.get();
            fault.at(s.step(), p, tc == null ? 0 : tc.attemptNumber());
            return List.of(encode(Tasks.subtree(job.value(), s, p, n))).iterator();
        };
    }

    @Override public String describe() {
        return "on spark " + master + " (" + n + " task" + (n == 1 ? "" : "s") + " per step)";
    }

    @Override public void close() {
        if (closed) return;
        closed = true;
        try {
            jobSpec.destroy();
        } finally {
            if (ownsContext) sc.stop();
        }
    }

    /** A subtree as bytes: from, to, the loss sum's raw bits (int32 each), then the gradient's floats, little-endian. */
    static byte[] encode(GradientTree.Subtree t) {
        float[] g = t.gradient();
        ByteBuffer b = ByteBuffer.allocate(12 + 4 * g.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(t.from()).putInt(t.to()).putInt(Float.floatToRawIntBits(t.lossSum()));
        for (float f : g) b.putFloat(f);
        return b.array();
    }

    /** The inverse of {@link #encode}; IllegalStateException when the gradient is not {@code floats} long. */
    static GradientTree.Subtree decode(byte[] bytes, int floats) {
        if (bytes.length != 12 + 4 * (long) floats)
            throw new IllegalStateException("a part of " + bytes.length + " bytes, not the " + (12 + 4L * floats) + " of " + floats + " floats");
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int from = b.getInt(), to = b.getInt();
        float loss = Float.intBitsToFloat(b.getInt());
        float[] g = new float[floats];
        for (int i = 0; i < floats; i++) g[i] = b.getFloat();
        return new GradientTree.Subtree(from, to, loss, g);
    }

    /** SHA-256 over the strings (each length-prefixed) and the bytes, hex. */
    private static String digest(String a, String b, String c, String d, byte[] bytes) {
        try {
            java.security.MessageDigest md = java.security.MessageDigest.getInstance("SHA-256");
            for (String x : new String[] {a, b, c, d}) {
                byte[] u = x.getBytes(java.nio.charset.StandardCharsets.UTF_8);
                md.update(ByteBuffer.allocate(4).putInt(u.length).array());
                md.update(u);
            }
            return java.util.HexFormat.of().formatHex(md.digest(bytes));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The first line of a Spark failure, with the task's own exception when Spark quotes it. */
    static String firstLine(Throwable e) {
        String m = String.valueOf(e.getMessage());
        String first = m.lines().findFirst().orElse(m);
        return first.length() > 600 ? first.substring(0, 600) + " …" : first;
    }
}
