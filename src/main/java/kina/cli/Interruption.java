package kina.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * SIGINT (Ctrl-C) and SIGTERM turned into a request to stop, for a long command that can stop
 * cleanly (train: after the step in progress, with a checkpoint). A second signal of either kind
 * exits at once with the usual status (128 + the signal's number), as without a handler, except a
 * repeat of the first within {@link #COPY_NANOS}: that is a copy of it, as when a signal sent to a
 * process group reaches kina directly and through a launcher that passes it on ({@code bin/kina}),
 * or {@code timeout(1)} sends it to the process and then to its group. The previous handlers come
 * back on {@link Handlers#close}.
 */
final class Interruption {
    private Interruption() {}

    /** How soon after the first signal the same signal again counts as a copy of it, not a second request. */
    static final long COPY_NANOS = 1_000_000_000L;

    /** The handlers installed; closing restores the previous ones. */
    interface Handlers extends AutoCloseable {
        @Override void close();
    }

    /** Installs the handlers; {@code stop} gets the signal's name, {@code SIGINT} or {@code SIGTERM}. */
    static Handlers onSignals(Consumer<String> stop) {
        List<Signal> signals = new ArrayList<>();
        List<SignalHandler> previous = new ArrayList<>();
        Object lock = new Object();
        String[] first = {null};
        long[] firstAt = {0};
        for (String name : new String[] {"INT", "TERM"}) {
            Signal sig = new Signal(name);
            try {
                previous.add(Signal.handle(sig, s -> {
                    synchronized (lock) {
                        if (first[0] != null) {
                            if (first[0].equals(s.getName()) && System.nanoTime() - firstAt[0] < COPY_NANOS) return;
                            Runtime.getRuntime().halt(128 + s.getNumber());      // the second signal: now
                        }
                        first[0] = s.getName();
                        firstAt[0] = System.nanoTime();
                    }
                    System.err.println("kina: " + "SIG" + s.getName() + ": stopping after the step in progress "
                            + "(signal again to stop at once, without a checkpoint)");
                    stop.accept("SIG" + s.getName());
                }));
                signals.add(sig);
            } catch (IllegalArgumentException e) {
                // the JVM keeps this signal (e.g. -Xrs): leave its default
            }
        }
        return () -> {
            for (int i = 0; i < signals.size(); i++) Signal.handle(signals.get(i), previous.get(i));
        };
    }

    /** The number of {@code SIGINT} or {@code SIGTERM} (2, 15), for the exit status 128 + n. */
    static int number(String name) {
        return switch (name) {
            case "SIGINT" -> 2;
            case "SIGTERM" -> 15;
            default -> 1;
        };
    }
}
