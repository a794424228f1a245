package kina.model;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import kina.io.ModelFileError;
import kina.io.Vocabulary;

/**
 * kina's tokenizers as SentencePiece-style vocabularies ({@link Vocabulary}: GGUF's and
 * tokenizer.json's form) and back.
 *
 * <p>Bytes: id b is the byte token {@code <0xXX>} (type BYTE), except the space, id 0x20, which is
 * {@code ▁} (NORMAL): llama.cpp's SentencePiece tokenizer writes a space as ▁ and looks that up
 * first, so without it each space would become the three byte tokens of ▁'s UTF-8. A BPE: ids 0–2
 * {@code <unk>} (UNKNOWN), {@code <s>}, {@code </s>} (CONTROL), ids 3–258 the byte tokens, then its
 * pieces as text with each space written ▁, scores as kina's. Reading back, a vocabulary of exactly
 * the byte layout is bytes; any other must be a BPE in kina's layout.
 */
public final class TokenizerVocabulary {
    private TokenizerVocabulary() {}

    private static final String[] SPECIAL_TOKENS = {"<unk>", "<s>", "</s>"};

    /**
     * The vocabulary of {@code t}.
     *
     * @throws ConfigError for a piece that is not UTF-8, holds ▁ itself, or repeats another's text
     */
    public static Vocabulary of(Tokenizer t) {
        List<String> tokens = new ArrayList<>();
        List<Vocabulary.Type> types = new ArrayList<>();
        float[] scores = new float[t.vocab()];
        switch (t) {
            case ByteTokenizer b -> {
                for (int i = 0; i < b.vocab(); i++) {
                    tokens.add(i == ' ' ? Vocabulary.SPACE : Vocabulary.byteToken(i));
                    types.add(i == ' ' ? Vocabulary.Type.NORMAL : Vocabulary.Type.BYTE);
                }
            }
            case BpeTokenizer b -> {
                Map<String, Integer> seen = new HashMap<>();
                for (int i = 0; i < b.vocab(); i++) {
                    scores[i] = b.score(i);
                    if (i < BpeTokenizer.BYTE0) {
                        tokens.add(SPECIAL_TOKENS[i]);
                        types.add(i == BpeTokenizer.UNK ? Vocabulary.Type.UNKNOWN : Vocabulary.Type.CONTROL);
                    } else if (i < BpeTokenizer.FIRST_PIECE) {
                        tokens.add(Vocabulary.byteToken(i - BpeTokenizer.BYTE0));
                        types.add(Vocabulary.Type.BYTE);
                    } else {
                        String s = utf8(b.piece(i));
                        if (s == null) throw new ConfigError("tokenizer", "piece " + i + " is not UTF-8 text; a SentencePiece vocabulary holds text");
                        if (s.contains(Vocabulary.SPACE))
                            throw new ConfigError("tokenizer", "piece " + i + " '" + s + "' holds ▁ (U+2581), which SentencePiece vocabularies use for the space");
                        s = s.replace(" ", Vocabulary.SPACE);
                        tokens.add(s);
                        types.add(Vocabulary.Type.NORMAL);
                    }
                    Integer before = seen.putIfAbsent(tokens.getLast(), i);
                    if (before != null) throw new ConfigError("tokenizer", "pieces " + before + " and " + i + " are both '" + tokens.getLast() + "'");
                }
            }
        }
        return new Vocabulary(tokens, scores, types, false);
    }

    /**
     * The kina tokenizer of {@code v}; {@code where} names the file in errors.
     *
     * @throws ModelFileError for a vocabulary kina cannot represent (not bytes, not a BPE in kina's layout)
     */
    public static Tokenizer tokenizer(String where, Vocabulary v) {
        if (v.size() == ByteTokenizer.VOCAB && of(new ByteTokenizer()).tokens().equals(v.tokens())) return new ByteTokenizer();
        byte[][] pieces = new byte[v.size()][];
        for (int i = 0; i < v.size(); i++) {
            Vocabulary.Type t = v.types().get(i);
            if (t == Vocabulary.Type.USER_DEFINED || t == Vocabulary.Type.UNUSED)
                throw new ModelFileError(where, "token " + i + " '" + v.tokens().get(i) + "' is " + t + "; kina's BPE has only normal tokens, bytes and <unk>, <s>, </s>");
            if (i >= BpeTokenizer.FIRST_PIECE && t != Vocabulary.Type.NORMAL)
                throw new ModelFileError(where, "token " + i + " '" + v.tokens().get(i) + "' is " + t + "; kina's BPE has its special and byte tokens at ids 0–258 only");
            pieces[i] = v.tokens().get(i).replace(Vocabulary.SPACE, " ").getBytes(StandardCharsets.UTF_8);
        }
        try {
            return BpeTokenizer.of(where, pieces, v.scores());
        } catch (DataError e) {
            throw new ModelFileError(where, "a vocabulary of " + v.size() + " tokens that is neither bytes (256) nor a BPE in kina's layout (<unk>, <s>, </s>, "
                    + "then <0x00>…<0xFF>): " + e.getMessage().substring(where.length() + 2));
        }
    }

    /** The text of UTF-8 bytes; null when they are not valid UTF-8. */
    private static String utf8(byte[] b) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }
}
