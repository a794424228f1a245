package kina.io;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The files of a Hugging Face {@code LlamaForCausalLM} directory, read: {@code config.json} (the
 * {@code LlamaConfig} fields, with transformers' defaults), the weight files ({@code
 * model.safetensors}, or the shards {@code model.safetensors.index.json} maps each tensor to) and
 * {@code tokenizer.json}. What a Llama of that config computes and kina's decoder cannot (biases,
 * another activation, RoPE scaling) is refused here, by field and value.
 */
public final class HfDirectory {
    private HfDirectory() {}

    public static final String CONFIG = "config.json", WEIGHTS = "model.safetensors", INDEX = "model.safetensors.index.json",
            TOKENIZER = "tokenizer.json";

    /**
     * The fields of config.json kina uses: sizes, {@code head_dim} (null when absent: hidden /
     * heads), the window {@code max_position_embeddings}, {@code rms_norm_eps}, {@code rope_theta},
     * {@code tie_word_embeddings}.
     */
    public record LlamaConfig(int hidden, int intermediate, int heads, int kvHeads, Integer headDim, int layers, int vocab,
                              int maxPositions, double eps, double ropeTheta, boolean tied) {}

    /**
     * Reads {@code dir}/config.json, at most {@code cap} bytes.
     *
     * @throws ModelFileError for a missing or foreign file, a missing size, or a field whose value
     *     kina's decoder does not compute (named with the value)
     */
    public static LlamaConfig config(Path dir, FileCap cap) {
        Path file = dir.resolve(CONFIG);
        String where = file.toString();
        JsonNode o = json(file, cap);
        if (!o.isObject()) throw new ModelFileError(where, "not a JSON object");
        JsonNode arch = o.get("architectures");
        boolean llama = "llama".equals(o.path("model_type").asText());
        if (arch != null && arch.isArray() && !arch.isEmpty()) {
            llama = false;
            for (JsonNode a : arch) llama |= a.asText().equals("LlamaForCausalLM");
        }
        if (!llama) throw new ModelFileError(where, "architectures " + (arch != null ? arch : "(none)") + ", model_type " + o.path("model_type")
                + ": kina imports LlamaForCausalLM");
        String act = o.path("hidden_act").asText("silu");
        if (!act.equals("silu")) throw new ModelFileError(where, "hidden_act \"" + act + "\": kina's MLP is SwiGLU (silu)");
        for (String bias : List.of("attention_bias", "mlp_bias"))
            if (o.path(bias).asBoolean(false)) throw new ModelFileError(where, bias + " true: kina's projections have no bias");
        JsonNode scaling = o.get("rope_scaling");
        if (scaling != null && !scaling.isNull())
            throw new ModelFileError(where, "rope_scaling " + scaling + ": kina's RoPE is unscaled (rope_theta only)");
        int heads = positive(where, o, "num_attention_heads", null);
        Integer headDim = o.hasNonNull("head_dim") ? positive(where, o, "head_dim", null) : null;
        return new LlamaConfig(positive(where, o, "hidden_size", null), positive(where, o, "intermediate_size", null), heads,
                positive(where, o, "num_key_value_heads", heads), headDim, positive(where, o, "num_hidden_layers", null),
                positive(where, o, "vocab_size", null), positive(where, o, "max_position_embeddings", 2048),
                number(where, o, "rms_norm_eps", 1e-6), number(where, o, "rope_theta", 10000), o.path("tie_word_embeddings").asBoolean(false));
    }

    /**
     * The weight files of {@code dir} and the tensors each holds by the index (empty for a single
     * model.safetensors, which holds them all); the index is read under {@code cap}.
     *
     * @throws ModelFileError when there is neither file, or the index is corrupt or names a missing shard
     */
    public static Map<Path, List<String>> weightFiles(Path dir, FileCap cap) {
        Path index = dir.resolve(INDEX), single = dir.resolve(WEIGHTS);
        Map<Path, List<String>> files = new LinkedHashMap<>();
        if (!Files.exists(index)) {
            if (!Files.exists(single))
                throw new ModelFileError(dir.toString(), "neither " + WEIGHTS + " nor " + INDEX + " (the weights of a Hugging Face model)");
            files.put(single, List.of());
            return files;
        }
        JsonNode map = json(index, cap).get("weight_map");
        if (map == null || !map.isObject() || map.isEmpty()) throw new ModelFileError(index.toString(), "no \"weight_map\" of tensor names to files");
        for (Map.Entry<String, JsonNode> e : map.properties()) {
            String f = e.getValue().asText();
            Path shard = dir.resolve(f).normalize();
            if (!e.getValue().isTextual() || f.contains("/") || f.contains("\\") || !shard.getParent().equals(dir.normalize()))
                throw new ModelFileError(index.toString(), "weight_map sends '" + e.getKey() + "' to " + e.getValue() + ", not a file of the directory");
            if (!Files.exists(shard)) throw new ModelFileError(index.toString(), "weight_map names " + f + ", which is missing");
            files.computeIfAbsent(shard, _ -> new ArrayList<>()).add(e.getKey());
        }
        return files;
    }

    /** The vocabulary of {@code dir}/tokenizer.json (see {@link TokenizerJson#read}), at most {@code cap} bytes; null when there is no such file. */
    public static Vocabulary tokenizer(Path dir, FileCap cap) {
        Path file = dir.resolve(TOKENIZER);
        if (!Files.exists(file)) return null;
        return TokenizerJson.read(file.toString(), bytes(file, cap));
    }

    /** The bytes of {@code file}; ModelFileError when it is missing, unreadable or over {@code cap}. */
    public static byte[] bytes(Path file, FileCap cap) {
        try {
            if (Files.isDirectory(file)) throw new ModelFileError(file.toString(), "is a directory, not a file");
            String big = cap.tooLarge(Files.size(file));
            if (big != null) throw new ModelFileError(file.toString(), big);
            return Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new ModelFileError(file.toString(), "file not found");
        } catch (IOException e) {
            throw new ModelFileError(file.toString(), "cannot read: " + e.getMessage(), e);
        } catch (OutOfMemoryError e) {
            throw new ModelFileError(file.toString(), "too large to read");
        }
    }

    private static JsonNode json(Path file, FileCap cap) {
        try {
            JsonNode o = new ObjectMapper().readTree(bytes(file, cap));
            if (o == null) throw new ModelFileError(file.toString(), "empty");
            return o;
        } catch (JacksonException e) {
            throw new ModelFileError(file.toString(), "not valid JSON: " + e.getOriginalMessage().replace('\n', ' '), e);
        } catch (IOException e) {
            throw new ModelFileError(file.toString(), "cannot read: " + e.getMessage(), e);
        }
    }

    private static int positive(String where, JsonNode o, String key, Integer dflt) {
        JsonNode v = o.get(key);
        if (v == null || v.isNull()) {
            if (dflt == null) throw new ModelFileError(where, "no " + key);
            return dflt;
        }
        if (!v.canConvertToInt() || !v.isIntegralNumber() || v.intValue() <= 0) throw new ModelFileError(where, key + " " + v + ": a positive integer is needed");
        return v.intValue();
    }

    private static double number(String where, JsonNode o, String key, double dflt) {
        JsonNode v = o.get(key);
        if (v == null || v.isNull()) return dflt;
        if (!v.isNumber() || !(v.doubleValue() > 0) || Double.isInfinite(v.doubleValue()))
            throw new ModelFileError(where, key + " " + v + ": a positive number is needed");
        return v.doubleValue();
    }
}
