package kina;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Other processes a test starts: a JVM of this JDK on the test's class path, programs on PATH. */
public final class ChildJvm {
    private ChildJvm() {}

    /** The java launcher of the JDK running the tests. */
    public static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** The tests' class path entries (classes, test classes, every dependency jar). */
    public static List<String> classPath() {
        return List.of(System.getProperty("java.class.path").split(File.pathSeparator));
    }

    /** The program {@code name} on PATH, or null. */
    public static Path onPath(String name) {
        for (String d : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path p = Path.of(d.isEmpty() ? "." : d, name);
            if (Files.isExecutable(p) && !Files.isDirectory(p)) return p;
        }
        return null;
    }

    /**
     * The program {@code name} on PATH; without it the test is skipped with {@code why} (a JUnit
     * assumption and a line on stderr), or fails under {@code CI=true}, where every tool is installed.
     */
    public static Path require(String name, String why) {
        Path p = onPath(name);
        if (p != null) return p;
        if ("true".equals(System.getenv("CI"))) org.junit.jupiter.api.Assertions.fail("CI=true: " + why);
        System.err.println("SKIPPED: " + why);
        org.junit.jupiter.api.Assumptions.abort(why);
        throw new IllegalStateException("unreachable");
    }

    /** What a finished process said and answered. */
    public record Result(int exit, String out, String err) {
        /** The exit code, stdout and stderr, for an assertion's description. */
        public String describe() { return "exit " + exit + "\n--- stdout\n" + out + "--- stderr\n" + err; }
    }

    /** Runs {@code command} in {@code dir} with JAVA_HOME set to this JDK, at most {@code seconds}; stdout and stderr kept apart. */
    public static Result run(List<String> command, Path dir, int seconds) throws IOException, InterruptedException {
        Path out = Files.createTempFile("kina-child", ".out"), err = Files.createTempFile("kina-child", ".err");
        try {
            ProcessBuilder pb = new ProcessBuilder(new ArrayList<>(command)).directory(dir.toFile())
                    .redirectOutput(out.toFile()).redirectError(err.toFile()).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
            pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
            Process p = pb.start();
            if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly().waitFor();
                throw new AssertionError(command + ": still running after " + seconds + " s\n" + Files.readString(out) + Files.readString(err));
            }
            return new Result(p.exitValue(), Files.readString(out), Files.readString(err));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }
}
