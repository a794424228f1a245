package kina.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import kina.ir.KinaException;
import kina.model.Config;
import kina.model.GradientTree;
import kina.model.Init;
import kina.model.MicroBatchJob;
import kina.model.ParameterLayout;
import org.junit.jupiter.api.Test;

/** The master URLs kina reads, the wire form of a part, and the executors' check of the driver's program hash (no Spark context). */
class SparkProviderTest {

    @Test void theMasterSaysHowManyTasksAStepHas() {
        SparkProvider p = new SparkProvider();
        assertThat(p.workers("local")).isEqualTo(1);
        assertThat(p.workers("local[4]")).isEqualTo(4);
        assertThat(p.workers("local[4,2]")).isEqualTo(4);
        assertThat(p.workers("local[3]")).as("the largest power of two that fits").isEqualTo(2);
        assertThat(p.workers("local[*]")).isEqualTo(Integer.highestOneBit(Runtime.getRuntime().availableProcessors()));
        assertThat(p.workers("local-cluster[2,1,1024]")).isEqualTo(2);
        assertThat(p.workers("spark://host:7077")).isZero();
        assertThatThrownBy(() -> p.connect("locl[2]", 2)).isInstanceOf(KinaException.class)
                .hasMessageStartingWith("--spark locl[2]: not a Spark master URL");
    }

    @Test void aPartTravelsAsItsRawBits() {
        float[] g = {1f, -0f, Float.intBitsToFloat(0x7fc00001), Float.MIN_VALUE};
        GradientTree.Subtree t = new GradientTree.Subtree(2, 4, Float.intBitsToFloat(0x7fa00002), g);
        GradientTree.Subtree back = SparkWorkers.decode(SparkWorkers.encode(t), g.length);
        assertThat(back.from()).isEqualTo(2);
        assertThat(back.to()).isEqualTo(4);
        assertThat(Float.floatToRawIntBits(back.lossSum())).isEqualTo(0x7fa00002);
        for (int i = 0; i < g.length; i++) assertThat(Float.floatToRawIntBits(back.gradient()[i])).isEqualTo(Float.floatToRawIntBits(g[i]));
        assertThatThrownBy(() -> SparkWorkers.decode(SparkWorkers.encode(t), g.length + 1)).isInstanceOf(IllegalStateException.class);
    }

    @Test void anExecutorRefusesADriverThatRunsAnotherProgram() {
        Config c = Config.byName("tiny");
        byte[] text = Arrays.copyOf(Runs.slice().bytes(), 20_000);
        MicroBatchJob job = new MicroBatchJob(c, "slice", text, text.length, 4, 2, 1);
        String hash = MicroBatchJob.hash(job.gradientProgram());
        SparkWorkers.JobSpec spec = new SparkWorkers.JobSpec("key-" + hash, c.toJson().toString(), "slice", text, 4, 2, 1, hash);
        byte[] params = ParameterLayout.encode(new ParameterLayout(c).flatten(Init.weights(c, 1)::get));
        GradientTree.Subtree part = Tasks.subtree(spec, new SparkWorkers.StepSpec(0, hash, params), 1, 2);
        assertThat(part.from()).isEqualTo(1);
        assertThat(part.to()).isEqualTo(2);
        assertThatThrownBy(() -> Tasks.subtree(spec, new SparkWorkers.StepSpec(0, "0".repeat(64), params), 0, 2))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("the driver's " + "0".repeat(64)).hasMessageEndingWith("run the same kina jar on the driver and every executor");
    }
}
