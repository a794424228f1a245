package kina.model;

import java.nio.charset.StandardCharsets;

/**
 * Bytes as tokens: a text's UTF-8 bytes, each an id in [0, 256). Decoding replaces invalid or
 * incomplete UTF-8 sequences (a model can sample any byte) with U+FFFD.
 */
public final class ByteTokenizer {
    public static final int VOCAB = 256;

    /** The vocabulary size, 256. */
    public int vocab() { return VOCAB; }

    /** The UTF-8 bytes of {@code text}, as ids in [0, 256). */
    public int[] encode(String text) {
        return ids(text.getBytes(StandardCharsets.UTF_8));
    }

    /** Bytes as ids in [0, 256). */
    public static int[] ids(byte[] bytes) {
        int[] ids = new int[bytes.length];
        for (int i = 0; i < bytes.length; i++) ids[i] = bytes[i] & 0xff;
        return ids;
    }

    /**
     * The text whose UTF-8 bytes are {@code ids}, invalid sequences replaced by U+FFFD. Throws
     * IllegalArgumentException for an id outside [0, 256).
     */
    public String decode(int[] ids) {
        byte[] b = new byte[ids.length];
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] < 0 || ids[i] >= VOCAB) throw new IllegalArgumentException("token id " + ids[i] + " outside the byte vocabulary [0, 256)");
            b[i] = (byte) ids[i];
        }
        return new String(b, StandardCharsets.UTF_8);
    }
}
