package kina.model;

import java.io.PrintStream;
import java.io.Console;
import java.time.Duration;
import java.util.Locale;
import java.util.function.LongSupplier;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * Training progress: step/total, loss, validation loss, tokens per second and ETA. On a terminal
 * a progress bar (me.tongfei progressbar) redrawn in place; elsewhere (CI, a pipe, a log file)
 * plain lines every {@code every} steps and at the last step; or nothing (tests).
 *
 * <p>Tokens per second and the ETA are measured over a recent window (the last tenth of the
 * time since this Progress began, at most {@link #MAX_WINDOW_NANOS}), not from the start: the
 * first steps run while the JIT compiles the kernels, and an average over them put the early
 * ETA minutes off. Until two steps are measured, and while the speed is still rising at the start
 * (the window's newer half more than a fifth faster than its older half), the ETA is not known yet
 * and shows as {@code -}; once known it is always shown, since later a validation pass or a pause
 * also makes the newer half look faster. Both count only this Progress's own steps, so a resumed
 * run reports its own speed.
 *
 * <p>The validation loss is the latest measured; measured at an earlier step than the line's, it
 * says which ({@code val 2.4012@100}).
 */
public final class Progress implements AutoCloseable {
    public enum Mode {
        BAR, LINES, OFF;

        /** BAR when standard output is a terminal, else LINES. */
        public static Mode auto() {
            Console c = System.console();
            return c != null && c.isTerminal() ? BAR : LINES;
        }
    }

    private final Mode mode;
    private final long start;
    private final long total;
    private final long tokensPerStep;
    private final long every;
    private final PrintStream out;
    private final LongSupplier nanos;
    private final long t0;
    private final ProgressBar bar;
    /** (time, step) of recent updates, oldest first; the start is the first. */
    private final java.util.ArrayDeque<long[]> recent = new java.util.ArrayDeque<>();

    /** The longest window the speed is measured over. */
    public static final long MAX_WINDOW_NANOS = 30_000_000_000L;
    /** The fewest updates the window keeps (a slow run's window then still spans several steps). */
    static final int MIN_SAMPLES = 5;
    private long lastStep, lastValStep;
    private double lastLoss = Double.NaN, lastVal = Double.NaN;
    /** Whether an ETA has been shown: from then on one is always shown (see the class comment). */
    private volatile boolean etaKnown;
    private boolean lastPrinted = true;

    /**
     * Starts reporting a run from {@code startStep} (0 for a fresh run) to {@code totalSteps};
     * each step consumes {@code tokensPerStep} tokens (batch × seq).
     */
    public Progress(Mode mode, String task, long startStep, long totalSteps, long tokensPerStep, long every, PrintStream out) {
        this(mode, task, startStep, totalSteps, tokensPerStep, every, out, System::nanoTime);
    }

    /** As above, with a clock (nanoseconds) for tests. */
    public Progress(Mode mode, String task, long startStep, long totalSteps, long tokensPerStep, long every, PrintStream out, LongSupplier nanos) {
        if (every < 1) throw new IllegalArgumentException("every must be positive, got " + every);
        this.mode = mode;
        this.start = startStep;
        this.total = totalSteps;
        this.tokensPerStep = tokensPerStep;
        this.every = every;
        this.out = out;
        this.nanos = nanos;
        this.t0 = nanos.getAsLong();
        this.lastStep = startStep;
        recent.add(new long[] {t0, startStep});
        if (mode == Mode.BAR) quietTerminal();
        this.bar = switch (mode) {
            case BAR -> new ProgressBarBuilder().setTaskName(task).setInitialMax(totalSteps)
                    .startsFrom(startStep, Duration.ZERO)
                    .setStyle(ProgressBarStyle.COLORFUL_UNICODE_BLOCK)
                    .setConsumer(new ConsoleProgressBarConsumer(out))
                    .setUpdateIntervalMillis(250)
                    .setEtaFunction(_ -> java.util.Optional.ofNullable(eta()))
                    .build();
            case LINES, OFF -> null;
        };
    }

    /**
     * Keeps jline (the bar's terminal library) off its JNI provider, whose native-library load
     * prints a JDK "restricted method" warning; the exec provider (stty) sizes the bar instead.
     * A property the user set on the command line wins.
     */
    private static void quietTerminal() {
        for (String key : new String[] {"org.jline.terminal.exec.redirectPipeCreationMode", "org.jline.terminal.pty.fileDescriptorCreationMode"})
            if (System.getProperty(key) == null) System.setProperty(key, "reflection");
        if (System.getProperty("org.jline.terminal.jni") == null) System.setProperty("org.jline.terminal.jni", "false");
    }

    /** Reports that {@code step} is done with training loss {@code loss}; {@code valLoss} NaN when not measured yet. */
    public void update(long step, double loss, double valLoss) {
        lastStep = step;
        long now = nanos.getAsLong(), window = Math.min(MAX_WINDOW_NANOS, (now - t0) / 10);
        recent.add(new long[] {now, step});
        // keep the newest sample before the window, and at least MIN_SAMPLES, so the window spans a few steps
        while (recent.size() > MIN_SAMPLES) {
            java.util.Iterator<long[]> it = recent.iterator();
            it.next();
            if (it.next()[0] > now - window) break;
            recent.removeFirst();
        }
        lastLoss = loss;
        if (!Double.isNaN(valLoss)) {
            lastVal = valLoss;
            lastValStep = step;
        }
        switch (mode) {
            case BAR -> {
                bar.stepTo(step);
                bar.setExtraMessage(metrics(loss, tokensPerSecond()));
            }
            case LINES -> {
                lastPrinted = step % every == 0 || step == total;
                if (lastPrinted) out.println(line());
            }
            case OFF -> { }
        }
    }

    /** Tokens per second over the recent window (0 before the first step). */
    public double tokensPerSecond() {
        double perStep = nanosPerStep();
        return perStep > 0 ? tokensPerStep / (perStep / 1e9) : 0;
    }

    /**
     * The estimated time to the last step at the recent window's speed; null until two steps are
     * measured and while the speed is still rising at the start (the JIT warming up).
     */
    public Duration eta() {
        double perStep = nanosPerStep();
        if (perStep >= 0 && lastStep >= total) return Duration.ZERO;
        if (perStep < 0 || recent.size() < 3) return null;
        if (!etaKnown) {
            if (rising() != Boolean.FALSE) return null;            // rising, or too few samples to tell
            etaKnown = true;
        }
        return Duration.ofNanos((long) (perStep * Math.max(0, total - lastStep)));
    }

    /**
     * Whether the window's newer half ran more than a fifth faster per step than its older half;
     * null when no sample splits the window into two halves of at least a step each.
     */
    private Boolean rising() {
        if (recent.size() < 3) return null;
        long[] a = recent.getFirst(), z = recent.getLast();
        long mid = a[0] + (z[0] - a[0]) / 2;
        long[] m = null;
        for (long[] s : recent) if (s[0] <= mid) m = s;                 // the last sample at or before the middle
        if (m == null || m == a || m == z || m[1] == a[1] || z[1] == m[1]) return null;
        double older = (double) (m[0] - a[0]) / (m[1] - a[1]), newer = (double) (z[0] - m[0]) / (z[1] - m[1]);
        return newer < 0.8 * older;
    }

    /** Nanoseconds per step over the window, from its oldest sample to the newest; −1 before the first step. */
    private double nanosPerStep() {
        long[] a = recent.getFirst(), b = recent.getLast();
        long steps = b[1] - a[1];
        return steps > 0 ? (double) (b[0] - a[0]) / steps : -1;
    }

    /**
     * The plain line for the latest update: {@code step 120/1000  loss 2.3456  val 2.4012@100  1234
     * tok/s  eta 0:03:12} (the validation loss measured at step 100; at step 120 itself it has no {@code @}).
     */
    public String line() {
        int w = Long.toString(total).length();
        return String.format(Locale.ROOT, "step %" + w + "d/%d  %s  eta %s", lastStep, total,
                metrics(lastLoss, tokensPerSecond()), clock(eta()));
    }

    private String metrics(double loss, double tps) {
        String val = Double.isNaN(lastVal) ? "-" : String.format(Locale.ROOT, lastValStep == lastStep ? "%.4f" : "%.4f@%d", lastVal, lastValStep);
        return String.format(Locale.ROOT, "loss %.4f  val %s  %.0f tok/s", loss, val, tps);
    }

    private static String clock(Duration d) {
        if (d == null) return "-";
        long s = d.toSeconds();
        return String.format(Locale.ROOT, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
    }

    /** Finishes the bar, or prints the last line if the line mode skipped it. */
    @Override public void close() {
        switch (mode) {
            case BAR -> bar.close();
            case LINES -> { if (!lastPrinted) { out.println(line()); lastPrinted = true; } }
            case OFF -> { }
        }
    }
}
