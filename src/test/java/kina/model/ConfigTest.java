package kina.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigTest {
    @TempDir Path tmp;

    private Config load(String json) throws IOException {
        Path f = tmp.resolve("custom.json");
        Files.writeString(f, json);
        return Config.load(f);
    }

    private String error(String json) {
        return assertThatThrownBy(() -> load(json)).isInstanceOf(ConfigError.class).actual().getMessage();
    }

    @Test void namedConfigsHaveTheIssueSizes() {
        assertThat(Config.NAMED.keySet()).containsExactly("storylm0", "tiny", "small", "medium", "long", "stories15m");
        Config s0 = Config.byName("storylm0");
        assertThat(s0.toy()).isTrue();
        assertThat(s0.mlpHidden()).isZero();
        assertThat(s0.headDim()).isEqualTo(2);
        assertThat(Config.byName("tiny")).isEqualTo(new Config("tiny", 256, 64, 2, 2, 64, 2, 172, 10000, 1e-5, false));
        assertThat(Config.byName("small")).isEqualTo(new Config("small", 256, 128, 4, 4, 128, 2, 344, 10000, 1e-5, false));
        assertThat(Config.byName("medium")).isEqualTo(new Config("medium", 256, 256, 8, 8, 256, 4, 688, 10000, 1e-5, false));
        assertThat(Config.byName("medium").headDim()).isEqualTo(32);
        assertThat(Config.byName("long")).isEqualTo(new Config("long", 256, 256, 8, 8, 1024, 4, 688, 10000, 1e-5, false));
        assertThat(Config.byName("stories15m")).isEqualTo(new Config("stories15m", 256, 288, 6, 6, 256, 6, 768, 10000, 1e-5, false));
        assertThat(Config.byName("long").withSeq(4096)).isEqualTo(new Config("long", 256, 256, 8, 8, 4096, 4, 688, 10000, 1e-5, false));
    }

    /** A resume names every field that differs, as the record calls it; a new field fails here until differences compares it. */
    @Test void differencesNameEveryFieldThatDiffers() {
        Config a = new Config("a", 256, 64, 2, 2, 64, 2, 172, 10000, 1e-5, false);
        Config b = new Config("b", 512, 128, 4, 2, 32, 3, 100, 500000, 1e-6, true);
        assertThat(a.differences(a)).isEmpty();
        assertThat(a.differences(a.withSeq(32))).isEqualTo("seq 64 there, 32 asked");
        String all = a.differences(b);
        for (var rc : Config.class.getRecordComponents())
            if (!rc.getName().equals("kvHeads")) assertThat(all).as(rc.getName()).contains(rc.getName() + " ");
        assertThat(all).doesNotContain("kvHeads").contains("ropeBase 10000.0 there, 500000.0 asked").endsWith("toy false there, true asked");
        assertThat(a.differences(new Config("a", 256, 64, 2, 1, 64, 2, 172, 10000, 1e-5, false))).isEqualTo("kvHeads 2 there, 1 asked");
    }

    @Test void seqOverrideIsBounded() {
        assertThatThrownBy(() -> Config.byName("long").withSeq(4097)).isInstanceOf(ConfigError.class)
                .hasMessage("config long: --seq 4097: must be in [1, 4096]");
        assertThatThrownBy(() -> Config.byName("long").withSeq(0)).isInstanceOf(ConfigError.class);
    }

    @Test void unknownNameListsTheNames() {
        assertThatThrownBy(() -> Config.byName("huge")).isInstanceOf(ConfigError.class)
                .hasMessage("config 'huge': unknown config (known: storylm0, tiny, small, medium, long, stories15m; or a config file ending in .json)");
    }

    @Test void loadsAJsonFileWithDefaults() throws IOException {
        Config c = load("{\"vocab\": 256, \"d_model\": 48, \"heads\": 4, \"kv_heads\": 2, \"seq\": 32, \"layers\": 3, \"mlp_hidden\": 128}");
        assertThat(c).isEqualTo(new Config("custom", 256, 48, 4, 2, 32, 3, 128, 10000, 1e-5, false));
        assertThat(c.groups()).isEqualTo(2);
        Config d = load("{\"name\": \"x\", \"vocab\": 256, \"d_model\": 16, \"heads\": 2, \"seq\": 8, \"layers\": 1, \"mlp_hidden\": 0, \"rope_base\": 500000, \"eps\": 1e-6}");
        assertThat(d.kvHeads()).isEqualTo(2);
        assertThat(d.ropeBase()).isEqualTo(500000);
        assertThat(d.eps()).isEqualTo(1e-6);
        assertThat(d.name()).isEqualTo("x");
    }

    @Test void toJsonRoundTrips() {
        for (Config c : Config.NAMED.values())
            assertThat(Config.fromJson("t", c.toJson(), "?")).isEqualTo(c);
    }

    @Test void refusesBadValuesInOneLine() throws IOException {
        String base = "\"vocab\": 256, \"seq\": 8, \"layers\": 1, \"mlp_hidden\": 0";
        String f = tmp.resolve("custom.json").toString();
        assertThat(error("{" + base + ", \"d_model\": 64, \"heads\": 3}")).isEqualTo("config " + f + ": heads 3 does not divide d_model 64");
        assertThat(error("{" + base + ", \"d_model\": 64, \"heads\": 4, \"kv_heads\": 3}")).isEqualTo("config " + f + ": kv_heads 3 does not divide heads 4");
        assertThat(error("{" + base + ", \"d_model\": 12, \"heads\": 4}")).isEqualTo("config " + f + ": head dim 3 (d_model 12 / heads 4) is odd; RoPE rotates pairs");
        assertThat(error("{" + base + ", \"d_model\": 0, \"heads\": 4}")).isEqualTo("config " + f + ": d_model must be positive, got 0");
        assertThat(error("{" + base + ", \"d_model\": 64, \"heads\": -2}")).isEqualTo("config " + f + ": heads must be positive, got -2");
        assertThat(error("{" + base + ", \"d_model\": 64, \"heads\": 4, \"dropout\": 0.1}")).startsWith("config " + f + ": unknown key 'dropout' (known: name, vocab");
        assertThat(error("{" + base + ", \"heads\": 4}")).isEqualTo("config " + f + ": missing key 'd_model'");
        assertThat(error("{" + base + ", \"d_model\": 6.5, \"heads\": 4}")).isEqualTo("config " + f + ": d_model must be an integer, got 6.5");
        assertThat(error("{" + base + ", \"d_model\": 64, \"heads\": 4, \"eps\": 0}")).isEqualTo("config " + f + ": eps must be positive, got 0.0");
        assertThat(error("[1, 2]")).isEqualTo("config " + f + ": expected a JSON object");
        assertThat(error("{\"vocab\": ")).startsWith("config " + f + ": not valid JSON: ").doesNotContain("\n");
        assertThat(error("{\"vocab\": [1")).isEqualTo("config " + f + ": not valid JSON: unexpected end of input (the array opened at line 1, column 11 is not closed)");
        assertThatThrownBy(() -> Config.load(tmp.resolve("nope.json"))).isInstanceOf(ConfigError.class)
                .hasMessage("config " + tmp.resolve("nope.json") + ": file not found");
    }
}
