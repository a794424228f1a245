package kina.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class ProgressTest {
    private final ByteArrayOutputStream buf = new ByteArrayOutputStream();
    private final PrintStream out = new PrintStream(buf, true, StandardCharsets.UTF_8);
    private final AtomicLong clock = new AtomicLong(0);

    private String printed() { return buf.toString(StandardCharsets.UTF_8); }

    @Test void linesEveryNStepsWithSpeedAndEta() {
        try (Progress p = new Progress(Progress.Mode.LINES, "train", 0, 1000, 512, 100, out, clock::get)) {
            for (int s = 1; s <= 250; s++) {
                clock.addAndGet(10_000_000);   // 10 ms a step
                p.update(s, 3.0 - s * 0.001, s >= 200 ? 2.9 : Double.NaN);
            }
        }
        assertThat(printed().lines().toList()).containsExactly(
                "step  100/1000  loss 2.9000  val -  51200 tok/s  eta 0:00:09",
                "step  200/1000  loss 2.8000  val 2.9000  51200 tok/s  eta 0:00:08",
                "step  250/1000  loss 2.7500  val 2.9000  51200 tok/s  eta 0:00:07");
    }

    /** A validation loss measured at an earlier step says which, instead of passing for the line's own. */
    @Test void anEarlierValidationLossSaysItsStep() {
        try (Progress p = new Progress(Progress.Mode.LINES, "train", 0, 300, 512, 50, out, clock::get)) {
            for (int s = 1; s <= 300; s++) {
                clock.addAndGet(10_000_000);
                p.update(s, 2.0, s % 100 == 0 ? 2.0 + s / 1000.0 : Double.NaN);
            }
        }
        assertThat(printed().lines().map(l -> l.replaceAll("  \\d+ tok/s.*", "")).toList()).containsExactly(
                "step  50/300  loss 2.0000  val -",
                "step 100/300  loss 2.0000  val 2.1000",
                "step 150/300  loss 2.0000  val 2.1000@100",
                "step 200/300  loss 2.0000  val 2.2000",
                "step 250/300  loss 2.0000  val 2.2000@200",
                "step 300/300  loss 2.0000  val 2.3000");
    }

    /**
     * Once the ETA is known it stays shown: the slow steps that carry a validation pass make the
     * window's newer half look faster, which is not the JIT warming up (they gave "eta -" at steps
     * 440, 560, 640, … of this run).
     */
    @Test void theEtaOnceKnownStaysThroughValidationPasses() {
        try (Progress p = new Progress(Progress.Mode.LINES, "train", 0, 2000, 100, 40, out, clock::get)) {
            steps(p, 1, 2000, s -> 10_000_000L + (s % 100 == 0 ? 200_000_000L : 0));   // 10 ms a step, validation 200 ms
        }
        assertThat(printed().lines().filter(l -> l.endsWith("eta -")).toList()).as(printed()).isEmpty();
    }

    @Test void aResumedRunCountsOnlyItsOwnSteps() {
        try (Progress p = new Progress(Progress.Mode.LINES, "train", 500, 1000, 100, 50, out, clock::get)) {
            clock.set(2_000_000_000L);
            p.update(550, 1.5, Double.NaN);
            assertThat(p.tokensPerSecond()).isEqualTo(2500.0);
            assertThat(p.eta()).as("one update: no ETA yet").isNull();
            clock.set(4_000_000_000L);
            p.update(600, 1.4, Double.NaN);
            assertThat(p.eta().toSeconds()).isEqualTo(16);
        }
        assertThat(printed()).isEqualTo("step  550/1000  loss 1.5000  val -  2500 tok/s  eta -\n"
                + "step  600/1000  loss 1.4000  val -  2500 tok/s  eta 0:00:16\n");
    }

    /** A slow start (the JIT warming up) does not stay in the speed: it is measured over a recent window. */
    @Test void theSpeedAndEtaComeFromARecentWindowNotTheWarmUp() {
        try (Progress p = new Progress(Progress.Mode.OFF, "train", 0, 1000, 100, 50, out, clock::get)) {
            steps(p, 1, 200, s -> s <= 40 ? 200_000_000L : 10_000_000L);   // 40 steps of 200 ms, then 10 ms a step
            // 9.6 s so far; a running average would say 48 ms a step (2083 tok/s, eta 38 s)
            assertThat(p.tokensPerSecond()).isEqualTo(10_000.0, org.assertj.core.data.Offset.offset(1e-6));
            assertThat(p.eta().toSeconds()).isEqualTo(8);
        }
    }

    /**
     * While each window runs faster than the one before (the JIT at work), the ETA is not guessed;
     * once the speed has settled it is, and it stays.
     */
    @Test void noEtaWhileTheSpeedIsStillRising() {
        try (Progress p = new Progress(Progress.Mode.LINES, "train", 0, 1000, 100, 5, out, clock::get)) {
            steps(p, 1, 20, s -> (long) (400_000_000L * Math.pow(0.85, s)));   // each step 15 % faster than the last
            assertThat(p.eta()).isNull();
            assertThat(printed().lines().toList()).hasSize(4).allMatch(l -> l.endsWith("eta -"));
            steps(p, 21, 300, _ -> 10_000_000L);             // settled at 10 ms a step
            assertThat(p.eta().toSeconds()).isEqualTo(7);
            List<String> lines = printed().lines().toList();
            int first = lines.indexOf(lines.stream().filter(l -> !l.endsWith("eta -")).findFirst().orElseThrow());
            assertThat(lines.subList(first, lines.size())).noneMatch(l -> l.endsWith("eta -"));
        }
    }

    @Test void theLastStepLeavesNothing() {
        try (Progress p = new Progress(Progress.Mode.OFF, "train", 0, 10, 100, 1, out, clock::get)) {
            steps(p, 1, 10, s -> 1_000_000_000L / s);         // still speeding up at the end
            assertThat(p.eta()).isEqualTo(java.time.Duration.ZERO);
        }
    }

    /** Steps from … to of Progress p, step s taking nanos(s). */
    private void steps(Progress p, int from, int to, java.util.function.LongUnaryOperator nanos) {
        for (int s = from; s <= to; s++) {
            clock.addAndGet(nanos.applyAsLong(s));
            p.update(s, 1, Double.NaN);
        }
    }

    @Test void offPrintsNothing() {
        try (Progress p = new Progress(Progress.Mode.OFF, "train", 0, 10, 1, 1, out, clock::get)) {
            for (int s = 1; s <= 10; s++) p.update(s, 1, 1);
        }
        assertThat(printed()).isEmpty();
    }

    @Test void barDrawsToTheGivenStream() {
        try (Progress p = new Progress(Progress.Mode.BAR, "train", 0, 10, 64, 1, out)) {
            for (int s = 1; s <= 10; s++) p.update(s, 2.5, 2.75);
        }
        assertThat(printed()).contains("train").contains("10/10").contains("loss 2.5000").contains("val 2.7500");
    }
}
