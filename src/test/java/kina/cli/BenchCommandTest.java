package kina.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@code kina bench}: exactly one parseable result line per engine, a profile on request, one-line errors. */
class BenchCommandTest {
    static final String LINE = "kina bench: config=tiny batch=1 seq=64 threads=1 engine=%s steps=2 ms/step min=\\d+\\.\\d "
            + "median=\\d+\\.\\d max=\\d+\\.\\d tokens/s=\\d+( peak_rss_mb=\\d+)?%s"
            + (allocationCounted() ? " heap_kb_per_step=\\d+\\.\\d" : "");

    /** Whether this JVM counts the bytes its threads allocate (HotSpot does): then the line must carry heap_kb_per_step. */
    static boolean allocationCounted() {
        return java.lang.management.ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean t
                && t.isThreadAllocatedMemorySupported() && t.isThreadAllocatedMemoryEnabled();
    }

    @Test void printsOneResultLinePerEngine() {
        for (String engine : new String[] {"plan", "interpreter"}) {
            CliTest.Result r = CliTest.kina("bench", "--config", "tiny", "--steps", "2", "--batch", "1", "--threads", "1", "--warmup-seconds", "0", "--engine", engine);
            assertThat(r.code()).as(r.err()).isZero();
            // the plan's arena; the interpreter has none
            assertThat(r.out().strip()).matches(LINE.formatted(engine, engine.equals("plan") ? " arena_mb=\\d+\\.\\d" : ""));
        }
    }

    /** train's summary reports the train step's arena as bench does (the validation plan's beside it), for the same config and batch. */
    @Test void trainAndBenchReportTheSameArena(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        CliTest.Result b = CliTest.kina("bench", "--config", "tiny", "--steps", "1", "--batch", "2", "--threads", "1", "--warmup-seconds", "0");
        CliTest.Result t = CliTest.kinaCapturingStdout("train", "--config", "tiny", "--steps", "1", "--batch", "2", "--threads", "1",
                "--eval-batches", "1", "--no-progress", "--out", dir.resolve("run").toString());
        assertThat(b.code()).as(b.err()).isZero();
        assertThat(t.code()).as(t.err()).isZero();
        java.util.regex.Matcher bench = java.util.regex.Pattern.compile(" arena_mb=([0-9.]+) ").matcher(b.out());
        java.util.regex.Matcher train = java.util.regex.Pattern.compile("; arena ([0-9.]+) MiB \\(validation [0-9.]+ MiB\\)").matcher(t.out());
        assertThat(bench.find()).as(b.out()).isTrue();
        assertThat(train.find()).as(t.out()).isTrue();
        assertThat(train.group(1)).isEqualTo(bench.group(1));
    }

