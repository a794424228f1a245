package kina.model;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import kina.ir.KinaException;
import kina.plan.Plan;

/**
 * Memory before and after a run: the check that a train step's plans, their constants and the
 * carried weights and moments fit in the heap before any is allocated, and the process's peak
 * resident set afterwards.
 */
public final class MemoryGuard {
    private MemoryGuard() {}

    /**
     * The arenas of the plans among {@code runners} (−1 when none is a plan), after checking that
     * they, their constants and the carried weights and optimizer moments fit in the heap the JVM
     * may grow to ({@link Runtime#maxMemory}); a plan allocates its arena on its first run, so this
     * comes before any. Throws a one-line KinaException saying how much the step needs otherwise.
     */
    public static long requireMemory(Config c, int batch, Optimizer opt, Runner... runners) {
        long arena = 0, constants = 0;
        boolean any = false;
        for (Runner r : runners)
            if (r instanceof Runner.PlanRunner(Plan p)) {
                arena += p.arenaBytes();
                constants += p.constantBytes();
                any = true;
            }
        if (!any) return -1;
        long params = 0;
        for (StoryLm.Weight w : StoryLm.weights(c)) {
            long n = 1;
            for (long d : w.shape()) n *= d;
            params += n;
        }
        long carried = params * Float.BYTES * Trainer.carried(c, opt).size() / StoryLm.weights(c).size();   // weights and moments
        long need = arena + constants + carried, max = Runtime.getRuntime().maxMemory();
        if (max != Long.MAX_VALUE && need > max)
            throw new KinaException(null, String.format(Locale.ROOT,
                    "config %s at seq %d, batch %d: the train step needs %s (arena %s, weights and optimizer state %s) "
                            + "but the JVM may use %s; lower --batch or --seq, or raise the limit (KINA_JAVA_OPTS=-Xmx%dg)",
                    c.name(), c.seq(), batch, mib(need), mib(arena), mib(carried + constants), mib(max),
                    (long) Math.ceil(need * 1.25 / (1L << 30))));
        return arena;
    }

    /** Bytes in MiB or GiB, one decimal: {@code 312.4 MiB}, {@code 6.2 GiB}. */
    static String mib(long bytes) {
        return bytes >= 1L << 30 ? String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30))
                : String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
    }

    /** The process's peak resident set in bytes (VmHWM of /proc/self/status), −1 where there is none (not Linux). */
    public static long peakRssBytes() {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/self/status")))
                if (l.startsWith("VmHWM:")) return Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024;
        } catch (IOException | RuntimeException e) {
            return -1;       // no procfs
        }
        return -1;
    }
}
