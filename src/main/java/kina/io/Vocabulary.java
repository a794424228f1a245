package kina.io;

import java.util.List;

/**
 * A SentencePiece-style vocabulary, as GGUF's {@code tokenizer.ggml.*} keys and a Hugging Face
 * {@code tokenizer.json} (a BPE with byte fallback) hold it: per id its token (a space written
 * {@link #SPACE}, a raw byte {@code <0xXX>}), its score (a merged token's priority: the pair whose
 * token scores highest merges first) and its type. {@code dummyPrefix}: the file's tokenizer puts
 * {@link #SPACE} before a text (SentencePiece's {@code add_dummy_prefix}).
 */
public record Vocabulary(List<String> tokens, float[] scores, List<Type> types, boolean dummyPrefix) {
    /** U+2581, SentencePiece's stand-in for a space. */
    public static final String SPACE = "\u2581";

    /** Token types, numbered as sentencepiece and GGUF's {@code tokenizer.ggml.token_type} number them. */
    public enum Type {
        NORMAL(1), UNKNOWN(2), CONTROL(3), USER_DEFINED(4), UNUSED(5), BYTE(6);

        public final int id;

        Type(int id) { this.id = id; }

        /** The type numbered {@code id}; null when there is none. */
        public static Type of(long id) {
            for (Type t : values()) if (t.id == id) return t;
            return null;
        }
    }

    public Vocabulary {
        tokens = List.copyOf(tokens);
        types = List.copyOf(types);
        scores = scores.clone();
        if (scores.length != tokens.size() || types.size() != tokens.size())
            throw new IllegalArgumentException(tokens.size() + " tokens, " + scores.length + " scores, " + types.size() + " types");
    }

    /** The number of ids. */
    public int size() { return tokens.size(); }

    /** The token {@code <0xXX>} of byte b, upper-case hex as sentencepiece writes it. */
    public static String byteToken(int b) { return String.format("<0x%02X>", b); }
}
