package kina.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import kina.model.Trainer;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two executor JVMs ({@code local-cluster[2,1,1024]}): the gradients computed in other processes
 * give the bits of one process. Without a Spark distribution the workers need a stand-in Spark
 * home (an empty RELEASE file and jars/ holding Spark's jars: the test class path's), which the
 * build names in SPARK_HOME (with SPARK_SCALA_VERSION; see the pom's surefire configuration).
 */
class LocalClusterTest {

    @Test void twoExecutorJvmsGiveTheBitsOfOneProcess(@TempDir Path dir) throws IOException, InterruptedException {
        standInSparkHome();
        int[] single = Runs.single();
        SparkConf conf = new SparkConf().setMaster("local-cluster[2,1,1024]").setAppName("kina LocalClusterTest")
                .set("spark.ui.enabled", "false").set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.executor.memory", "512m")
                .set("spark.executor.extraClassPath", String.join(File.pathSeparator, codePath()))
                .set("spark.executor.extraJavaOptions", SparkProvider.EXECUTOR_JAVA_OPTIONS);
        JavaSparkContext sc = new JavaSparkContext(conf);
        try {
            // Both executors registered (the driver is listed too), so each task of a step has its own JVM.
            long deadline = System.nanoTime() + 180_000_000_000L;
            while (sc.statusTracker().getExecutorInfos().length < 3 && System.nanoTime() < deadline) Thread.sleep(100);
            assertThat(sc.statusTracker().getExecutorInfos()).as("the driver and two executors").hasSize(3);
            Set<Long> pids = new LinkedHashSet<>(sc.parallelize(List.of(0, 1), 2).map(x -> ProcessHandle.current().pid()).collect());
            assertThat(pids).as("the executors' process ids").hasSize(2).doesNotContain(ProcessHandle.current().pid());
            Trainer.Summary s = Runs.train(dir.resolve("cluster"), Runs.spark(sc, 2, SparkWorkers.Fault.NONE));
            Runs.assertSameBits(Runs.bits(s), single, "2 executor JVMs");
        } finally {
            sc.stop();
        }
    }

    /**
     * The directories and jars holding kina's classes, these tests' and this module's, for the
     * executors' class path (Spark's own come from the stand-in home).
     */
    static List<String> codePath() {
        List<String> out = new ArrayList<>();
        for (Class<?> k : new Class<?>[] {kina.model.Trainer.class, SparkWorkers.class, LocalClusterTest.class}) {
            try {
                String p = Path.of(k.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
                if (!out.contains(p)) out.add(p);
            } catch (java.net.URISyntaxException e) {
                throw new IllegalStateException(e);
            }
        }
        return out;
    }

    /** Fills $SPARK_HOME (set by the build) with RELEASE and jars/ links to every jar of this JVM's class path. */
    static void standInSparkHome() throws IOException, InterruptedException {
        String home = System.getenv("SPARK_HOME");
        assertThat(home).as("SPARK_HOME (the pom's surefire configuration sets it)").isNotNull();
        Path jars = Path.of(home, "jars");
        Files.createDirectories(jars);
        Files.write(Path.of(home, "RELEASE"), new byte[0]);
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path jar = Path.of(e);
            if (!e.endsWith(".jar") || !Files.isRegularFile(jar)) continue;
            Path link = jars.resolve(jar.getFileName());
            if (!Files.exists(link, java.nio.file.LinkOption.NOFOLLOW_LINKS)) Files.createSymbolicLink(link, jar.toAbsolutePath());
        }
    }
}
