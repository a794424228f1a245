package kina.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A stop request (SIGTERM, Ctrl-C) ends training after the step in progress, with a checkpoint of it and how to resume. */
class TrainerStopTest {
    @Test void aStopRequestCheckpointsTheLastCompletedStep(@TempDir Path dir) {
        Trainer t = new Trainer(TrainerTest.options(20, dir, null), TrainerTest.slice());
        t.requestStop("SIGTERM");                                 // before the first step: it stops after it
        assertThatThrownBy(() -> t.run(TrainerTest.QUIET)).isInstanceOf(Trainer.Stopped.class)
                .hasMessage("stopped by SIGTERM after step 1 of 20; checkpoint " + dir.resolve("step-000001")
                        + "; resume with: kina train --resume " + dir + " --steps 20");
        Checkpoint.Loaded ck = Checkpoint.load(dir);
        assertThat(ck.state().step()).isEqualTo(1);
        Trainer.Summary resumed = new Trainer(TrainerTest.options(2, dir, dir), TrainerTest.slice()).run(TrainerTest.QUIET);
        assertThat(resumed.fromStep()).isEqualTo(1);
    }

    @Test void sigtermDuringTrainWritesACheckpointAndExits143(@TempDir Path dir) throws Exception {
        Path data = dir.resolve("slice.txt");
        Files.write(data, TrainerTest.slice().bytes());
        Path out = dir.resolve("run");
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "--add-modules", "jdk.incubator.vector", "-cp", System.getProperty("java.class.path"),
                "kina.cli.Main", "train", "--data", data.toString(), "--steps", "500", "--batch", "1", "--threads", "1",
                "--out", out.toString(), "--eval-every", "500", "--eval-batches", "1", "--checkpoint-every", "500", "--no-progress"));
        Process child = new ProcessBuilder(cmd).redirectOutput(dir.resolve("out.log").toFile()).redirectError(dir.resolve("err.log").toFile()).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        // the second progress line: steps are under way
        while (child.isAlive() && System.nanoTime() < deadline && Files.readAllLines(dir.resolve("out.log")).size() < 3) Thread.sleep(20);
        assertThat(child.isAlive()).as(Files.readString(dir.resolve("err.log"))).isTrue();
        child.destroy();                                              // SIGTERM
        assertThat(child.waitFor(120, TimeUnit.SECONDS)).isTrue();
        String err = Files.readString(dir.resolve("err.log"));
        assertThat(child.exitValue()).as(err).isEqualTo(143);
        Matcher m = Pattern.compile("stopped by SIGTERM after step (\\d+) of 500; checkpoint (\\S+); resume with: kina train --resume "
                + Pattern.quote(out.toString()) + " --steps 500").matcher(err);
        assertThat(m.find()).as(err).isTrue();
        assertThat(err.lines().filter(l -> !l.isBlank() && !l.startsWith("WARNING: Using incubator")).count()).as(err).isEqualTo(2);   // the notice, then the line
        long step = Long.parseLong(m.group(1));
        assertThat(Checkpoint.load(out).state().step()).isEqualTo(step);
        assertThat(Path.of(m.group(2))).isEqualTo(out.resolve(Checkpoint.stepDirName(step)));
    }
}
