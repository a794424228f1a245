package kina.model;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kina.eval.Tensor;
import kina.ir.Program;

/**
 * The gradient half of a {@link MicroBatchJob} on one worker: its compiled gradient program and
 * training stream. {@link #subtree} sums the gradients of an aligned block of micro-batches with
 * the {@link GradientTree}. One instance runs one subtree at a time (the plan is one arena); a
 * worker that runs several at once keeps one instance per thread.
 */
public final class GradientWorker {
    private final MicroBatchJob job;
    private final ParameterLayout layout;
    private final Runner grad;
    private final Batches batches;
    private final Tensor cos, sin;
    private final String programHash;

    /** Compiles the job's gradient program for {@code engine}. */
    public GradientWorker(MicroBatchJob job, Engine engine) {
        this.job = job;
        this.layout = new ParameterLayout(job.config());
        Program p = job.gradientProgram();
        this.programHash = MicroBatchJob.hash(p);
        this.grad = engine.compile(p);
        this.batches = job.batches();
        Tensor[] tables = Rope.tables(job.config());
        this.cos = tables[0];
        this.sin = tables[1];
    }

    public MicroBatchJob job() { return job; }

    public ParameterLayout layout() { return layout; }

    /** The SHA-256 of the gradient program as printed after transform_ad ({@link MicroBatchJob#hash}). */
    public String programHash() { return programHash; }

    /**
     * Micro-batches [from, to) of step {@code step} at {@code params} (a buffer in layout order):
     * each one's summed-loss gradient, added by the tree. IllegalArgumentException unless the
     * block is aligned (from a multiple of its power-of-two size) and inside [0, M).
     */
    public GradientTree.Subtree subtree(long step, float[] params, int from, int to) {
        int size = to - from;
        if (from < 0 || to > job.microBatches() || size < 1 || Integer.bitCount(size) != 1 || from % size != 0)
            throw new IllegalArgumentException("micro-batches [" + from + ", " + to + ") are not an aligned block of " + job.microBatches());
        Map<String, Tensor> in = new HashMap<>(layout.tensors(params, ""));
        in.put("cos", cos);
        in.put("sin", sin);
        GradientTree tree = new GradientTree();
        int rows = job.rows(), t = job.config().seq();
        for (int i = from; i < to; i++) {
            Batches.tokens(batches.rows(step, i * rows, (i + 1) * rows), t, in);
            List<Tensor> out = grad.run(in);                 // (loss_sum, g_w… in layout order)
            float[] g = new float[layout.size()];
            for (int k = 0; k < layout.weights().size(); k++) ParameterLayout.pack(out.get(k + 1), g, layout.offset(k));
            tree.push(new GradientTree.Subtree(i, i + 1, (float) out.getFirst().floats()[0], g));
        }
        return tree.result();
    }
}
