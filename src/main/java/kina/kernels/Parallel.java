package kina.kernels;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntConsumer;

/**
 * The fixed thread pool kernels split their work over. Work is split by independent outputs only
 * (rows of a matmul), never inside one output's reduction, so results do not depend on the number
 * of threads.
 */
public final class Parallel {
    private static volatile Pool pool = new Pool(Runtime.getRuntime().availableProcessors());

    private Parallel() {}

    /** One call's chunks: a shared claim counter, the workers inside it, the first failure. */
    private static final class Job {
        final int chunks;
        final IntConsumer body;
        final AtomicInteger next = new AtomicInteger(), busy = new AtomicInteger();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        /** The caller, once it waits parked for the workers' last chunks. */
        volatile Thread waiter;

        Job(int chunks, IntConsumer body) { this.chunks = chunks; this.body = body; }

        /** Claims and runs chunks until none is left or one has failed. */
        void drain() {
            try {
                for (int c; failure.get() == null && (c = next.getAndIncrement()) < chunks; ) body.accept(c);
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        }
    }

    /** T − 1 daemon workers and the job they serve; one caller at a time ({@link #busy}). */
    private static final class Pool {
        final int threads;
        final Worker[] workers;
        final AtomicBoolean busy = new AtomicBoolean();
        volatile Job job;
        volatile boolean closed;

        Pool(int threads) {
            this.threads = threads;
            workers = new Worker[threads - 1];
            for (int i = 0; i < workers.length; i++) {
                workers[i] = new Worker(this);
                workers[i].start();
            }
        }

        void shutdown() {
            closed = true;
            for (Worker w : workers) LockSupport.unpark(w);
        }
    }

    /** A pool thread (so a nested call can tell it runs on one). */
    private static final class Worker extends Thread {
        private static final AtomicInteger COUNT = new AtomicInteger();
        private final Pool pool;
        volatile boolean parked;

        Worker(Pool pool) {
            super("kina-worker-" + COUNT.incrementAndGet());
            this.pool = pool;
            setDaemon(true);
        }

        @Override public void run() {
            Job last = null;
            while (true) {
                Job j = awaitJob(last);
                if (j == null) return;                      // the pool was shut down
                last = j;
                j.busy.incrementAndGet();                   // before claiming: the caller waits for busy = 0
                j.drain();
                if (j.busy.decrementAndGet() == 0 && j.waiter != null) LockSupport.unpark(j.waiter);
            }
        }

        /** The next job other than {@code last}, parking until a caller unparks; null once the pool is closed. */
        private Job awaitJob(Job last) {
            while (true) {
                if (pool.closed) return null;
                Job j = pool.job;
                if (j != null && j != last) return j;
                parked = true;                              // then look again: a job published meanwhile is not missed
                j = pool.job;
                if ((j == null || j == last) && !pool.closed) LockSupport.park(this);
                parked = false;
            }
        }
    }

    /** Sets the number of threads (≥ 1), the caller's included; the default is the number of processors. */
    public static synchronized void setThreads(int n) {
        if (n < 1) throw new IllegalArgumentException("threads must be >= 1, not " + n);
        if (n == pool.threads) return;
        Pool old = pool;
        pool = new Pool(n);
        old.shutdown();
    }

    public static int threads() { return pool.threads; }

    private static final java.util.concurrent.atomic.LongAdder FAN_OUTS = new java.util.concurrent.atomic.LongAdder();

    /** How many calls so far ran their chunks on more than one thread (tests: a kernel's parallel path ran). */
    static long fanOuts() { return FAN_OUTS.sum(); }

    /**
     * Runs {@code body(chunk)} for chunk in [0, chunks), on several threads when {@code work} is
     * large enough; returns when every chunk has run. The first exception a chunk throws is
     * rethrown (RuntimeException and Error as themselves); chunks not yet claimed then do not run.
     *
     * <p>With T threads there are T − 1 pool workers and the calling thread is the T-th: it claims
     * chunks like the workers do (one shared counter), so no thread sits waiting while work is left
     * and a worker that starts late (a busy sibling core) simply takes fewer chunks. A call made from
     * a worker runs its chunks itself (no nested fan-out, so no worker ever waits on another); so does
     * a call made while another thread's call holds the pool.
     *
     * <p>An idle worker parks at once, and a call unparks only the workers that are parked: no
     * executor queue and no futures (a call cost 7–11 µs through a fixed thread pool's futures on the
     * 2-vCPU benchmark machine, 80–100 µs while the host was busy). Nobody spins: on that machine a
     * spinning worker (200 µs before parking) or a spinning caller made 2-thread train steps slower
     * and their times wider when the host was busy, as a spinning thread can hold the very vCPU the
     * thread it waits for needs. Why not an executor with the unstarted helpers cancelled: a
     * FutureTask's cancel(false) also succeeds while it runs, so the caller could return before a
     * helper's chunk is done (tried; PlanTest caught it at 2 threads). The {@code busy} count below is
     * that missing "started" bit.
     */
    public static void forEach(int chunks, long work, IntConsumer body) {
        Pool p = pool;
        boolean fanOut = chunks > 1 && work >= 32_768 && p.threads > 1 && !(Thread.currentThread() instanceof Worker);
        if (!fanOut || !p.busy.compareAndSet(false, true)) {
            for (int c = 0; c < chunks; c++) body.accept(c);
            return;
        }
        FAN_OUTS.increment();
        Job j = new Job(chunks, body);
        try {
            p.job = j;
            for (Worker w : p.workers) if (w.parked) LockSupport.unpark(w);
            j.drain();
            if (j.busy.get() != 0) {                        // workers finishing the chunks they claimed: park, not spin
                j.waiter = Thread.currentThread();          // (a spinning caller can hold the very vCPU a worker needs)
                while (j.busy.get() != 0) LockSupport.park(j);
            }
        } finally {
            p.job = null;
            p.busy.set(false);
        }
        Throwable t = j.failure.get();
        if (t == null) return;
        if (t instanceof RuntimeException r) throw r;
        if (t instanceof Error er) throw er;
        throw new IllegalStateException(t);
    }
}
