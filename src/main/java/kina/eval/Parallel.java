package kina.eval;

import java.util.concurrent.ForkJoinPool;
import java.util.stream.IntStream;

/**
 * The fixed thread pool kernels split their work over. Work is split by independent outputs only
 * (rows of a matmul), never inside one output's reduction, so results do not depend on the number
 * of threads.
 */
public final class Parallel {
    private static volatile ForkJoinPool pool = new ForkJoinPool(Runtime.getRuntime().availableProcessors());

    private Parallel() {}

    /** Sets the number of worker threads (≥ 1); the default is the number of processors. */
    public static synchronized void setThreads(int n) {
        if (n < 1) throw new IllegalArgumentException("threads must be >= 1, not " + n);
        if (n == pool.getParallelism()) return;
        ForkJoinPool old = pool;
        pool = new ForkJoinPool(n);
        old.shutdown();
    }

    public static int threads() { return pool.getParallelism(); }

    /** Runs {@code body(chunk)} for chunk in [0, chunks), in parallel when {@code work} is large enough. */
    public static void forEach(int chunks, long work, java.util.function.IntConsumer body) {
        if (chunks <= 1 || work < 32_768 || pool.getParallelism() == 1) {
            for (int c = 0; c < chunks; c++) body.accept(c);
            return;
        }
        try {
            pool.submit(() -> IntStream.range(0, chunks).parallel().forEach(body)).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            if (e.getCause() instanceof Error er) throw er;
            throw new IllegalStateException(e.getCause());
        }
    }
}
