package kina.eval;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The fixed thread pool kernels split their work over. Work is split by independent outputs only
 * (rows of a matmul), never inside one output's reduction, so results do not depend on the number
 * of threads.
 *
 * <p>With T threads there are T − 1 pool workers and the calling thread is the T-th: it claims
 * chunks like the workers do (one shared counter), so no thread sits waiting while work is left
 * and a worker that starts late (a busy sibling core) simply takes fewer chunks. A call made from
 * a worker runs its chunks itself (no nested fan-out, so no worker ever waits on another).
 */
public final class Parallel {
    private static volatile Pool pool = new Pool(Runtime.getRuntime().availableProcessors());

    private Parallel() {}

    /** T − 1 daemon workers ({@code null} when T = 1). */
    private record Pool(int threads, ExecutorService workers) {
        Pool(int threads) {
            this(threads, threads == 1 ? null : Executors.newFixedThreadPool(threads - 1, r -> {
                Thread t = new Worker(r);
                t.setDaemon(true);
                return t;
            }));
        }

        void shutdown() { if (workers != null) workers.shutdown(); }
    }

    /** A pool thread (so a nested call can tell it runs on one). */
    private static final class Worker extends Thread {
        private static final AtomicInteger COUNT = new AtomicInteger();

        Worker(Runnable r) { super(r, "kina-worker-" + COUNT.incrementAndGet()); }
    }

    /** Sets the number of threads (≥ 1), the caller's included; the default is the number of processors. */
    public static synchronized void setThreads(int n) {
        if (n < 1) throw new IllegalArgumentException("threads must be >= 1, not " + n);
        if (n == pool.threads()) return;
        Pool old = pool;
        pool = new Pool(n);
        old.shutdown();
    }

    public static int threads() { return pool.threads(); }

    /**
     * Runs {@code body(chunk)} for chunk in [0, chunks), on several threads when {@code work} is
     * large enough; returns when every chunk has run. The first exception a chunk throws is
     * rethrown (RuntimeException and Error as themselves); chunks not yet claimed then do not run.
     */
    public static void forEach(int chunks, long work, java.util.function.IntConsumer body) {
        Pool p = pool;
        if (chunks <= 1 || work < 32_768 || p.threads() == 1 || Thread.currentThread() instanceof Worker) {
            for (int c = 0; c < chunks; c++) body.accept(c);
            return;
        }
        AtomicInteger next = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Runnable drain = () -> {
            try {
                for (int c; failure.get() == null && (c = next.getAndIncrement()) < chunks; ) body.accept(c);
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        };
        int helpers = Math.min(p.threads() - 1, chunks - 1);
        Future<?>[] fs = new Future<?>[helpers];
        for (int i = 0; i < helpers; i++) fs[i] = p.workers().submit(drain);
        drain.run();
        boolean interrupted = false;
        for (Future<?> f : fs) {
            while (true) {
                try {
                    f.get();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;                       // the chunks still run: wait for them, then re-flag
                } catch (ExecutionException e) {
                    failure.compareAndSet(null, e.getCause());   // drain catches everything; kept for safety
                    break;
                }
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
        Throwable t = failure.get();
        if (t == null) return;
        if (t instanceof RuntimeException r) throw r;
        if (t instanceof Error er) throw er;
        throw new IllegalStateException(t);
    }
}
