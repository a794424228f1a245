package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import kina.cli.CliTest.Result;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kina train}'s --out and --resume: where a resumed run writes, and the errors before training. */
class TrainCommandTest {
    static final String[] SMALL = {"--batch", "1", "--eval-batches", "1", "--threads", "1", "--no-progress"};

    static Result train(String... args) {
        String[] all = new String[1 + args.length + SMALL.length];
        all[0] = "train";
        System.arraycopy(args, 0, all, 1, args.length);
        System.arraycopy(SMALL, 0, all, 1 + args.length, SMALL.length);
        return CliTest.kina(all);
    }

    @Test void aResumedRunWritesIntoItsOwnDirectoryUnlessOutIsGiven(@TempDir Path dir) throws Exception {
        Path r1 = dir.resolve("r1"), r2 = dir.resolve("r2");
        Result first = train("--steps", "2", "--out", r1.toString());
        assertThat(first.code()).as(first.err()).isZero();

        Result resumed = train("--steps", "3", "--resume", r1.toString());
        assertThat(resumed.code()).as(resumed.err()).isZero();
        assertThat(r1.resolve("step-000003/state.json")).exists();
        assertThat(Files.readString(r1.resolve("latest")).strip()).isEqualTo("step-000003");

        // Resuming from a step directory: still the run's directory.
        Result fromStep = train("--steps", "4", "--resume", r1.resolve("step-000003").toString());
        assertThat(fromStep.code()).as(fromStep.err()).isZero();
        assertThat(Files.readString(r1.resolve("latest")).strip()).isEqualTo("step-000004");

        // An explicit --out that differs is kept; the resumed run is left alone.
        Result elsewhere = train("--steps", "5", "--resume", r1.toString(), "--out", r2.toString());
        assertThat(elsewhere.code()).as(elsewhere.err()).isZero();
        assertThat(r2.resolve("step-000005/state.json")).exists();
        assertThat(r1.resolve("step-000005")).doesNotExist();
        assertThat(Files.readString(r1.resolve("latest")).strip()).isEqualTo("step-000004");
    }

