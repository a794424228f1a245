package kina.model;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import kina.io.AtomicFiles;

/**
 * The training batches of a run as a file a host without the JVM can read (docs/native.md): the
 * 8 bytes {@code KINABAT1}, then steps, batch and seq as little-endian int64, then for each step
 * s = 0, 1, … in order the train step's {@code ids} [batch, seq] and {@code targets} [batch·seq],
 * little-endian int64, row-major: exactly the two inputs' buffers. Step s is
 * {@link Batches#at}(s), the batch {@code kina train} with the same seed and data trains on at step s + 1.
 */
public final class BatchFile {
    private BatchFile() {}

    /** The file's first 8 bytes. */
    public static final String MAGIC = "KINABAT1";

    /** The header's bytes: the magic and three int64. */
    public static final int HEADER_BYTES = 32;

    /**
     * Writes steps [0, steps) of {@code batches} to {@code file} (atomically).
     *
     * @throws kina.ir.KinaException when the file would be larger than 2 GiB
     */
    public static void write(Path file, Batches batches, long steps) {
        int b = batches.batch(), t = batches.seq();
        long bytes = HEADER_BYTES + steps * 2L * b * t * Long.BYTES;
        if (steps < 1 || bytes > Integer.MAX_VALUE - 8)
            throw new kina.ir.KinaException(null, file + ": " + steps + " steps of " + b + "×" + t + " tokens do not fit in one file of 2 GiB; write fewer steps");
        ByteBuffer out = ByteBuffer.allocate((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
        out.put(MAGIC.getBytes(StandardCharsets.US_ASCII)).putLong(steps).putLong(b).putLong(t);
        for (long s = 0; s < steps; s++) {
            Batches.Batch batch = batches.at(s);
            for (int[] row : batch.inputs()) for (int id : row) out.putLong(id);
            for (int[] row : batch.targets()) for (int id : row) out.putLong(id);
        }
        AtomicFiles.write(file, out.array());
    }
}
