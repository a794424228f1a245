package kina.model;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Map.Entry;
import kina.eval.Tensor;
import kina.io.AtomicFiles;
import kina.io.FileCap;
import kina.io.FileFormatError;
import kina.io.SafeTensors;
import kina.io.TensorJson;
import kina.ir.TensorType;

/**
 * A training checkpoint: a directory {@code ROOT/step-000123/} holding {@code model.safetensors}
 * (the weights), {@code optimizer.safetensors} (the optimizer's moments, possibly none) and
 * {@code state.json} (format version, config, optimizer name and hyperparameters, step, seed, data
 * file and its SHA-256, the loss history, and the SHA-256 of both tensor files), plus a pointer
 * file {@code ROOT/latest} naming the newest step directory. A BPE model also holds its tokenizer
 * as {@code tokenizer.bin} (llama2.c's format), recorded in state.json with its kind, vocabulary
 * size and SHA-256; without that record the tokenizer is bytes.
 *
 * <p>Crash safety: every file is written to a temp name in its directory and renamed over the
 * target ({@link AtomicFiles}). A save first deletes the step directory's old {@code state.json},
 * then writes the two tensor files, then {@code state.json}, then {@code latest}. So a directory
 * with a {@code state.json} is complete (and its recorded digests match its tensor files), and
 * {@code latest} only ever names a complete directory; a crash leaves the previous {@code latest}.
 *
 * <p>Reading refuses, with one-line CheckpointErrors: a missing directory or file, a directory
 * without a checkpoint, corrupt or foreign JSON, a wrong format version, tensor files that are
 * not the ones state.json recorded, and (see {@link #requireTensors}) tensors missing, unexpected
 * or of the wrong shape.
 */
public final class Checkpoint {
    public static final int FORMAT_VERSION = 1;
    public static final String FORMAT = "kina-checkpoint";
    public static final String MODEL_FILE = "model.safetensors";
    public static final String OPTIMIZER_FILE = "optimizer.safetensors";
    public static final String STATE_FILE = "state.json";
    public static final String LATEST_FILE = "latest";
    public static final String TOKENIZER_FILE = "tokenizer.bin";

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private Checkpoint() {}

