package kina.model;

import java.util.List;

/**
 * Who computes the gradient half of a large-batch step ({@link MicroBatchJob}): N workers, each
 * the subtree of its aligned block of micro-batches. The trainer sums the N parts with the
 * {@link GradientTree} and runs the update itself. In this process ({@link #inProcess}: N = 1,
 * gradient accumulation) or on a cluster (the kina-spark module, found through {@link Provider}).
 */
public interface GradientWorkers extends AutoCloseable {
    /**
     * Step {@code step}'s parts at {@code params} (a {@link ParameterLayout} buffer, not modified):
     * part p is the subtree of micro-batches [p·M/N, (p+1)·M/N), in order of p.
     */
    List<GradientTree.Subtree> gradients(long step, float[] params);

    /** For the run's first log line, e.g. {@code in this process} or {@code spark local[4], 4 workers}. */
    String describe();

    /** Releases the workers (a cluster's context); idempotent. */
    @Override void close();

    /** Opens workers for a job (once per run, before the first step). */
    @FunctionalInterface
    interface Factory {
        GradientWorkers open(MicroBatchJob job);
    }

    /**
     * A distributed engine, found with {@link java.util.ServiceLoader} when its module is on the
     * class path (kina-spark provides Spark's).
     */
    interface Provider {
        /** The N that {@code master} implies ({@code local[4]}: 4), or 0 when it does not say. */
        int workers(String master);

        /**
         * N workers on {@code master} (the engine's master URL, e.g. {@code local[4]}), opened for each
         * job; a KinaException (one line) for a master it cannot use, or (at open) an N that does not
         * divide the job's M ({@link MicroBatchJob#checkWorkers}).
         */
        Factory connect(String master, int workers);
    }

    /** One worker in this process: the whole tree of every step here (gradient accumulation), with {@code engine}. */
    static Factory inProcess(Engine engine) {
        return job -> {
            GradientWorker w = new GradientWorker(job, engine);
            return new GradientWorkers() {
                public List<GradientTree.Subtree> gradients(long step, float[] params) {
                    return List.of(w.subtree(step, params, 0, job.microBatches()));
                }

                public String describe() { return "in this process"; }

                public void close() { }
            };
        };
    }
}