    @Test void aCheckpointOfAnotherConfigFailsBeforeOutIsCreated(@TempDir Path dir) {
        Path r1 = dir.resolve("r1"), r2 = dir.resolve("r2");
        assertThat(train("--steps", "2", "--out", r1.toString()).code()).isZero();
        Result r = train("--steps", "3", "--resume", r1.toString(), "--config", "small", "--out", r2.toString());
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).startsWith("error: ").contains("was trained with config tiny, not small").doesNotContain("\n");
        assertThat(r.err()).doesNotContain("note:");
        assertThat(r2).doesNotExist();
    }

    @Test void aCheckpointAtAnotherSeqNamesTheSeq(@TempDir Path dir) {
        Path r1 = dir.resolve("r1");
        assertThat(train("--steps", "2", "--out", r1.toString()).code()).isZero();
        Result r = train("--steps", "3", "--resume", r1.toString(), "--seq", "32");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).startsWith("error: ").contains("was trained with config tiny but seq 64 there, 32 asked").doesNotContain("\n");
    }

    @Test void aStepTooBigForTheHeapIsRefusedUpFrontInOneLine(@TempDir Path dir) {
        Path out = dir.resolve("r");
        // long at 4096 rows, batch 64: an arena of tens of GiB, past any test JVM's heap
        Result r = CliTest.kina("train", "--config", "long", "--seq", "4096", "--batch", "64", "--steps", "1", "--threads", "1",
                "--no-progress", "--out", out.toString());
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).startsWith("error: config long at seq 4096, batch 64: the train step needs ")
                .contains("GiB (arena ").contains("but the JVM may use ").contains("lower --batch or --seq").doesNotContain("\n");
        assertThat(out).doesNotExist();
        Result seq = CliTest.kina("train", "--config", "long", "--seq", "8192", "--steps", "1", "--out", out.toString());
        assertThat(seq.code()).isEqualTo(1);
        assertThat(seq.err().strip()).isEqualTo("error: config long: --seq 8192: must be in [1, 4096]");
    }

    @Test void badThreadsAndWarmupAreOneLineAndExitOne(@TempDir Path dir) {
        Result threads = CliTest.kina("train", "--steps", "1", "--threads", "0", "--out", dir.toString());
        assertThat(threads.code()).isEqualTo(1);
        assertThat(threads.err().strip()).isEqualTo("error: --threads 0: must be a whole number in 1..4096 (worker threads)");
        Result warmup = train("--steps", "1", "--warmup", "-5", "--out", dir.toString());
        assertThat(warmup.code()).isEqualTo(1);
        assertThat(warmup.err().strip()).isEqualTo("error: --warmup -5: must be a whole number >= 0 (learning-rate warm-up steps)");
    }

    @Test void badOptionsAreOneLineAndExitOneBeforeOutIsCreated(@TempDir Path dir) {
        Path out = dir.resolve("run");
        String[][] cases = {
            {"--lr", "-1", "error: --lr -1: must be a finite number > 0 (the peak learning rate)"},
            {"--lr", "0", "error: --lr 0: must be a finite number > 0 (the peak learning rate)"},
            {"--lr", "NaN", "error: --lr NaN: must be a finite number > 0 (the peak learning rate)"},
            {"--lr", "Infinity", "error: --lr Infinity: must be a finite number > 0 (the peak learning rate)"},
            {"--momentum", "1", "error: --momentum 1: must be in [0, 1) (SGD momentum)"},
            {"--weight-decay", "-1e-2", "error: --weight-decay -1e-2: must be a finite number >= 0 (AdamW decoupled weight decay)"},
            {"--clip", "NaN", "error: --clip NaN: must be a finite number >= 0 (the global gradient-norm clip; 0: no clipping)"},
            {"--micro-batches", "3", "error: --micro-batches 3: must be a power of two (1, 2, 4, …)"},
            {"--micro-batches", "0", "error: --micro-batches 0: must be a power of two (1, 2, 4, …)"},
            {"--micro-batches", "2", "error: --batch 1 is not a multiple of --micro-batches 2: a step's batch is cut into micro-batches of batch / micro-batches sequences"},
            {"--eval-every", "0", "error: --eval-every 0: must be a whole number >= 1 (steps between validations)"},
            {"--checkpoint-every", "0", "error: --checkpoint-every 0: must be a whole number >= 1 (steps between checkpoints)"},
            {"--workers", "2", "error: --workers needs --spark MASTER (the workers are Spark tasks)"},
            // The core's tests run without the kina-spark module on the class path.
            {"--spark", "local[2]", "error: --spark needs the kina-spark module, which is not built: run bin/build-spark (it downloads "
                    + "Apache Spark 4.2.0 from Maven Central once, about 220 MB), then run this again"}};
        for (String[] c : cases) {
            String[] opt = c[0].equals("--momentum") ? new String[] {"--optimizer", "sgd"} : new String[0];
            Result r = train(CliTest.concat(new String[] {"--steps", "1", c[0], c[1], "--out", out.toString()}, opt));
            assertThat(r.code()).as(c[0] + " " + c[1]).isEqualTo(1);
            assertThat(r.err().strip()).isEqualTo(c[2]);
            assertThat(out).doesNotExist();
        }
        // An option the optimizer does not use is not checked: --momentum under adamw trains.
        assertThat(train("--steps", "1", "--momentum", "7", "--out", out.toString()).code()).isZero();
    }

    @Test void stepsNotBeyondTheCheckpointIsOneLineAndExitOne(@TempDir Path dir) {
        Path r1 = dir.resolve("r1");
        assertThat(train("--steps", "2", "--out", r1.toString()).code()).isZero();
        Result r = train("--steps", "1", "--resume", r1.toString());
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).isEqualTo("error: --steps 1 is not beyond the checkpoint's step 2 ("
                + r1.resolve("step-000002") + "): nothing to train");
    }

    @Test void anOutThatIsAFileIsOneLineBeforeTraining(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("passwd"), "root:x:0:0\n");
        // 500 steps with the default checkpoint interval: the old check came only after all of them.
        Result r = train("--steps", "500", "--out", file.toString());
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).isEqualTo("error: --out " + file + ": not a directory");
        assertThat(Files.readString(file)).isEqualTo("root:x:0:0\n");
    }

    /** {@code kina train} in a child JVM whose working directory is {@code cwd} (where runs/ goes); {@link #SMALL} unless a --batch is given. */
    static kina.ChildJvm.Result trainIn(Path cwd, String... args) throws Exception {
        java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of(kina.ChildJvm.java(), "--add-modules", "jdk.incubator.vector",
                "-cp", String.join(java.io.File.pathSeparator, kina.ChildJvm.classPath()), "kina.cli.Main", "train"));
        cmd.addAll(java.util.List.of(args));
        if (!cmd.contains("--batch")) cmd.addAll(java.util.List.of(SMALL));
        return kina.ChildJvm.run(cmd, cwd, 180);
    }

    @Test void aNewRunWithoutOutGetsAFreshNumberedDirectoryAndLatestPointsToIt(@TempDir Path dir) throws Exception {
        Path runs = dir.resolve("runs");
        // runs/latest as a directory: a run written before runs were numbered
        assertThat(trainIn(dir, "--steps", "3", "--out", "runs/latest").exit()).isZero();
        kina.ChildJvm.Result second = trainIn(dir, "--steps", "2");
        assertThat(second.exit()).as(second.describe()).isZero();
        assertThat(second.out()).contains("kina train: runs/latest (a run from before runs were numbered) is now runs/run-0001\n",
                "kina train: this run writes to runs/run-0002 (runs/latest points to it)\n", "checkpoint runs/run-0002/step-000002");
        kina.ChildJvm.Result third = trainIn(dir, "--steps", "1");
        assertThat(third.exit()).as(third.describe()).isZero();
        assertThat(third.out()).contains("kina train: this run writes to runs/run-0003 (runs/latest points to it)\n");

        assertThat(Files.readSymbolicLink(runs.resolve("latest"))).isEqualTo(Path.of("run-0003"));
        assertThat(kina.model.Checkpoint.load(runs.resolve("latest")).state().step()).isEqualTo(1);
        // each run holds its own checkpoints only
        try (var l1 = Files.list(runs.resolve("run-0001")); var l2 = Files.list(runs.resolve("run-0002"))) {
            assertThat(l1.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("step-"))).containsExactly("step-000003");
            assertThat(l2.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("step-"))).containsExactly("step-000002");
        }
        // one refused before training leaves no empty run behind, and latest where it was
        kina.ChildJvm.Result refused = trainIn(dir, "--steps", "1", "--config", "long", "--seq", "4096", "--batch", "64");
        assertThat(refused.exit()).as(refused.describe()).isEqualTo(1);
        assertThat(runs.resolve("run-0004")).doesNotExist();
        assertThat(Files.readSymbolicLink(runs.resolve("latest"))).isEqualTo(Path.of("run-0003"));
    }

    @Test void anOutHoldingAnotherRunIsRefusedInOneLine(@TempDir Path dir) throws Exception {
        Path r1 = dir.resolve("r1");
        assertThat(train("--steps", "2", "--out", r1.toString()).code()).isZero();
        assertThat(train("--steps", "3", "--resume", r1.toString(), "--out", r1.toString()).code()).isZero();   // continuing it there is fine
        Result r = train("--steps", "5", "--out", r1.toString());
        assertThat(r.code()).as(r.err()).isEqualTo(1);
        assertThat(r.err().strip()).isEqualTo("error: --out " + r1 + ": holds the checkpoints of another run (step-000002 … step-000003); "
                + "give a directory of its own to this run, or --resume " + r1 + " to continue that one");
        Path r2 = dir.resolve("r2");
        assertThat(train("--steps", "1", "--out", r2.toString()).code()).isZero();
        Result other = train("--steps", "5", "--resume", r1.toString(), "--out", r2.toString());
        assertThat(other.code()).isEqualTo(1);
        assertThat(other.err().strip()).startsWith("error: --out " + r2 + ": holds the checkpoints of another run (step-000001); ");
        try (var l = Files.list(r1)) {
            assertThat(l.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("step-"))).containsExactlyInAnyOrder("step-000002", "step-000003");
        }
    }
}
