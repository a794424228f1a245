package kina.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kina.eval.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A large-batch step as a micro-batch tree: the same bits for any number of workers; with M = 1, the one-program step's bits. */
class MicroBatchTreeTest {

    static GradientTree.Subtree leaf(int i, float loss, float... g) { return new GradientTree.Subtree(i, i + 1, loss, g.clone()); }

    static int[] bits(GradientTree.Subtree t) {
        int[] b = new int[t.gradient().length + 1];
        b[0] = Float.floatToRawIntBits(t.lossSum());
        for (int i = 0; i < t.gradient().length; i++) b[i + 1] = Float.floatToRawIntBits(t.gradient()[i]);
        return b;
    }

    /** Eight leaves of mixed magnitudes; element 0 is (1e8, 1, −1e8, 1, …), where the order of the additions shows. */
    static List<GradientTree.Subtree> leaves() {
        SplittableRandom r = new SplittableRandom(3);
        List<GradientTree.Subtree> l = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            float[] g = new float[64];
            for (int k = 0; k < g.length; k++) g[k] = (float) (r.nextGaussian() * Math.pow(10, r.nextInt(-6, 7)));
            g[0] = i % 2 == 1 ? 1f : i % 4 == 0 ? 1e8f : -1e8f;
            l.add(new GradientTree.Subtree(i, i + 1, (float) r.nextDouble(100), g));
        }
        return l;
    }

    static List<GradientTree.Subtree> copy(List<GradientTree.Subtree> l) {
        return l.stream().map(t -> new GradientTree.Subtree(t.from(), t.to(), t.lossSum(), t.gradient().clone())).toList();
    }

    @Test void aTreeOfAlignedSubtreesIsTheTreeOfTheLeaves() {
        int[] whole = bits(GradientTree.sum(copy(leaves())));
        for (int n : new int[] {2, 4, 8}) {
            List<GradientTree.Subtree> l = copy(leaves()), parts = new ArrayList<>();
            int per = 8 / n;
            for (int p = 0; p < n; p++) parts.add(GradientTree.sum(l.subList(p * per, (p + 1) * per)));
            assertThat(bits(GradientTree.sum(parts))).as("%d parts", n).isEqualTo(whole);
        }
        // ((1e8 + 1) + (−1e8 + 1)) + … is 0 at element 0; the running sum ((1e8 + 1) − 1e8) + 1 … is not.
        assertThat(GradientTree.sum(copy(leaves())).gradient()[0]).isEqualTo(0f);
        assertThat(bits(GradientTree.leftFold(copy(leaves())))).isNotEqualTo(whole);
    }

    @Test void theTreeRefusesWhatIsNotOneBalancedTree() {
        GradientTree t = new GradientTree();
        t.push(new GradientTree.Subtree(0, 2, 0f, new float[1]));
        t.push(leaf(2, 0f, 0f));
        assertThatThrownBy(t::result).isInstanceOf(IllegalStateException.class).hasMessageContaining("not a power-of-two count");
        assertThatThrownBy(() -> t.push(new GradientTree.Subtree(3, 5, 0f, new float[1])))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("does not follow");
        GradientTree u = new GradientTree();
        u.push(leaf(0, 0f, 0f));
        assertThatThrownBy(() -> u.push(leaf(2, 0f, 0f))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("does not follow");
    }

    @Test void parametersTravelAsRawLittleEndianFloatBits() {
        float[] f = {1f, -0f, Float.intBitsToFloat(0x7fc00001), Float.intBitsToFloat(0xffa00000), Float.MIN_VALUE, Float.POSITIVE_INFINITY};
        byte[] b = ParameterLayout.encode(f);
        assertThat(Arrays.copyOf(b, 4)).containsExactly(0x00, 0x00, 0x80, 0x3f);   // 1.0f, little-endian
        float[] back = ParameterLayout.decode(b);
        for (int i = 0; i < f.length; i++)
            assertThat(Float.floatToRawIntBits(back[i])).as("float %d", i).isEqualTo(Float.floatToRawIntBits(f[i]));
        assertThatThrownBy(() -> ParameterLayout.decode(new byte[6])).isInstanceOf(IllegalArgumentException.class);
    }

    @Test void theLayoutIsEveryWeightInParameterOrder() {
        Config c = Config.byName("tiny");
        ParameterLayout layout = new ParameterLayout(c);
        Map<String, Tensor> w = Init.weights(c, 5);
        float[] flat = layout.flatten(w::get);
        assertThat(flat).hasSize(layout.size());
        Map<String, Tensor> back = layout.tensors(flat, "");
        assertThat(back.keySet()).containsExactlyElementsOf(w.keySet());
        w.forEach((name, t) -> assertThat(back.get(name).bitEquals(t)).as(name).isTrue());
    }

    @Test void aMicroBatchIsItsRowsOfTheStepsBatch() {
        Batches b = TrainerTest.slice().trainBatches(8, 16, 9);
        Batches.Batch all = b.at(5);
        for (int lo = 0; lo < 8; lo += 2) {
            Batches.Batch part = b.rows(5, lo, lo + 2);
            assertThat(part.inputs()).isDeepEqualTo(Arrays.copyOfRange(all.inputs(), lo, lo + 2));
            assertThat(part.targets()).isDeepEqualTo(Arrays.copyOfRange(all.targets(), lo, lo + 2));
        }
        assertThatThrownBy(() -> b.rows(5, 6, 9)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test void aBadMicroBatchCountIsOneLineNamingTheOption() {
        assertThatThrownBy(() -> MicroBatchJob.check(8, 3)).hasMessage("--micro-batches 3: must be a power of two (1, 2, 4, …)");
        assertThatThrownBy(() -> MicroBatchJob.check(6, 4)).hasMessageStartingWith("--batch 6 is not a multiple of --micro-batches 4");
        MicroBatchJob job = MicroBatchJob.of(Config.byName("tiny"), TrainerTest.slice(), 8, 4, 1);
        for (int n : new int[] {3, 8, 0})
            assertThatThrownBy(() -> job.checkWorkers(n)).hasMessageStartingWith("--workers " + n + ": must be a power of two dividing --micro-batches 4");
        job.checkWorkers(2);
        assertThatThrownBy(() -> new Trainer(options(null, 4, 3, null), TrainerTest.slice()))
                .isInstanceOf(kina.ir.KinaException.class).hasMessageStartingWith("--micro-batches 3");
    }

    static Trainer.Options options(Path out, int batch, int microBatches, GradientWorkers.Factory workers) {
        return new Trainer.Options(Config.byName("tiny"), batch, 3, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0), 3e-3, 1,
                7, 2, out, 3, 1, 3, null, Progress.Mode.OFF, Engine.PLAN, microBatches, workers);
    }

    /** A run's raw bits: each step's loss, then every weight and moment at its end. */
    static int[] runBits(Trainer.Summary s) {
        Checkpoint.Loaded ck = Checkpoint.load(s.checkpoint());
        List<Integer> b = new ArrayList<>();
        for (double[] p : s.trainCurve()) b.add(Float.floatToRawIntBits((float) p[1]));
        for (Map<String, Tensor> m : List.of(ck.weights(), ck.moments()))
            for (Tensor t : m.values()) for (double d : t.floats()) b.add(Float.floatToRawIntBits((float) d));
        return b.stream().mapToInt(Integer::intValue).toArray();
    }

    /** N workers in this process, each computing its aligned block with its own compiled gradient program. */
    static GradientWorkers.Factory workers(int n, boolean leftFold) {
        return job -> {
            List<GradientWorker> ws = new ArrayList<>();
            for (int p = 0; p < n; p++) ws.add(new GradientWorker(job, Engine.PLAN));
            return new GradientWorkers() {
                public List<GradientTree.Subtree> gradients(long step, float[] params) {
                    int per = job.microBatches() / n;
                    List<GradientTree.Subtree> parts = new ArrayList<>();
                    for (int p = 0; p < n; p++) parts.add(ws.get(p).subtree(step, params, p * per, (p + 1) * per));
                    return leftFold ? List.of(GradientTree.leftFold(parts)) : parts;
                }

                public String describe() { return n + " workers in this process"; }

                public void close() { }
            };
        };
    }

    @Test void oneTwoAndFourWorkersGiveTheSameBitsAndALeftFoldDoesNot(@TempDir Path dir) {
        Corpus corpus = TrainerTest.slice();
        int[] one = runBits(new Trainer(options(dir.resolve("one"), 4, 4, null), corpus).run(TrainerTest.QUIET));
        for (int n : new int[] {2, 4})
            assertThat(Arrays.mismatch(runBits(new Trainer(options(dir.resolve("n" + n), 4, 4, workers(n, false)), corpus).run(TrainerTest.QUIET)), one))
                    .as("%d workers: the first differing float", n).isEqualTo(-1);
        int[] fold = runBits(new Trainer(options(dir.resolve("fold"), 4, 4, workers(4, true)), corpus).run(TrainerTest.QUIET));
        assertThat(fold).hasSameSizeAs(one).isNotEqualTo(one);
    }

    @Test void oneMicroBatchIsTheOneProgramStepBitForBit(@TempDir Path dir) {
        // With a power-of-two token count (2 × 64) the mean's 1/n is a power of two, which every
        // rounding of the backward pass commutes with (short of underflow): scaling once at the end gives the same bits.
        Corpus corpus = TrainerTest.slice();
        int[] whole = runBits(new Trainer(options(dir.resolve("whole"), 2, 0, null), corpus).run(TrainerTest.QUIET));
        int[] tree = runBits(new Trainer(options(dir.resolve("tree"), 2, 1, null), corpus).run(TrainerTest.QUIET));
        assertThat(Arrays.mismatch(tree, whole)).as("the first differing float").isEqualTo(-1);
        assertThat(Checkpoint.load(dir.resolve("tree")).state().hyper()).containsEntry("micro_batches", 1.0);
        assertThat(Checkpoint.load(dir.resolve("whole")).state().hyper()).doesNotContainKey("micro_batches");
    }

    @Test void resumingWithAnotherMicroBatchCountSaysSo(@TempDir Path dir) {
        Corpus corpus = TrainerTest.slice();
        Path run = dir.resolve("run");
        new Trainer(options(run, 4, 2, null), corpus).run(TrainerTest.QUIET);
        Trainer.Options more = new Trainer.Options(Config.byName("tiny"), 4, 4, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0), 3e-3, 1,
                7, 2, dir.resolve("more"), 3, 1, 3, run, Progress.Mode.OFF, Engine.PLAN, 4, null);
        String notes = TrainerTest.capture(err -> new Trainer(more, corpus).run(TrainerTest.QUIET, err));
        assertThat(notes).contains("note: the checkpoint's steps were trees of 2 micro-batches; these are trees of 4 micro-batches");
    }
}
