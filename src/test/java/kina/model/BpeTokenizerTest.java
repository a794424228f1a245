package kina.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

/** kina's BPE against scripts/reference_bpe.py: the trained vocabulary, run.c's encode, and sentencepiece's. */
class BpeTokenizerTest {
    static final Path DIR = Path.of("src/test/resources/fixtures/bpe");
    static final BpeTokenizer TRAINED = BpeTokenizer.train(read("bpe_train.txt"), 400);

    static byte[] read(String name) {
        try {
            return Files.readAllBytes(DIR.resolve(name));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static JsonNode cases() throws IOException { return new ObjectMapper().readTree(DIR.resolve("bpe_encodings.json").toFile()).get("cases"); }

    static int[] ints(JsonNode a) {
        int[] out = new int[a.size()];
        for (int i = 0; i < out.length; i++) out[i] = a.get(i).intValue();
        return out;
    }

    @Test void trainingLearnsTheReferenceVocabulary() {
        assertThat(TRAINED.vocab()).isEqualTo(400);
        assertThat(TRAINED.toLlama2c()).isEqualTo(read("bpe_kina_v400.bin"));
    }

    @Test void encodingIsRunCsEncode() throws IOException {
        for (JsonNode c : cases()) {
            byte[] text = c.get("text").asText().getBytes(StandardCharsets.UTF_8);
            assertThat(TRAINED.encode(text)).as(c.get("text").asText()).containsExactly(ints(c.get("kina")));
            assertThat(TRAINED.encode(text, true, true)).as(c.get("text").asText()).containsExactly(ints(c.get("kina_bos_dummy")));
        }
    }

    /** run.c's algorithm on a sentencepiece vocabulary gives sentencepiece's own ids (llama2.c's premise), here without chunks. */
    @Test void encodingASentencepieceVocabularyGivesSentencepiecesIds() throws IOException {
        BpeTokenizer sp = BpeTokenizer.fromLlama2c("sp.bin", read("bpe_sentencepiece_v400.bin"), 400);
        for (JsonNode c : cases()) {
            byte[] text = c.get("text").asText().getBytes(StandardCharsets.UTF_8);
            assertThat(sp.encode(text, false, true)).as(c.get("text").asText()).containsExactly(ints(c.get("sentencepiece")));
        }
        assertThat(sp.toLlama2c()).isEqualTo(read("bpe_sentencepiece_v400.bin"));
    }

    @Test void chunkByChunkEqualsTheWholeText() {
        byte[] text = Arrays.copyOf(Corpus.embedded().bytes(), 60_000);
        assertThat(TRAINED.encode(text)).containsExactly(TRAINED.whole(text, false, false));
        assertThat(TRAINED.encode(text, true, true)).containsExactly(TRAINED.whole(text, true, true));
    }

    @Property(tries = 200) void everyStringEncodesAndDecodesBack(@ForAll String s) {
        String expected = new String(s.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8);
        int[] ids = TRAINED.encode(s);
        assertThat(TRAINED.decode(ids)).isEqualTo(expected);
        for (int id : ids) assertThat(id).isBetween(BpeTokenizer.BYTE0, 399);
    }

    @Test void rawBytesFallBackToByteTokens() {
        byte[] junk = {(byte) 0xff, 0x41, (byte) 0x80, 0, (byte) 0xf0, (byte) 0x9f};
        int[] ids = TRAINED.encode(junk);
        assertThat(TRAINED.decode(ids).getBytes(StandardCharsets.ISO_8859_1)).hasSize(TRAINED.decode(ids).length());
        java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
        for (int id : ids) b.writeBytes(TRAINED.bytes(id));
        assertThat(b.toByteArray()).isEqualTo(junk);
    }

    @Test void aBadTokenizerFileIsOneLine() {
        byte[] ok = read("bpe_kina_v400.bin");
        assertThatThrownBy(() -> BpeTokenizer.fromLlama2c("t.bin", Arrays.copyOf(ok, 1000), 400)).isInstanceOf(DataError.class)
                .hasMessageStartingWith("t.bin: ends early");
        assertThatThrownBy(() -> BpeTokenizer.fromLlama2c("t.bin", ok, 300)).isInstanceOf(DataError.class)
                .hasMessageContaining("bytes after the model's 300 pieces");
        byte[] bytes = new ByteTokenizer().toLlama2c();
        assertThatThrownBy(() -> BpeTokenizer.fromLlama2c("b.bin", bytes, 256)).isInstanceOf(DataError.class)
                .hasMessageContaining("at least 259");
        assertThatThrownBy(() -> BpeTokenizer.train("abc abc".getBytes(StandardCharsets.UTF_8), 259)).isInstanceOf(DataError.class)
                .hasMessageContaining("--vocab 259");
    }
}
