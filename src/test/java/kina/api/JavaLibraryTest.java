package kina.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
import java.util.stream.Stream;
import kina.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * kina as a Maven library, as docs/java-api.md tells a user to take it: the example project in
 * {@code examples/java} compiled by Maven against {@code dev.kina:kina} in a local repository laid
 * out as {@code mvn install} writes it (the jar of the classes under test and this pom.xml), its
 * dependencies resolved from the pom, then run with the JVM options the page names.
 */
class JavaLibraryTest {
    static final Path EXAMPLE = Path.of("examples/java");

    /** The project's version: the first {@code <version>} after {@code <artifactId>kina</artifactId>} in pom.xml. */
    static String version() throws Exception {
        Matcher m = Pattern.compile("<artifactId>kina</artifactId>\\s*<version>([^<]+)</version>").matcher(Files.readString(Path.of("pom.xml")));
        assertThat(m.find()).isTrue();
        return m.group(1);
    }

    /** The user's local Maven repository, the one the tests' jars come from (picocli's jar names it). */
    static Path userRepository() {
        for (String e : ChildJvm.classPath()) {
            int at = e.replace('\\', '/').indexOf("/info/picocli/picocli/");
            if (at > 0) return Path.of(e.substring(0, at));
        }
        return null;
    }

    @Test void theExampleProjectBuildsAgainstTheInstalledArtifactAndRuns(@TempDir Path dir) throws Exception {
        Path mvn = ChildJvm.require("mvn", "Maven (mvn) is not on PATH, so the example project in examples/java is not built against the library");
        Path cache = userRepository();
        assumeTrue(cache != null, "the tests' jars do not come from a Maven repository: the example project was not built");
        String version = version();

        // what `mvn install` lays out: the jar and the pom that declares its dependencies
        Path installed = Files.createDirectories(dir.resolve("repo/dev/kina/kina").resolve(version));
        Path jar = installed.resolve("kina-" + version + ".jar");
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        int rc = ToolProvider.findFirst("jar").orElseThrow().run(new PrintStream(log), new PrintStream(log),
                "--create", "--file", jar.toString(), "-C", "target/classes", ".");
        assertThat(rc).as(log.toString()).isZero();
        Files.copy(Path.of("pom.xml"), installed.resolve("kina-" + version + ".pom"));
        // everything else from the user's repository, never the network
        Path settings = Files.writeString(dir.resolve("settings.xml"), "<settings><mirrors><mirror><id>local</id><mirrorOf>*</mirrorOf><url>"
                + cache.toUri() + "</url></mirror></mirrors></settings>");

        Path project = dir.resolve("example");
        try (Stream<Path> files = Files.walk(EXAMPLE)) {
            for (Path f : files.filter(Files::isRegularFile).filter(f -> !EXAMPLE.relativize(f).startsWith("target")).toList())
                Files.copy(f, Files.createDirectories(project.resolve(EXAMPLE.relativize(f)).getParent()).resolve(f.getFileName()));
        }
        assertThat(Files.readString(project.resolve("pom.xml"))).as("the example's dependency is this version")
                .contains("<artifactId>kina</artifactId>\n      <version>" + version + "</version>");
        ChildJvm.Result built = ChildJvm.run(List.of(mvn.toString(), "-B", "-q", "-s", settings.toString(),
                "-Dmaven.repo.local=" + dir.resolve("repo"), "compile"), project, 300);
        assertThat(built.exit()).as(built.describe()).isZero();
        // the pom brought kina's dependencies along, and not the JUnit one of them declares at compile scope
        for (String dep : List.of("info/picocli/picocli", "com/fasterxml/jackson/core/jackson-databind", "me/tongfei/progressbar", "org/knowm/xchart/xchart"))
            assertThat(dir.resolve("repo").resolve(dep)).as(dep).isDirectory();
        assertThat(dir.resolve("repo/org/junit/jupiter/junit-jupiter")).doesNotExist();

        List<String> cp = new ArrayList<>(List.of(project.resolve("target/classes").toString(), jar.toString()));
        for (String e : ChildJvm.classPath()) if (e.endsWith(".jar")) cp.add(e);        // kina's dependencies (and the tests')
        ChildJvm.Result ran = ChildJvm.run(List.of(ChildJvm.java(), "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-cp", String.join(java.io.File.pathSeparator, cp), "example.NllGradient"), dir, 120);
        assertThat(ran.exit()).as(ran.describe()).isZero();
        assertThat(ran.out().lines().toList()).as(ran.describe()).containsExactly(
                "inputs: [targets, logits]",
                "loss tensor<F32, [2], @host>: " + format(-logSoftmax(ROW0)[1], -logSoftmax(ROW1)[2]),
                "g_logits[0]: " + format(gradient(ROW0, 1)),
                "g_logits[1]: " + format(gradient(ROW1, 2)),
                "plan equals interpreter bit for bit: true");
    }

    static final double[] ROW0 = {1.0, 2.0, 0.5, -1.0}, ROW1 = {0.0, 0.0, 3.0, 1.0};

    private static double[] logSoftmax(double[] z) {
        double sum = 0;
        for (double x : z) sum += Math.exp(x);
        double[] out = new double[z.length];
        for (int i = 0; i < z.length; i++) out[i] = z[i] - Math.log(sum);
        return out;
    }

    /** softmax(z) − onehot(target): the NLL's gradient. */
    private static double[] gradient(double[] z, int target) {
        double[] lp = logSoftmax(z), g = new double[z.length];
        for (int i = 0; i < z.length; i++) g[i] = Math.exp(lp[i]) - (i == target ? 1 : 0);
        return g;
    }

    private static String format(double... values) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < values.length; i++) b.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.4f", values[i]));
        return b.append(']').toString();
    }

    /** docs/java-api.md shows the example's source as it is, and the coordinate of this version. */
    @Test void thePageShowsTheExampleAndThisVersion() throws Exception {
        String page = Files.readString(Path.of("docs/java-api.md"));
        String source = Files.readString(EXAMPLE.resolve("src/main/java/example/NllGradient.java"));
        assertThat(page).contains(source.substring(source.indexOf("import ")));
        assertThat(page).contains("<groupId>dev.kina</groupId>\n  <artifactId>kina</artifactId>\n  <version>" + version() + "</version>");
        assertThat(page).contains("--add-modules jdk.incubator.vector");
    }
}
