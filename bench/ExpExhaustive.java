/*
 * KinaMath's array exp against its scalar exp on all 2³² float bit patterns, for exp(x) and
 * exp(−x), bit for bit (the array form runs the lanewise loop on whole vectors). Chunks of 2²⁰
 * inputs, split over the available processors; prints the number of mismatches (0 expected).
 *
 *   java --add-modules jdk.incubator.vector -cp target/kina.jar bench/ExpExhaustive.java
 *
 * About 48 s on the 2-vCPU benchmark machine.
 */
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import kina.kernels.KinaMath;

/** Exhaustive check that the lanewise exp equals the scalar one (KinaMath's class comment quotes it). */
public class ExpExhaustive {
    public static void main(String[] args) throws InterruptedException {
        final int chunk = 1 << 20, chunks = 1 << 12;
        AtomicLong bad = new AtomicLong();
        AtomicInteger next = new AtomicInteger();
        Thread[] workers = new Thread[Runtime.getRuntime().availableProcessors()];
        for (int t = 0; t < workers.length; t++) {
            workers[t] = new Thread(() -> {
                float[] x = new float[chunk], y = new float[chunk], yn = new float[chunk];
                for (int c; (c = next.getAndIncrement()) < chunks; ) {
                    int base = c << 20;
                    for (int i = 0; i < chunk; i++) x[i] = Float.intBitsToFloat(base + i);
                    KinaMath.exp(x, 0, y, 0, chunk);
                    KinaMath.expNeg(x, 0, yn, 0, chunk);
                    for (int i = 0; i < chunk; i++) {
                        if (Float.floatToRawIntBits(y[i]) != Float.floatToRawIntBits(KinaMath.exp(x[i]))) bad.incrementAndGet();
                        if (Float.floatToRawIntBits(yn[i]) != Float.floatToRawIntBits(KinaMath.exp(-x[i]))) bad.incrementAndGet();
                    }
                }
            });
            workers[t].start();
        }
        for (Thread w : workers) w.join();
        System.out.println("ExpExhaustive: " + bad.get() + " mismatches over 2^32 inputs, exp(x) and exp(-x)");
        if (bad.get() != 0) System.exit(1);
    }
}
