package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import kina.model.Checkpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/kina} itself, run on the classes under test: a copy of the launcher beside a
 * {@code target/kina.jar} that holds only a manifest naming the test's class path, so the launcher
 * finds its jar fresh and builds nothing.
 */
class LauncherTest {

    /** A copy of {@code bin/kina} (and {@code bin/find-jdk}) under {@code home}, running this JVM's classes; answers the launcher. */
    static Path launcher(Path home) throws IOException {
        Files.createDirectories(home.resolve("bin"));
        Files.createDirectories(home.resolve("src/main"));
        Files.createDirectories(home.resolve("target"));
        for (String f : List.of("kina", "find-jdk"))
            Files.copy(Path.of("bin", f), home.resolve("bin").resolve(f), StandardCopyOption.COPY_ATTRIBUTES);
        Files.writeString(home.resolve("pom.xml"), "");
        Manifest m = new Manifest();
        m.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        m.getMainAttributes().put(Attributes.Name.MAIN_CLASS, "kina.cli.Main");
        m.getMainAttributes().put(Attributes.Name.CLASS_PATH, Arrays.stream(System.getProperty("java.class.path").split(java.io.File.pathSeparator))
                .map(e -> Path.of(e).toAbsolutePath().toUri().toString()).collect(Collectors.joining(" ")));
        new JarOutputStream(Files.newOutputStream(home.resolve("target/kina.jar")), m).close();   // the manifest is the whole jar
        FileTime before = FileTime.from(Instant.now().minus(1, ChronoUnit.HOURS));   // older than the jar: not stale
        Files.setLastModifiedTime(home.resolve("pom.xml"), before);
        Files.setLastModifiedTime(home.resolve("src/main"), before);
        return home.resolve("bin/kina");
    }

    /** The process and its environment for {@code command}, with the launcher finding this JVM's JDK. */
    static ProcessBuilder process(List<String> command) {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().remove("KINA_JAVA_OPTS");
        return pb;
    }

    private static String quoted(Path p) {
        return "'" + p.toString().replace("'", "'\\''") + "'";
    }

    /**
     * Ctrl-C typed into a real pseudo-terminal ({@code script(1)} holds it; the byte 0x03 makes the
     * terminal signal its whole foreground process group): the launcher, java and the stderr filter
     * all get SIGINT, and the run still checkpoints, prints how to resume and exits 130.
     */
    @Test void ctrlCInATerminalCheckpointsPrintsHowToResumeAndExits130(@TempDir Path dir) throws Exception {
        Path script = kina.ChildJvm.require("script", "script(1) (util-linux; Debian's bsdutils) is not on PATH, so bin/kina's Ctrl-C test in a pseudo-terminal is skipped");
        Path kina = launcher(dir.resolve("home"));
        Path out = dir.resolve("run");
        String cmd = "exec " + quoted(kina) + " train --steps 100000 --batch 1 --threads 1 --eval-every 100000 --eval-batches 1"
                + " --checkpoint-every 100000 --no-progress --out " + quoted(out);
        ProcessBuilder pb = process(List.of(script.toString(), "-q", "-e", "-c", cmd, "/dev/null"));
        pb.environment().put("SHELL", "/bin/sh");                // script(1) runs $SHELL -c CMD; CMD's exec leaves bin/kina in its place
        Process p = pb.start();
        StringBuilder text = new StringBuilder();
        Thread reader = Thread.ofVirtual().start(() -> {
            try (Reader r = new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)) {
                char[] buf = new char[4096];
                for (int n; (n = r.read(buf)) > 0; ) synchronized (text) { text.append(buf, 0, n); }
            } catch (IOException e) {
                // the terminal closed
            }
        });
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            // a progress line: steps are under way
            while (p.isAlive() && System.nanoTime() < deadline && !snapshot(text).contains("step ")) Thread.sleep(20);
            assertThat(p.isAlive()).as(snapshot(text)).isTrue();
            p.getOutputStream().write(3);                             // Ctrl-C
            p.getOutputStream().flush();
            assertThat(p.waitFor(120, TimeUnit.SECONDS)).as(snapshot(text)).isTrue();
            reader.join(TimeUnit.SECONDS.toMillis(10));
            String all = snapshot(text);
            assertThat(p.exitValue()).as(all).isEqualTo(130);
            Matcher m = Pattern.compile("stopped by SIGINT after step (\\d+) of 100000; checkpoint (\\S+); resume with: kina train --resume "
                    + Pattern.quote(out.toString()) + " --steps 100000").matcher(all);
            assertThat(m.find()).as(all).isTrue();
            assertThat(Checkpoint.load(out).state().step()).isEqualTo(Long.parseLong(m.group(1)));
            assertThat(all).doesNotContain("WARNING: Using incubator modules");
        } finally {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
    }

    private static String snapshot(StringBuilder text) {
        synchronized (text) {
            return text.toString();
        }
    }
}
