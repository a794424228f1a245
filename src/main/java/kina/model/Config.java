package kina.model;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import kina.io.FileCap;
import kina.io.TensorJson;

/**
 * The sizes of a StoryLM decoder. {@code kvHeads} key/value heads are shared by groups of
 * {@code heads / kvHeads} query heads (GQA); each head has {@code dModel / heads} features, an even
 * number so that RoPE rotates pairs. {@code mlpHidden} is the SwiGLU hidden width, 0 for no MLP.
 * {@code toy} marks StoryLM-0 (the toy decoder of examples/storylm0_forward.kina: no MLP, no norm).
 *
 * <p>JSON keys (for {@link #load} and {@link #toJson}): name, vocab, d_model, heads, kv_heads
 * (default heads), seq, layers, mlp_hidden, rope_base (default 10000), eps (default 1e-5),
 * toy (default false).
 */
public record Config(String name, int vocab, int dModel, int heads, int kvHeads, int seq, int layers,
                     int mlpHidden, double ropeBase, double eps, boolean toy) {

    public static final double ROPE_BASE = 10000;
    public static final double EPS = 1e-5;

    /** The named configurations, in size order. */
    public static final Map<String, Config> NAMED = named();

    /** Checks the sizes; throws ConfigError (one line) naming the first bad value. */
    public Config {
        String where = name == null ? "?" : name;
        if (name == null || name.isBlank()) throw new ConfigError(where, "name must not be empty");
        positive(where, "vocab", vocab);
        positive(where, "d_model", dModel);
        positive(where, "heads", heads);
        positive(where, "kv_heads", kvHeads);
        positive(where, "seq", seq);
        positive(where, "layers", layers);
        if (mlpHidden < 0) throw new ConfigError(where, "mlp_hidden must be >= 0 (0: no MLP), got " + mlpHidden);
        if (!(ropeBase > 0) || Double.isInfinite(ropeBase)) throw new ConfigError(where, "rope_base must be positive, got " + ropeBase);
        if (!(eps > 0) || Double.isInfinite(eps)) throw new ConfigError(where, "eps must be positive, got " + eps);
        if (dModel % heads != 0) throw new ConfigError(where, "heads " + heads + " does not divide d_model " + dModel);
        if (heads % kvHeads != 0) throw new ConfigError(where, "kv_heads " + kvHeads + " does not divide heads " + heads);
        if ((dModel / heads) % 2 != 0)
            throw new ConfigError(where, "head dim " + (dModel / heads) + " (d_model " + dModel + " / heads " + heads + ") is odd; RoPE rotates pairs");
    }

    /** A non-toy config with kv_heads = heads and the default rope_base and eps. */
    public static Config of(String name, int vocab, int dModel, int heads, int seq, int layers, int mlpHidden) {
        return new Config(name, vocab, dModel, heads, heads, seq, layers, mlpHidden, ROPE_BASE, EPS, false);
    }

    /** This config with another vocabulary size (a BPE's), the rest unchanged. */
    public Config withVocab(int v) {
        return new Config(name, v, dModel, heads, kvHeads, seq, layers, mlpHidden, ropeBase, eps, toy);
    }

    /** The longest sequence {@code --seq} takes. */
    public static final int MAX_SEQ = 4096;

    /**
     * This config at another sequence length (train's and bench's {@code --seq}), the rest unchanged.
     *
     * @throws ConfigError when {@code seq} is not in [1, {@link #MAX_SEQ}]
     */
    public Config withSeq(int seq) {
        if (seq < 1 || seq > MAX_SEQ) throw new ConfigError(name, "--seq " + seq + ": must be in [1, " + MAX_SEQ + "]");
        return new Config(name, vocab, dModel, heads, kvHeads, seq, layers, mlpHidden, ropeBase, eps, toy);
    }

    /**
     * The fields where {@code asked} differs from this config (a checkpoint's), in component order,
     * each as {@code seq 64 there, 32 asked}; empty when they are equal.
     */
    public String differences(Config asked) {
        List<String> d = new ArrayList<>();
        differ(d, "name", name, asked.name);
        differ(d, "vocab", vocab, asked.vocab);
        differ(d, "dModel", dModel, asked.dModel);
        differ(d, "heads", heads, asked.heads);
        differ(d, "kvHeads", kvHeads, asked.kvHeads);
        differ(d, "seq", seq, asked.seq);
        differ(d, "layers", layers, asked.layers);
        differ(d, "mlpHidden", mlpHidden, asked.mlpHidden);
        differ(d, "ropeBase", ropeBase, asked.ropeBase);
        differ(d, "eps", eps, asked.eps);
        differ(d, "toy", toy, asked.toy);
        return String.join(", ", d);
    }

    private static void differ(List<String> d, String field, Object there, Object asked) {
        if (!Objects.equals(there, asked)) d.add(field + " " + there + " there, " + asked + " asked");
    }

    /** Features per head: dModel / heads. */
    public int headDim() { return dModel / heads; }

    /** Query heads per key/value head: heads / kvHeads. */
    public int groups() { return heads / kvHeads; }

    private static Map<String, Config> named() {
        Map<String, Config> m = new LinkedHashMap<>();
        for (Config c : List.of(
                new Config("storylm0", 8, 4, 2, 2, 4, 1, 0, ROPE_BASE, EPS, true),
                of("tiny", 256, 64, 2, 64, 2, 172),
                of("small", 256, 128, 4, 128, 2, 344),
                of("medium", 256, 256, 8, 256, 4, 688),
                // medium's shape at a long context: its attention is blockwise (memory linear in seq);
                // train and bench take --seq up to MAX_SEQ
                of("long", 256, 256, 8, 1024, 4, 688),
                // llama2.c's TinyStories 15M shape, over bytes instead of its 32000-piece vocabulary
                of("stories15m", 256, 288, 6, 256, 6, 768)))
            m.put(c.name(), c);
        return Collections.unmodifiableMap(m);
    }

    /** The named config; ConfigError listing the names when there is none. */
    public static Config byName(String name) {
        Config c = NAMED.get(name);
        if (c == null) throw new ConfigError("'" + name + "'", "unknown config (known: " + String.join(", ", NAMED.keySet()) + "; or a config file ending in .json)");
        return c;
    }

    private static final List<String> KEYS =
            List.of("name", "vocab", "d_model", "heads", "kv_heads", "seq", "layers", "mlp_hidden", "rope_base", "eps", "toy");

    /** {@link #load(Path, FileCap)} under {@link FileCap#DEFAULT}. */
    public static Config load(Path json) { return load(json, FileCap.DEFAULT); }

    /**
     * Reads a config from a JSON object file; the name defaults to the file name without .json.
     * ConfigError (one line) for a missing or unreadable file, one over {@code cap}, bad JSON or a bad config.
     */
    public static Config load(Path json, FileCap cap) {
        String where = json.toString();
        String text;
        try {
            String big = cap.tooLarge(Files.size(json));
            if (big != null) throw new ConfigError(where, big);
            text = Files.readString(json);
        } catch (NoSuchFileException e) {
            throw new ConfigError(where, "file not found");
        } catch (IOException e) {
            throw new ConfigError(where, "cannot read: " + e.getMessage(), e);
        }
        JsonNode node;
        try {
            node = new ObjectMapper().readTree(text);
        } catch (JacksonException e) {
            throw new ConfigError(where, "not valid JSON: " + TensorJson.plain(e.getOriginalMessage()), e);
        }
        String stem = json.getFileName().toString().replaceFirst("\\.json$", "");
        return fromJson(where, node, stem);
    }

    /**
     * A config from a parsed JSON object; {@code where} names it in errors, {@code defaultName} is
     * used when the object has no name.
     */
    public static Config fromJson(String where, JsonNode node, String defaultName) {
        if (node == null || !node.isObject()) throw new ConfigError(where, "expected a JSON object");
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!KEYS.contains(k)) throw new ConfigError(where, "unknown key '" + k + "' (known: " + String.join(", ", KEYS) + ")");
        }
        String name = defaultName;
        if (node.has("name")) {
            if (!node.get("name").isTextual()) throw new ConfigError(where, "name must be a string");
            name = node.get("name").asText();
        }
        int heads = integer(where, node, "heads");
        boolean toy = false;
        if (node.has("toy")) {
            if (!node.get("toy").isBoolean()) throw new ConfigError(where, "toy must be true or false");
            toy = node.get("toy").asBoolean();
        }
        int vocab = integer(where, node, "vocab"), dModel = integer(where, node, "d_model");
        int kvHeads = node.has("kv_heads") ? integer(where, node, "kv_heads") : heads;
        int seq = integer(where, node, "seq"), layers = integer(where, node, "layers"), mlp = integer(where, node, "mlp_hidden");
        double ropeBase = node.has("rope_base") ? number(where, node, "rope_base") : ROPE_BASE;
        double eps = node.has("eps") ? number(where, node, "eps") : EPS;
        try {
            return new Config(name, vocab, dModel, heads, kvHeads, seq, layers, mlp, ropeBase, eps, toy);
        } catch (ConfigError e) {
            throw new ConfigError(where, e.problem());
        }
    }


    /** This config as a JSON object with every key (the form {@link #fromJson} reads). */
    public ObjectNode toJson() {
        ObjectNode o = new ObjectMapper().createObjectNode();
        o.put("name", name);
        o.put("vocab", vocab);
        o.put("d_model", dModel);
        o.put("heads", heads);
        o.put("kv_heads", kvHeads);
        o.put("seq", seq);
        o.put("layers", layers);
        o.put("mlp_hidden", mlpHidden);
        o.put("rope_base", ropeBase);
        o.put("eps", eps);
        o.put("toy", toy);
        return o;
    }

    private static int integer(String where, JsonNode node, String key) {
        JsonNode v = node.get(key);
        if (v == null) throw new ConfigError(where, "missing key '" + key + "'");
        if (!v.isIntegralNumber())
            throw new ConfigError(where, key + " must be an integer, got " + v);
        if (!v.canConvertToInt())
            throw new ConfigError(where, key + " " + v + " is out of range (at most " + Integer.MAX_VALUE + ")");
        return v.intValue();
    }

    private static double number(String where, JsonNode node, String key) {
        JsonNode v = node.get(key);
        if (!v.isNumber()) throw new ConfigError(where, key + " must be a number, got " + v);
        return v.doubleValue();
    }

    private static void positive(String where, String key, int v) {
        if (v <= 0) throw new ConfigError(where, key + " must be positive, got " + v);
    }
}
