package kina.spark;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import kina.ir.KinaException;
import kina.model.GradientWorkers;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Spark for {@code kina train --spark MASTER} (found by the CLI with ServiceLoader): a
 * SparkContext per run, stopped at its end. Settings the user gives as {@code -Dspark.*} system
 * properties (or spark-submit's {@code --conf}) win over the defaults set here.
 */
public final class SparkProvider implements GradientWorkers.Provider {
    /** The JVM options kina needs on an executor (a user's own spark.executor.extraJavaOptions must include them). */
    public static final String EXECUTOR_JAVA_OPTIONS = "--add-modules=jdk.incubator.vector --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow";
    private static final Pattern LOCAL = Pattern.compile("local(?:\\[(\\*|\\d+)(?:,\\s*\\d+)?])?");
    private static final Pattern LOCAL_CLUSTER = Pattern.compile("local-cluster\\[\\s*(\\d+)\\s*,\\s*(\\d+)\\s*,\\s*\\d+\\s*]");

    @Override public int workers(String master) {
        Matcher m = LOCAL.matcher(master);
        if (m.matches()) {
            if (m.group(1) == null) return 1;
            int k = m.group(1).equals("*") ? Runtime.getRuntime().availableProcessors() : Integer.parseInt(m.group(1));
            return Integer.highestOneBit(Math.max(1, k));             // the largest power of two that fits
        }
        Matcher c = LOCAL_CLUSTER.matcher(master);
        if (c.matches()) return Integer.highestOneBit(Math.max(1, Integer.parseInt(c.group(1)) * Integer.parseInt(c.group(2))));
        return 0;
    }

    @Override public GradientWorkers.Factory connect(String master, int workers) {
        if (!LOCAL.matcher(master).matches() && !LOCAL_CLUSTER.matcher(master).matches()
                && !master.startsWith("spark://") && !master.startsWith("yarn") && !master.startsWith("k8s://"))
            throw new KinaException(null, "--spark " + master + ": not a Spark master URL (local[N], local[N,F], local-cluster[n,c,mb], "
                    + "spark://host:port, yarn or k8s://…)");
        return job -> {
            JavaSparkContext sc = context(master);
            try {
                return new SparkWorkers(sc, true, workers, job, SparkWorkers.Fault.NONE);
            } catch (RuntimeException e) {
                sc.stop();
                throw e;
            }
        };
    }

    /**
     * A SparkContext on {@code master}. A master set by spark-submit must be the same one. The web UI
     * is off unless asked for ({@code -Dspark.ui.enabled=true}). Off the local masters the executors get
     * kina's jars ({@code spark.jars}, unless spark-submit already ships them) and the JVM options
     * {@link #EXECUTOR_JAVA_OPTIONS} (unless given).
     */
    static JavaSparkContext context(String master) {
        SparkConf conf = new SparkConf();
        if (conf.contains("spark.master") && !conf.get("spark.master").equals(master))
            throw new KinaException(null, "--spark " + master + ": spark-submit set the master to " + conf.get("spark.master") + "; give the same one");
        conf.setMaster(master).setIfMissing("spark.app.name", "kina train").setIfMissing("spark.ui.enabled", "false");
        if (master.startsWith("local")) {
            conf.setIfMissing("spark.driver.host", "127.0.0.1").setIfMissing("spark.driver.bindAddress", "127.0.0.1");
        }
        if (!LOCAL.matcher(master).matches()) {
            // Executors in their own JVMs: kina's kernels need the Vector API module there too.
            conf.setIfMissing("spark.executor.extraJavaOptions", EXECUTOR_JAVA_OPTIONS);
            List<String> jars = codeJars();
            if (!conf.contains("spark.jars") && !jars.isEmpty()) conf.set("spark.jars", String.join(",", jars));
        }
        return new JavaSparkContext(conf);
    }

    /** The jar files kina's core and this module were loaded from (none when they are class directories). */
    static List<String> codeJars() {
        Set<String> out = new LinkedHashSet<>();
        for (Class<?> k : new Class<?>[] {kina.model.GradientWorker.class, SparkProvider.class}) {
            try {
                var src = k.getProtectionDomain().getCodeSource();
                if (src == null) continue;
                Path p = Path.of(src.getLocation().toURI());
                if (Files.isRegularFile(p)) out.add(p.toString());
            } catch (URISyntaxException | SecurityException e) {
                // not a file location: the cluster must have the class already
            }
        }
        return new ArrayList<>(out);
    }
}
