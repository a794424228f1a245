package kina.bench;

import java.util.SplittableRandom;
import kina.kernels.Matmul;
import kina.kernels.Parallel;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;

/**
 * {@link Matmul#sgemm} on one shape per run. {@code shape} is "name:BxMxKxN:TT" (TT: NN, NT or
 * TN, as in bench/shapes.txt; bench/matmul.sh passes the list with -p shape=…); the score is µs per
 * call, and GFLOP/s = 2·B·M·K·N / (1000 · score), computed by bench/matmul.sh.
 */
public class MatmulBench extends KernelBench {
    @Param({"sq256:1x256x256x256:NN"})
    public String shape;

    private float[] a, b, out;
    private int batch, m, k, n;
    private boolean transA, transB;

    @Setup
    public void setup() {
        String[] parts = shape.split(":");
        String[] dims = parts[1].split("x");
        batch = Integer.parseInt(dims[0]);
        m = Integer.parseInt(dims[1]);
        k = Integer.parseInt(dims[2]);
        n = Integer.parseInt(dims[3]);
        transA = parts[2].charAt(0) == 'T';
        transB = parts[2].charAt(1) == 'T';
        SplittableRandom rng = new SplittableRandom(42);
        a = new float[batch * m * k];
        b = new float[batch * k * n];
        out = new float[batch * m * n];
        for (int i = 0; i < a.length; i++) a[i] = (float) (rng.nextDouble() * 2 - 1);
        for (int i = 0; i < b.length; i++) b[i] = (float) (rng.nextDouble() * 2 - 1);
        Parallel.setThreads(threads);
    }

    @Benchmark
    public float[] sgemm() {
        Matmul.sgemm(a, transA, b, transB, out, batch, m, k, n);
        return out;
    }
}
