package kina.io;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Whole-file writes that a crash cannot leave half done: the bytes go to a temp file in the target's
 * directory, are forced to disk, and the temp file is renamed over the target (an atomic move where
 * the file system offers one). Readers see the old file or the new one, never a mix.
 */
public final class AtomicFiles {
    private static final java.security.SecureRandom RANDOM = new java.security.SecureRandom();

    private AtomicFiles() {}

    /**
     * Writes one buffer to a temp file's channel. The default writes it all; tests put in one that
     * fails part way (an I/O error at a chosen byte offset, as a full disk would give).
     */
    public interface Sink {
        void write(FileChannel ch, java.nio.ByteBuffer buf) throws IOException;

        /** Forces the written bytes to disk. */
        default void force(FileChannel ch) throws IOException { ch.force(true); }
    }

    static final Sink WHOLE = (ch, buf) -> { while (buf.hasRemaining()) ch.write(buf); };

    /** The sink every write goes through: {@link #WHOLE} but in tests. */
    static volatile Sink sink = WHOLE;

    /** Writes {@code bytes} to {@code target} atomically; FileFormatError (one line) when the file system refuses. */
    public static void write(Path target, byte[] bytes) {
        Path abs = target.toAbsolutePath();
        Path dir = abs.getParent();
        Path tmp = null;
        try {
            Files.createDirectories(dir);
            // CREATE_NEW with the default permissions (0666 less the umask), unlike createTempFile's 0600
            tmp = dir.resolve("." + abs.getFileName() + "." + Long.toHexString(RANDOM.nextLong()) + ".tmp");
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.CREATE_NEW)) {
                Sink out = sink;
                out.write(ch, java.nio.ByteBuffer.wrap(bytes));
                out.force(ch);
            }
            try {
                Files.move(tmp, abs, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, abs, StandardCopyOption.REPLACE_EXISTING);
            }
            tmp = null;
        } catch (IOException e) {
            throw new FileFormatError(target, "cannot write: " + e.getMessage(), e);
        } finally {
            if (tmp != null) try { Files.deleteIfExists(tmp); } catch (IOException ignored) { /* best effort */ }
        }
    }
}