    @Test void timesTheDecodeStep() {
        CliTest.Result r = CliTest.kina("bench", "--decode", "--config", "tiny", "--steps", "3", "--threads", "1", "--warmup-seconds", "0");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out().strip()).matches("kina bench: config=tiny decode threads=1 steps=3 ms/token min=\\d+\\.\\d{3} median=\\d+\\.\\d{3} "
                + "max=\\d+\\.\\d{3} tokens/s=\\d+( peak_rss_mb=\\d+)?");
    }

    @Test void profilesByInstructionKind() {
        CliTest.Result r = CliTest.kina("bench", "--config", "tiny", "--steps", "2", "--batch", "1", "--threads", "1", "--warmup-seconds", "0", "--profile");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out().lines().filter(l -> l.startsWith("kina bench:")).count()).isEqualTo(1);
        assertThat(r.out()).contains("profile: warm-up: 2 train steps").contains("profile: matmul").containsPattern("profile: arena [0-9.]+ MB in \\d+ buffers");
    }

    @Test void profilesEveryStepInScheduleOrder() {
        String[] args = {"bench", "--config", "tiny", "--steps", "2", "--batch", "1", "--threads", "1", "--warmup-seconds", "0"};
        CliTest.Result steps = CliTest.kina(concat(args, "--profile-steps")), kinds = CliTest.kina(concat(args, "--profile"));
        assertThat(steps.code()).as(steps.err()).isZero();
        assertThat(kinds.code()).as(kinds.err()).isZero();
        assertThat(steps.out()).contains("profile: warm-up: 2 train steps").contains("times below: mean per train step over the 2 timed ones")
                .containsPattern("profile: arena [0-9.]+ MB in \\d+ buffers");
        java.util.List<String> lines = steps.out().lines().filter(l -> l.matches("  profile: +\\d+ .*")).toList();
        for (int i = 0; i < lines.size(); i++)                 // numbered in order, each with its let, what it runs and its time
            assertThat(lines.get(i)).matches("  profile: +" + i + " \\S+ +\\S.* +\\d+\\.\\d{4} ms( [0-9.]+ GFLOP/s)?");
        assertThat(lines).anyMatch(l -> l.contains(" matmul ") && l.endsWith("GFLOP/s"));
        // one line per step: as many as the kinds' kernels per run add up to
        int kernels = kinds.out().lines().map(l -> java.util.regex.Pattern.compile("\\((\\d+) kernels per run\\)").matcher(l))
                .filter(java.util.regex.Matcher::find).mapToInt(m -> Integer.parseInt(m.group(1))).sum();
        assertThat(kernels).isPositive();
        assertThat(lines).hasSize(kernels);
    }

    @Test void profileAndProfileStepsAreExclusive() {
        CliTest.Result r = CliTest.kina("bench", "--config", "tiny", "--steps", "1", "--batch", "1", "--warmup-seconds", "0", "--profile", "--profile-steps");
        assertThat(r.code()).isNotZero();
        assertThat(r.err().strip()).contains("--profile and --profile-steps are exclusive").doesNotContain("\tat ");
        assertThat(r.out()).doesNotContain("kina bench:");
    }

    private static String[] concat(String[] a, String b) {
        String[] r = java.util.Arrays.copyOf(a, a.length + 1);
        r[a.length] = b;
        return r;
    }

    @Test void stepTimesListEveryTimedStepAndItsJitTime() {
        CliTest.Result r = CliTest.kina("bench", "--config", "tiny", "--steps", "3", "--batch", "1", "--threads", "1", "--warmup-seconds", "0", "--step-times");
        assertThat(r.code()).as(r.err()).isZero();
        java.util.List<String> lines = r.out().lines().toList();
        assertThat(lines).hasSize(3);                     // HotSpot tells the JIT's time
        assertThat(lines.get(2)).matches("  jit_ms: \\d+ \\d+ \\d+");
        assertThat(lines.get(1)).matches("  steps_ms: \\d+\\.\\d \\d+\\.\\d \\d+\\.\\d");
        // the result line's min and max are the smallest and largest of the listed steps
        double[] ms = java.util.Arrays.stream(lines.get(1).strip().substring("steps_ms: ".length()).split(" ")).mapToDouble(Double::parseDouble).toArray();
        assertThat(lines.get(0)).contains("min=" + String.format(java.util.Locale.ROOT, "%.1f", java.util.Arrays.stream(ms).min().orElseThrow()))
                .contains("max=" + String.format(java.util.Locale.ROOT, "%.1f", java.util.Arrays.stream(ms).max().orElseThrow()));
    }

    @Test void anUnknownEngineIsOneLine() {
        CliTest.Result r = CliTest.kina("bench", "--config", "tiny", "--steps", "1", "--engine", "gpu");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).isEqualTo("error: --engine gpu: unknown (plan, interpreter or native)");
    }

    @Test void aNegativeWarmupIsOneLine() {
        CliTest.Result r = CliTest.kina("bench", "--config", "tiny", "--steps", "1", "--warmup-seconds", "-1");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip()).isEqualTo("error: --warmup-seconds -1: must be a finite number >= 0 (warm-up seconds before the timed steps)");
    }
}
