package kina.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

class ByteTokenizerTest {
    private final ByteTokenizer tok = new ByteTokenizer();

    @Test void encodesUtf8Bytes() {
        assertThat(tok.vocab()).isEqualTo(256);
        assertThat(tok.encode("Hi")).containsExactly(72, 105);
        assertThat(tok.encode("é€")).containsExactly(0xc3, 0xa9, 0xe2, 0x82, 0xac);
    }

    @Property void decodeInvertsEncode(@ForAll String s) {
        // lone surrogates are not encodable: the encoder writes '?' for them, so compare with that
        String expected = new String(s.getBytes(java.nio.charset.StandardCharsets.UTF_8), java.nio.charset.StandardCharsets.UTF_8);
        assertThat(tok.decode(tok.encode(s))).isEqualTo(expected);
    }

    @Test void decodeReplacesInvalidSequences() {
        assertThat(tok.decode(new int[] {0x61, 0xff, 0x62})).isEqualTo("a\uFFFDb");
        assertThat(tok.decode(new int[] {0x61, 0xe2, 0x82})).isEqualTo("a\uFFFD");
    }

    @Test void decodeRefusesIdsOutsideTheVocabulary() {
        assertThatThrownBy(() -> tok.decode(new int[] {256})).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("token id 256");
    }
}