    /**
     * Everything but the tensors. {@code hyper}: the optimizer's hyperparameters by name (lr,
     * beta1, …); {@code dataFile}: the training file or {@link Corpus#EMBEDDED}; {@code trainLoss}
     * and {@code valLoss}: (step, loss) pairs so far; {@code extra}: free-form strings.
     */
    public record State(Config config, String optimizer, Map<String, Double> hyper, long step, long seed,
                        String dataFile, String dataSha256, List<double[]> trainLoss, List<double[]> valLoss,
                        Map<String, String> extra) {
        public State {
            hyper = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(hyper));
            trainLoss = List.copyOf(trainLoss);
            valLoss = List.copyOf(valLoss);
            extra = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(extra));
        }
    }

    /**
     * A checkpoint read back: the step directory it came from, its state, weights, moments (none
     * for an imported model) and tokenizer.
     */
    public record Loaded(Path dir, State state, Map<String, Tensor> weights, Map<String, Tensor> moments, Tokenizer tokenizer) {
        /** Throws CheckpointError unless the weights are exactly {@code expected} (names, dtypes, shapes). */
        public Loaded requireWeights(Map<String, TensorType> expected) {
            requireTensors(dir.resolve(MODEL_FILE), weights, expected, state.config().name());
            return this;
        }

        /**
         * Throws CheckpointError unless the optimizer moments are exactly {@code expected}; for a
         * checkpoint of the weights alone (no optimizer.safetensors), one that says so.
         */
        public Loaded requireMoments(Map<String, TensorType> expected) {
            if (moments.isEmpty() && !expected.isEmpty() && !Files.exists(dir.resolve(OPTIMIZER_FILE), LinkOption.NOFOLLOW_LINKS))
                throw new CheckpointError(dir.resolve(OPTIMIZER_FILE), "not found: this checkpoint holds the weights alone, which sample "
                        + "and export read, but resuming its step " + state.step() + " needs the optimizer's moments too");
            requireTensors(dir.resolve(OPTIMIZER_FILE), moments, expected, state.config().name());
            return this;
        }
    }

    /** Whether two tokenizers map ids alike: both bytes, or BPEs with the same pieces and scores. */
    public static boolean sameTokenizer(Tokenizer a, Tokenizer b) {
        return a.kind().equals(b.kind()) && a.vocab() == b.vocab() && java.util.Arrays.equals(a.toLlama2c(), b.toLlama2c());
    }

    /** The directory name of step {@code step}: {@code step-000123}. */
    public static String stepDirName(long step) {
        return String.format("step-%06d", step);
    }

    /** Saves a byte-level model into {@code root/step-NNNNNN/} and points {@code root/latest} at it; returns the step directory. */
    public static Path save(Path root, State state, Map<String, Tensor> weights, Map<String, Tensor> moments) {
        return save(root, state, weights, moments, new ByteTokenizer());
    }

    /** {@link #save(Path, State, Map, Map)} with the model's tokenizer (written as tokenizer.bin unless it is bytes). */
    public static Path save(Path root, State state, Map<String, Tensor> weights, Map<String, Tensor> moments, Tokenizer tokenizer) {
        Path dir = root.resolve(stepDirName(state.step()));
        try {
            Files.createDirectories(dir);
            Files.deleteIfExists(dir.resolve(STATE_FILE));
        } catch (IOException e) {
            throw new CheckpointError(dir, "cannot write: " + e.getMessage(), e);
        }
        byte[] model = SafeTensors.encode(weights, Map.of("format", "pt"));
        byte[] opt = SafeTensors.encode(moments, Map.of("format", "pt"));
        write(dir.resolve(MODEL_FILE), model);
        write(dir.resolve(OPTIMIZER_FILE), opt);
        byte[] tok = tokenizer instanceof BpeTokenizer ? tokenizer.toLlama2c() : null;
        if (tok != null) write(dir.resolve(TOKENIZER_FILE), tok);
        write(dir.resolve(STATE_FILE), stateJson(state, sha256(model), sha256(opt), tokenizer, tok));
        write(root.resolve(LATEST_FILE), (dir.getFileName() + "\n").getBytes(StandardCharsets.UTF_8));
        return dir;
    }

    /** {@link AtomicFiles#write}, its error a CheckpointError. */
    private static void write(Path file, byte[] bytes) {
        try {
            AtomicFiles.write(file, bytes);
        } catch (FileFormatError e) {
            throw new CheckpointError(e.file(), e.problem(), e);
        }
    }

    /** {@link #load(Path, FileCap)} under {@link FileCap#DEFAULT}. */
    public static Loaded load(Path path) { return load(path, FileCap.DEFAULT); }

    /**
     * Loads a checkpoint: {@code path} is a step directory (it holds state.json) or a root whose
     * {@code latest} names one. CheckpointError (one line) for a missing, corrupt or foreign
     * checkpoint, or a file in it over {@code cap}.
     */
    public static Loaded load(Path path, FileCap cap) {
        Path dir = resolve(path);
        Path statePath = dir.resolve(STATE_FILE);
        String text;
        try {
            String big = cap.tooLarge(Files.size(statePath));
            if (big != null) throw new CheckpointError(statePath, big);
            text = Files.readString(statePath);
        } catch (NoSuchFileException e) {
            throw new CheckpointError(statePath, "file not found");
        } catch (IOException e) {
            throw new CheckpointError(statePath, "cannot read: " + e.getMessage(), e);
        }
        JsonNode node;
        try {
            node = JSON.readTree(text);
        } catch (JacksonException e) {
            throw new CheckpointError(statePath, "corrupt JSON: " + TensorJson.plain(e.getOriginalMessage()), e);
        }
        if (node == null || !node.isObject() || !FORMAT.equals(text(node, "format")))
            throw new CheckpointError(statePath, "not a kina checkpoint state (no \"format\": \"" + FORMAT + "\")");
        JsonNode v = node.get("format_version");
        if (v == null || !v.isInt()) throw new CheckpointError(statePath, "no format_version");
        if (v.intValue() != FORMAT_VERSION)
            throw new CheckpointError(statePath, "format version " + v.intValue() + "; this kina reads version " + FORMAT_VERSION);
        State state = parseState(statePath, node);
        Map<String, Tensor> weights = readChecked(dir.resolve(MODEL_FILE), node, "model_sha256", cap);
        // The weights alone (optimizer.safetensors left out, as when a model is shared) are enough to
        // sample and export; only resuming at a step past 0 needs the moments (requireMoments says so).
        Map<String, Tensor> moments = Files.exists(dir.resolve(OPTIMIZER_FILE), LinkOption.NOFOLLOW_LINKS)
                ? readChecked(dir.resolve(OPTIMIZER_FILE), node, "optimizer_sha256", cap) : Map.of();
        return new Loaded(dir, state, weights, moments, tokenizer(dir, node, state.config().vocab(), cap));
    }

    /**
     * The run directory of the checkpoint {@code path} names (a root, or one of its step
     * directories): where a resumed run's checkpoints go by default. CheckpointError as {@link #load}
     * when {@code path} holds no checkpoint.
     */
    public static Path runDir(Path path) {
        Path dir = resolve(path);
        Path root = dir.getParent();
        return root != null ? root : dir.toAbsolutePath().getParent();
    }

    /**
     * Throws CheckpointError unless {@code got} holds exactly the tensors {@code expected} names,
     * each of the expected dtype and shape. {@code file} and {@code configName} name them in errors.
     */
    public static void requireTensors(Path file, Map<String, Tensor> got, Map<String, TensorType> expected, String configName) {
        for (Entry<String, TensorType> e : expected.entrySet()) {
            Tensor t = got.get(e.getKey());
            if (t == null) throw new CheckpointError(file, "missing tensor '" + e.getKey() + "' (config " + configName + ")");
            TensorType want = e.getValue();
            if (t.dtype() != want.dtype() || !t.shape().equals(want.shape()))
                throw new CheckpointError(file, "tensor '" + e.getKey() + "' is " + t.dtype() + t.shape()
                        + ", config " + configName + " needs " + want.dtype() + want.shape());
        }
        for (String name : got.keySet())
            if (!expected.containsKey(name)) throw new CheckpointError(file, "unexpected tensor '" + name + "' (config " + configName + ")");
    }

    private static Path resolve(Path path) {
        if (!Files.exists(path)) throw new CheckpointError(path, "checkpoint directory not found");
        if (!Files.isDirectory(path)) throw new CheckpointError(path, "not a checkpoint directory");
        if (Files.exists(path.resolve(STATE_FILE))) return path;
        Path latest = path.resolve(LATEST_FILE);
        if (Files.exists(latest)) {
            String name;
            try {
                name = Files.readString(latest).strip();
            } catch (IOException e) {
                throw new CheckpointError(latest, "cannot read: " + e.getMessage(), e);
            }
            if (!name.matches("step-\\d+")) throw new CheckpointError(latest, "corrupt pointer: expected a step-NNNNNN name");
            Path dir = path.resolve(name);
            if (!Files.exists(dir.resolve(STATE_FILE))) throw new CheckpointError(latest, "names " + name + ", which holds no complete checkpoint");
            return dir;
        }
        if (Files.exists(path.resolve(MODEL_FILE)))
            throw new CheckpointError(path, "incomplete checkpoint (no " + STATE_FILE + "; its save did not finish)");
        throw new CheckpointError(path, "no checkpoint here (neither " + STATE_FILE + " nor " + LATEST_FILE + ")");
    }

    /** The tokenizer state.json records: bytes without a record, else tokenizer.bin checked against its digest. */
    private static Tokenizer tokenizer(Path dir, JsonNode state, int vocab, FileCap cap) {
        JsonNode t = state.get("tokenizer");
        Path statePath = dir.resolve(STATE_FILE);
        String kind = t == null ? "byte" : text(t, "kind");
        if ("byte".equals(kind)) return new ByteTokenizer();
        if (!"bpe".equals(kind)) throw new CheckpointError(statePath, "unknown tokenizer kind " + t.get("kind") + " (byte or bpe)");
        Path file = dir.resolve(TOKENIZER_FILE);
        byte[] b = bytes(file, cap);
        String want = text(t, "sha256");
        if (want != null && !want.equals(sha256(b)))
            throw new CheckpointError(file, "does not match " + STATE_FILE + " (SHA-256 differs): the file was changed or replaced");
        try {
            return BpeTokenizer.fromLlama2c(file.toString(), b, vocab);
        } catch (DataError e) {
            throw new CheckpointError(file, e.getMessage().substring(file.toString().length() + 2), e);
        }
    }

    private static Map<String, Tensor> readChecked(Path file, JsonNode state, String key, FileCap cap) {
        byte[] b = bytes(file, cap);
        Map<String, Tensor> tensors;
        try {
            tensors = SafeTensors.decode(file, b).tensors();
        } catch (FileFormatError e) {
            throw new CheckpointError(e.file(), e.problem(), e);
        }
        String want = text(state, key);
        if (want != null && !want.equals(sha256(b)))
            throw new CheckpointError(file, "does not match " + STATE_FILE + " (SHA-256 differs): the file was changed or replaced");
        return tensors;
    }

    /** {@link SafeTensors#bytes}, its error a CheckpointError. */
    private static byte[] bytes(Path file, FileCap cap) {
        try {
            return SafeTensors.bytes(file, cap);
        } catch (FileFormatError e) {
            throw new CheckpointError(e.file(), e.problem(), e);
        }
    }

    private static byte[] stateJson(State s, String modelSha, String optSha, Tokenizer tokenizer, byte[] tokenizerBin) {
        ObjectNode o = JSON.createObjectNode();
        o.put("format", FORMAT);
        o.put("format_version", FORMAT_VERSION);
        o.set("config", s.config().toJson());
        ObjectNode opt = o.putObject("optimizer");
        opt.put("name", s.optimizer());
        ObjectNode hyper = opt.putObject("hyper");
        for (Entry<String, Double> e : s.hyper().entrySet()) putNumber(hyper, e.getKey(), e.getValue());
        o.put("step", s.step());
        o.put("seed", s.seed());
        ObjectNode data = o.putObject("data");
        data.put("file", s.dataFile());
        data.put("sha256", s.dataSha256());
        o.set("train_loss", pairs(s.trainLoss()));
        o.set("val_loss", pairs(s.valLoss()));
        ObjectNode extra = o.putObject("extra");
        for (Entry<String, String> e : s.extra().entrySet()) extra.put(e.getKey(), e.getValue());
        ObjectNode tok = o.putObject("tokenizer");
        tok.put("kind", tokenizer.kind());
        tok.put("vocab", tokenizer.vocab());
        if (tokenizerBin != null) {
            tok.put("file", TOKENIZER_FILE);
            tok.put("sha256", sha256(tokenizerBin));
        }
        o.put("model_sha256", modelSha);
        o.put("optimizer_sha256", optSha);
        try {
            return JSON.writeValueAsBytes(o);
        } catch (JacksonException e) {
            throw new IllegalStateException(e);
        }
    }

    private static State parseState(Path file, JsonNode o) {
        try {
            Config config = Config.fromJson(file.toString(), o.get("config"), "?");
            JsonNode opt = need(file, o, "optimizer");
            Map<String, Double> hyper = new LinkedHashMap<>();
            JsonNode h = need(file, opt, "hyper");
            for (Entry<String, JsonNode> e : h.properties()) {
                hyper.put(e.getKey(), number(file, e.getValue()));
            }
            JsonNode data = need(file, o, "data");
            Map<String, String> extra = new LinkedHashMap<>();
            JsonNode x = o.get("extra");
            if (x != null) for (Entry<String, JsonNode> e : x.properties()) {
                extra.put(e.getKey(), e.getValue().asText());
            }
            return new State(config, needText(file, opt, "name"), hyper,
                    needLong(file, o, "step"), needLong(file, o, "seed"),
                    needText(file, data, "file"), needText(file, data, "sha256"),
                    pairs(file, need(file, o, "train_loss")), pairs(file, need(file, o, "val_loss")), extra);
        } catch (ConfigError e) {
            throw new CheckpointError(file, "config: " + e.problem(), e);
        }
    }

    private static ArrayNode pairs(List<double[]> ps) {
        ArrayNode a = JSON.createArrayNode();
        for (double[] p : ps) {
            ArrayNode q = a.addArray();
            for (double d : p) {
                if (Double.isFinite(d)) q.add(d);
                else q.add(Double.toString(d));
            }
        }
        return a;
    }

    private static List<double[]> pairs(Path file, JsonNode a) {
        if (!a.isArray()) throw new CheckpointError(file, "corrupt state: a loss history is not an array");
        List<double[]> out = new ArrayList<>();
        for (JsonNode q : a) {
            if (!q.isArray()) throw new CheckpointError(file, "corrupt state: a loss entry is not an array");
            double[] p = new double[q.size()];
            for (int i = 0; i < p.length; i++) p[i] = number(file, q.get(i));
            out.add(p);
        }
        return out;
    }

    private static void putNumber(ObjectNode o, String key, double d) {
        if (Double.isFinite(d)) o.put(key, d);
        else o.put(key, Double.toString(d));
    }

    private static double number(Path file, JsonNode v) {
        if (v.isNumber()) return v.doubleValue();
        if (v.isTextual()) switch (v.asText()) {
            case "NaN" -> { return Double.NaN; }
            case "Infinity" -> { return Double.POSITIVE_INFINITY; }
            case "-Infinity" -> { return Double.NEGATIVE_INFINITY; }
            default -> { }
        }
        throw new CheckpointError(file, "corrupt state: " + v + " is not a number");
    }

    private static JsonNode need(Path file, JsonNode o, String key) {
        JsonNode v = o.get(key);
        if (v == null || v.isNull()) throw new CheckpointError(file, "corrupt state: missing '" + key + "'");
        return v;
    }

    private static String needText(Path file, JsonNode o, String key) {
        JsonNode v = need(file, o, key);
        if (!v.isTextual()) throw new CheckpointError(file, "corrupt state: '" + key + "' is not a string");
        return v.asText();
    }

    private static long needLong(Path file, JsonNode o, String key) {
        JsonNode v = need(file, o, key);
        if (!v.isIntegralNumber() || !v.canConvertToLong()) throw new CheckpointError(file, "corrupt state: '" + key + "' is not an integer");
        return v.longValue();
    }

    private static String text(JsonNode o, String key) {
        JsonNode v = o.get(key);
        return v != null && v.isTextual() ? v.asText() : null;
    }

    /** The SHA-256 of b, in lower-case hex. */
    public static String sha256(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
