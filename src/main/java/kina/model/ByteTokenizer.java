package kina.model;

import java.nio.charset.StandardCharsets;

/**
 * Bytes as tokens: a text's UTF-8 bytes, each an id in [0, 256). Decoding replaces invalid or
 * incomplete UTF-8 sequences (a model can sample any byte) with U+FFFD. In llama2.c's
 * tokenizer.bin a printable ASCII byte (and tab, newline, carriage return) is its own piece, any
 * other byte {@code <0xXX>}, which run.c decodes back to the byte.
 */
public final class ByteTokenizer implements Tokenizer {
    public static final int VOCAB = 256;

    /** The vocabulary size, 256. */
    @Override public int vocab() { return VOCAB; }

    @Override public String kind() { return "byte"; }

    /** The UTF-8 bytes of {@code text}, as ids in [0, 256). */
    @Override public int[] encode(String text) {
        return ids(text.getBytes(StandardCharsets.UTF_8));
    }

    @Override public int[] encode(byte[] utf8) { return ids(utf8); }

    /** Bytes as ids in [0, 256). */
    public static int[] ids(byte[] bytes) {
        int[] ids = new int[bytes.length];
        for (int i = 0; i < bytes.length; i++) ids[i] = bytes[i] & 0xff;
        return ids;
    }

    @Override public byte[] bytes(int id) {
        if (id < 0 || id >= VOCAB) throw new IllegalArgumentException("token id " + id + " outside the byte vocabulary [0, 256)");
        return new byte[] {(byte) id};
    }

    @Override public byte[] piece(int id) {
        bytes(id);
        boolean plain = id >= 0x20 && id < 0x7f || id == '\t' || id == '\n' || id == '\r';
        return plain ? new byte[] {(byte) id} : String.format("<0x%02X>", id).getBytes(StandardCharsets.US_ASCII);
    }

    @Override public float score(int id) { return 0f; }

    /**
     * The text whose UTF-8 bytes are {@code ids}, invalid sequences replaced by U+FFFD. Throws
     * IllegalArgumentException for an id outside [0, 256).
     */
    @Override public String decode(int[] ids) {
        byte[] b = new byte[ids.length];
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] < 0 || ids[i] >= VOCAB) throw new IllegalArgumentException("token id " + ids[i] + " outside the byte vocabulary [0, 256)");
            b[i] = (byte) ids[i];
        }
        return new String(b, StandardCharsets.UTF_8);
    }
}
