package kina.kernels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The pool: every chunk runs once, on any number of threads, nested calls and callers on several
 * threads at once included; failures reach the caller; a call returns only when its chunks are done.
 */
class ParallelTest {
    @AfterAll static void restoreThreads() { Parallel.setThreads(Runtime.getRuntime().availableProcessors()); }

    @Test void everyChunkRunsExactlyOnce() {
        for (int threads : new int[] {1, 2, 3, 8}) {
            Parallel.setThreads(threads);
            for (int chunks : new int[] {0, 1, 2, 7, 1000}) {
                AtomicIntegerArray runs = new AtomicIntegerArray(Math.max(1, chunks));
                Parallel.forEach(chunks, 1L << 30, runs::incrementAndGet);
                for (int c = 0; c < chunks; c++) assertThat(runs.get(c)).as("threads %d chunk %d", threads, c).isEqualTo(1);
            }
        }
    }

    @Test void nestedCallsRunTheirChunks() {
        Parallel.setThreads(2);
        AtomicIntegerArray runs = new AtomicIntegerArray(64 * 16);
        Parallel.forEach(64, 1L << 30, o -> Parallel.forEach(16, 1L << 30, i -> runs.incrementAndGet(o * 16 + i)));
        for (int k = 0; k < 64 * 16; k++) assertThat(runs.get(k)).isEqualTo(1);
    }

    @Test void aFailingChunkIsRethrownToTheCaller() {
        Parallel.setThreads(2);
        assertThatThrownBy(() -> Parallel.forEach(100, 1L << 30, c -> {
            if (c == 57) throw new IllegalStateException("index 9 out of range [0, 8)");
        })).isInstanceOf(IllegalStateException.class).hasMessageContaining("out of range");
        AtomicIntegerArray runs = new AtomicIntegerArray(10);           // the pool still works afterwards
        Parallel.forEach(10, 1L << 30, runs::incrementAndGet);
        for (int c = 0; c < 10; c++) assertThat(runs.get(c)).isEqualTo(1);
    }

    @Test void callersOnSeveralThreadsAtOnceEachGetEveryChunkOnce() throws Exception {
        Parallel.setThreads(2);
        int callers = 3, calls = 300, chunks = 37;
        AtomicIntegerArray runs = new AtomicIntegerArray(callers * calls * chunks);
        Thread[] ts = new Thread[callers];
        for (int k = 0; k < callers; k++) {
            int caller = k;
            ts[k] = new Thread(() -> {                                 // one holds the pool, the others run inline
                for (int call = 0; call < calls; call++) {
                    int base = (caller * calls + call) * chunks;
                    Parallel.forEach(chunks, 1L << 30, c -> {
                        long until = System.nanoTime() + 2_000;      // a chunk that takes a while: a caller returning early would see it unfinished
                        while (System.nanoTime() < until) Thread.onSpinWait();
                        runs.incrementAndGet(base + c);
                    });
                    for (int c = 0; c < chunks; c++)                  // done when forEach returns, not later
                        if (runs.get(base + c) != 1) throw new AssertionError("caller " + caller + " call " + call + " chunk " + c);
                }
            });
        }
        java.util.List<Throwable> failures = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        for (Thread t : ts) { t.setUncaughtExceptionHandler((th, e) -> failures.add(e)); t.start(); }
        for (Thread t : ts) t.join();
        assertThat(failures).isEmpty();
        for (int k = 0; k < runs.length(); k++) assertThat(runs.get(k)).isEqualTo(1);
    }
}
