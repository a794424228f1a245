package kina.model;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import kina.ir.KinaException;
import kina.ir.Printer;
import kina.ir.Program;

/**
 * A large-batch step defined as a micro-batch tree: the contract that lets any number of workers
 * give the bits of one process.
 *
 * <p>A step of {@code batch} sequences is cut into M = {@code microBatches} micro-batches of
 * {@link #rows} = batch / M sequences (M a power of two, fixed by the run, not by the number of
 * workers). Micro-batch i of step s is rows [i·rows, (i+1)·rows) of the training stream's batch
 * for step s ({@link Batches#rows}): a pure function of (seed, s, i), and together the very
 * sequences a step of the single-program trainer sees. Its gradient g_i is that of its
 * <em>summed</em> NLL ({@link StoryLm#gradientStep}). The step gradient is the balanced pairwise
 * sum ((g0 + g1) + (g2 + g3)) + … over i ({@link GradientTree}), scaled once afterwards by
 * {@link #scale} = 1 / (batch · seq), then clipped and applied by the update program
 * ({@link StoryLm#updateStep}). With N workers (N a power of two dividing M), worker p sums the
 * aligned block [p·M/N, (p+1)·M/N) and the driver sums the N results with the same tree, so the
 * additions are the same ones in the same order for every N.
 *
 * <p>{@code text} holds the training bytes in [0, {@code trainEnd}) (the corpus's training part;
 * not copied, not to be modified).
 */
public record MicroBatchJob(Config config, String dataName, byte[] text, int trainEnd, int batch, int microBatches, long seed) {

    /** Checks the shape of the step: a KinaException naming the option for a bad M or a batch it does not divide. */
    public MicroBatchJob {
        check(batch, microBatches);
        if (trainEnd < 0 || trainEnd > text.length) throw new IllegalArgumentException("trainEnd " + trainEnd + " outside " + text.length + " bytes");
    }

    /** A KinaException naming the option unless M is a power of two that divides the batch. */
    public static void check(int batch, int microBatches) {
        if (microBatches < 1 || Integer.bitCount(microBatches) != 1)
            throw new KinaException(null, "--micro-batches " + microBatches + ": must be a power of two (1, 2, 4, …)");
        if (batch % microBatches != 0)
            throw new KinaException(null, "--batch " + batch + " is not a multiple of --micro-batches " + microBatches
                    + ": a step's batch is cut into micro-batches of batch / micro-batches sequences");
    }

    /** A KinaException naming --workers unless N is a power of two dividing M (each worker takes an aligned block of M / N). */
    public void checkWorkers(int workers) {
        if (workers < 1 || Integer.bitCount(workers) != 1 || microBatches % workers != 0)
            throw new KinaException(null, "--workers " + workers + ": must be a power of two dividing --micro-batches " + microBatches
                    + " (each worker sums an aligned block of micro-batches)");
    }

    /** The job over a corpus's training part. */
    public static MicroBatchJob of(Config config, Corpus corpus, int batch, int microBatches, long seed) {
        return new MicroBatchJob(config, corpus.name(), corpus.bytes(), corpus.trainSize(), batch, microBatches, seed);
    }

    /** Sequences per micro-batch. */
    public int rows() { return batch / microBatches; }

    /** The factor applied once to the tree's sum: 1 / (batch · seq), the tokens of a step. */
    public double scale() { return 1.0 / ((double) batch * config.seq()); }

    /** The training stream: the same batches as {@link Corpus#trainBatches} of the corpus this job was made from. */
    public Batches batches() {
        return new Batches(dataName + " (training part)", text, 0, trainEnd, batch, config.seq(), seed);
    }

    /** The gradient program every worker compiles: {@link StoryLm#gradientStep}, checked and transformed. */
    public Program gradientProgram() {
        return Trainer.compile(StoryLm.gradientStep(config, rows()));
    }

    /**
     * The lowercase hex SHA-256 of {@code p} as printed: workers compare their program's with the
     * driver's, so a worker that would run another program (another kina, config or micro-batch
     * size) refuses instead of adding in gradients of something else.
     */
    public static String hash(Program p) {
        try {
            byte[] text = Printer.print(p).getBytes(StandardCharsets.UTF_8);
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(text));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** One line for logs: {@code 4 micro-batches of 2 sequences}. */
    public String describe() {
        return microBatches + " micro-batch" + (microBatches == 1 ? "" : "es") + " of " + rows() + " sequence" + (rows() == 1 ? "" : "s");
    }
}
