package kina.model;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * How text becomes token ids and back: bytes ({@link ByteTokenizer}, 256 ids) or a byte-level BPE
 * ({@link BpeTokenizer}). Both write llama2.c's {@code tokenizer.bin}: a little-endian int32 max
 * token length, then per id a float32 score, an int32 byte length and the piece's bytes.
 */
public sealed interface Tokenizer permits ByteTokenizer, BpeTokenizer {
    /** The number of ids, [0, vocab). */
    int vocab();

    /** The ids of UTF-8 text, as training saw text (no BOS, no dummy prefix); every byte string encodes. */
    int[] encode(byte[] utf8);

    /** The bytes id stands for (empty for a special token); IllegalArgumentException outside [0, vocab). */
    byte[] bytes(int id);

    /** {@code byte} or {@code bpe}: how checkpoints name it. */
    String kind();

    /** The piece of each id as llama2.c's run.c reads it (a raw byte is {@code <0xXX>}), and its score. */
    byte[] piece(int id);

    /** The merge score of id (run.c merges the adjacent pair whose piece scores highest). */
    float score(int id);

    /** The ids of {@code text}'s UTF-8 bytes. */
    default int[] encode(String text) { return encode(text.getBytes(StandardCharsets.UTF_8)); }

    /** The text the ids stand for, invalid or incomplete UTF-8 replaced by U+FFFD. */
    default String decode(int[] ids) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int id : ids) b.writeBytes(bytes(id));
        return b.toString(StandardCharsets.UTF_8);
    }

    /** llama2.c's tokenizer.bin for this vocabulary. */
    default byte[] toLlama2c() {
        int max = 0, size = 4;
        for (int i = 0; i < vocab(); i++) {
            max = Math.max(max, piece(i).length);
            size += 8 + piece(i).length;
        }
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN).putInt(max);
        for (int i = 0; i < vocab(); i++) b.putFloat(score(i)).putInt(piece(i).length).put(piece(i));
        return b.array();
    }
}
