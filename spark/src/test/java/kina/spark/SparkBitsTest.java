package kina.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import kina.model.Checkpoint;
import kina.model.Trainer;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Data-parallel training on Spark gives the bits of one process: `tiny`, M = 4, 3 steps, on
 * {@code local[4,2]} (four task slots; a failed task is tried twice).
 */
class SparkBitsTest {
    static JavaSparkContext sc;
    static int[] single;                          // N = 1: plain kina, no Spark
    /** Attempts the fault hook failed (the tasks run in this JVM in local mode). */
    static final AtomicInteger FAILED = new AtomicInteger();

    static JavaSparkContext fresh() {
        return new JavaSparkContext(new SparkConf().setMaster("local[4,2]").setAppName("kina SparkBitsTest")
                .set("spark.ui.enabled", "false").set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1"));
    }

    @BeforeAll static void start() {
        single = Runs.single();
        sc = fresh();
    }

    @AfterAll static void stop() {
        if (sc != null) sc.stop();
    }

    @Test void twoAndFourWorkersGiveTheBitsOfOneProcess(@TempDir Path dir) {
        for (int n : new int[] {2, 4}) {
            Trainer.Summary s = Runs.train(dir.resolve("n" + n), Runs.spark(sc, n, SparkWorkers.Fault.NONE));
            assertThat(s.trainCurve()).hasSize(Runs.STEPS);
            Runs.assertSameBits(Runs.bits(s), single, "N = " + n);
        }
    }

    @Test void aLeftFoldInsteadOfTheTreeChangesTheBits(@TempDir Path dir) {
        // The negative control: the same four parts added ((g0 + g1) + g2) + g3. If these bits
        // matched the tree's, the equalities above would prove nothing about the order.
        int[] fold = Runs.bits(Runs.train(dir.resolve("fold"), Runs.leftFold(Runs.spark(sc, 4, SparkWorkers.Fault.NONE))));
        assertThat(fold).hasSameSizeAs(single);
        assertThat(Runs.mismatch(fold, single)).as("the left fold's first differing float").isNotNegative();
    }

    @Test void aTaskThatFailsIsRetriedWithTheSameBits(@TempDir Path dir) {
        FAILED.set(0);
        SparkWorkers.Fault failOnce = (step, partition, attempt) -> {
            if (step == 1 && partition == 1 && attempt == 0) {
                FAILED.incrementAndGet();
                throw new IllegalStateException("injected failure of partition 1 at step 2");
            }
        };
        Trainer.Summary s = Runs.train(dir.resolve("retry"), Runs.spark(sc, 4, failOnce));
        assertThat(FAILED.get()).as("attempts that failed").isEqualTo(1);
        Runs.assertSameBits(Runs.bits(s), single, "with a retried task");
    }

    @Test void aTaskThatAlwaysFailsStopsTheRunWithOneLine(@TempDir Path dir) {
        SparkWorkers.Fault always = (step, partition, attempt) -> {
            if (partition == 0) throw new IllegalStateException("injected failure");
        };
        assertThatThrownBy(() -> Runs.train(dir.resolve("fails"), Runs.spark(sc, 2, always)))
                .isInstanceOf(kina.ir.KinaException.class)
                .hasMessageStartingWith("spark: step 1 failed: ")
                .hasMessageContaining("injected failure")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    }

    @Test void aLostDriverResumesFromItsLastCheckpointInAFreshContext(@TempDir Path dir) {
        Path run = dir.resolve("run");
        assertThatThrownBy(() -> Runs.train(run, Runs.driverLostAt(2, Runs.spark(sc, 2, SparkWorkers.Fault.NONE))))
                .hasMessageContaining("the driver is lost at step 3");
        assertThat(Checkpoint.load(run).state().step()).as("the last checkpoint").isEqualTo(2);
        sc.stop();                                   // the driver is gone, and its context with it
        sc = fresh();
        Trainer.Summary resumed = new Trainer(Runs.options(run, run, Runs.spark(sc, 2, SparkWorkers.Fault.NONE)), Runs.slice()).run(Runs.QUIET);
        assertThat(resumed.fromStep()).isEqualTo(2);
        Runs.assertSameBits(Runs.bits(resumed), single, "resumed at step 2");
    }
}
