package kina.mlir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import kina.ad.TransformAd;
import kina.eval.Tensor;
import kina.ir.Program;
import kina.model.Config;
import kina.model.Optimizer;
import kina.model.StoryLm;
import kina.plan.Plan;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The native step's results do not depend on its threads: the tiny train step (as the plan
 * rewrites it) gives the same bits on 1 and on 2 threads, as the plan's do. Only parallel loops are
 * split among the threads; every reduction runs whole on one thread.
 */
class NativeThreadsTest {

    @Test void theTinyStepGivesTheSameBitsOnOneAndTwoThreads() {
        MlirTools.require();
        if (!Toolchain.openmp()) {
            String why = "libomp-19-dev is not installed, so native objects run on one thread (install: " + Toolchain.INSTALL + ")";
            if ("true".equals(System.getenv("CI"))) fail("CI=true: " + why);
            Assumptions.abort(why);
        }
        Program step = StoryLm.trainStep(Config.byName("tiny"), 2, new Optimizer.AdamW(0.9, 0.95, 1e-8, 0.01, 1.0));
        Native n = Native.compile(Plan.compile(TransformAd.transform(step)).program());
        Map<String, Tensor> in = NativeExamplesTest.randomInputs(step, n.entry(), new SplittableRandom(7));
        n.threads(1);
        assertThat(n.maxThreads()).isEqualTo(1);
        List<Tensor> one = n.run(in);
        n.threads(2);
        assertThat(n.maxThreads()).isEqualTo(2);
        List<Tensor> two = n.run(in);
        assertThat(two).hasSameSizeAs(one);
        for (int k = 0; k < one.size(); k++) {
            double[] a = one.get(k).floats(), b = two.get(k).floats();
            for (int i = 0; i < a.length; i++)
                if (Double.doubleToRawLongBits(a[i]) != Double.doubleToRawLongBits(b[i]))
                    fail("output " + k + " element " + i + ": " + a[i] + " on 1 thread, " + b[i] + " on 2");
        }
    }
}
