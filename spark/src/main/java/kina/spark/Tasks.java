package kina.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import kina.model.Config;
import kina.model.Engine;
import kina.model.GradientTree;
import kina.model.GradientWorker;
import kina.model.MicroBatchJob;
import kina.model.ParameterLayout;

/**
 * The executor side of {@link SparkWorkers}: compiled gradient workers kept per executor JVM, one
 * per concurrently running task (a plan runs one subtree at a time), for the run's job only.
 */
final class Tasks {
    private Tasks() {}

    /** Idle workers of the current job, by job key; a new job's first task drops the others'. */
    private static final Map<String, ConcurrentLinkedDeque<GradientWorker>> IDLE = new ConcurrentHashMap<>();

    /**
     * Partition p's part of step {@code st}: the subtree of micro-batches [p·M/n, (p+1)·M/n).
     * IllegalStateException when this executor's gradient program is not the driver's (another kina).
     */
    static GradientTree.Subtree subtree(SparkWorkers.JobSpec job, SparkWorkers.StepSpec st, int p, int n) {
        ConcurrentLinkedDeque<GradientWorker> idle = IDLE.get(job.jobKey());
        if (idle == null) {
            IDLE.keySet().removeIf(other -> !other.equals(job.jobKey()));
            idle = IDLE.computeIfAbsent(job.jobKey(), k -> new ConcurrentLinkedDeque<>());
        }
        GradientWorker w = idle.poll();
        if (w == null) w = new GradientWorker(microBatchJob(job), Engine.PLAN);
        if (!w.programHash().equals(st.programHash()))
            throw new IllegalStateException("this executor's gradient program has hash " + w.programHash() + ", the driver's "
                    + st.programHash() + ": run the same kina jar on the driver and every executor");
        try {
            int per = job.microBatches() / n;
            return w.subtree(st.step(), ParameterLayout.decode(st.params()), p * per, (p + 1) * per);
        } finally {
            idle.push(w);
        }
    }

    private static MicroBatchJob microBatchJob(SparkWorkers.JobSpec job) {
        Config c;
        try {
            c = Config.fromJson("the driver's config", new ObjectMapper().readTree(job.configJson()), "unnamed");
        } catch (com.fasterxml.jackson.core.JacksonException e) {
            throw new IllegalStateException("the driver's config is not JSON: " + e.getOriginalMessage(), e);
        }
        return new MicroBatchJob(c, job.dataName(), job.trainText(), job.trainText().length, job.batch(), job.microBatches(), job.seed());
    }
}
