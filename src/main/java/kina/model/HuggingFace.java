package kina.model;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kina.eval.Tensor;
import kina.io.AtomicFiles;
import kina.io.FileCap;
import kina.io.HfDirectory;
import kina.io.ModelFileError;
import kina.io.SafeTensors;
import kina.ir.DType;
import kina.ir.TensorType;

/**
 * A StoryLM in the Hugging Face layout of {@code LlamaForCausalLM}: {@code model.safetensors}
 * with its tensor names and shapes (Linear weights out × in, so kina's x @ W weights transposed)
 * and {@code config.json} with the {@code LlamaConfig} fields. transformers applies RoPE to
 * half-split pairs ({@code rotate_half}), as kina does, so q_proj and k_proj need no permutation;
 * its RMSNorm is x·rsqrt(mean(x²) + rms_norm_eps)·w and its MLP down(silu(gate x) ⊙ up x), with
 * kina's {@code w_gate}, {@code w_up}, {@code w_down}. The classifier is kina's own lm_head
 * ({@code tie_word_embeddings} false).
 */
public final class HuggingFace {
    private HuggingFace() {}

    public static final String WEIGHTS = "model.safetensors", CONFIG = "config.json";

    /** Throws ConfigError for what LlamaForCausalLM cannot hold (the toy; no MLP). */
    public static void requireFits(Config c) {
        if (c.toy()) throw new ConfigError(c.name(), "the toy config has no norms or MLP; LlamaForCausalLM holds StoryLM decoders only");
        if (c.mlpHidden() == 0) throw new ConfigError(c.name(), "mlp_hidden 0: every LlamaForCausalLM layer has an MLP (intermediate_size > 0)");
    }

    /** The tensors of model.safetensors, in layer order, from kina's weights {@code w}. */
    public static Map<String, Tensor> tensors(Config c, Map<String, Tensor> w) {
        requireFits(c);
        Map<String, Tensor> t = new LinkedHashMap<>();
        t.put("model.embed_tokens.weight", w.get("emb"));
        for (int l = 0; l < c.layers(); l++) {
            String k = "l" + l + "_", p = "model.layers." + l + ".";
            t.put(p + "input_layernorm.weight", w.get(k + "attn_norm"));
            t.put(p + "self_attn.q_proj.weight", transpose(w.get(k + "wq")));
            t.put(p + "self_attn.k_proj.weight", transpose(w.get(k + "wk")));
            t.put(p + "self_attn.v_proj.weight", transpose(w.get(k + "wv")));
            t.put(p + "self_attn.o_proj.weight", transpose(w.get(k + "wo")));
            t.put(p + "post_attention_layernorm.weight", w.get(k + "mlp_norm"));
            t.put(p + "mlp.gate_proj.weight", transpose(w.get(k + "w_gate")));
            t.put(p + "mlp.up_proj.weight", transpose(w.get(k + "w_up")));
            t.put(p + "mlp.down_proj.weight", transpose(w.get(k + "w_down")));
        }
        t.put("model.norm.weight", w.get("final_norm"));
        t.put("lm_head.weight", transpose(w.get("lm_head")));
        return t;
    }

    /** config.json: the LlamaConfig of {@code c}; {@code bpe} adds the BOS/EOS ids of kina's BPE layout. */
    public static byte[] config(Config c, boolean bpe) {
        requireFits(c);
        ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        ObjectNode o = json.createObjectNode();
        o.putArray("architectures").add("LlamaForCausalLM");
        o.put("model_type", "llama");
        o.put("hidden_size", c.dModel());
        o.put("intermediate_size", c.mlpHidden());
        o.put("num_attention_heads", c.heads());
        o.put("num_key_value_heads", c.kvHeads());
        o.put("head_dim", c.headDim());
        o.put("num_hidden_layers", c.layers());
        o.put("vocab_size", c.vocab());
        o.put("max_position_embeddings", c.seq());
        o.put("rms_norm_eps", c.eps());
        o.put("rope_theta", c.ropeBase());
        o.put("tie_word_embeddings", false);
        o.put("hidden_act", "silu");
        o.put("attention_bias", false);
        o.put("mlp_bias", false);
        o.put("torch_dtype", "float32");
        if (bpe) {
            o.put("bos_token_id", BpeTokenizer.BOS);
            o.put("eos_token_id", BpeTokenizer.EOS);
        }
        try {
            return json.writeValueAsBytes(o);
        } catch (JacksonException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Writes {@code dir}/model.safetensors, config.json and tokenizer.json (each atomically; see
     * {@link TokenizerVocabulary} and {@link kina.io.TokenizerJson}); a BPE's tokenizer.bin too,
     * which holds its scores exactly.
     *
     * @throws ConfigError before anything is written, for what the layout cannot hold
     */
    public static void write(Path dir, Config c, Map<String, Tensor> w, Tokenizer tok) {
        Map<String, Tensor> t = tensors(c, w);
        boolean bpe = tok instanceof BpeTokenizer;
        byte[] cfg = config(c, bpe);
        byte[] tokenizer = kina.io.TokenizerJson.write(TokenizerVocabulary.of(tok));
        AtomicFiles.write(dir.resolve(WEIGHTS), SafeTensors.encode(t, Map.of("format", "pt")));
        AtomicFiles.write(dir.resolve(CONFIG), cfg);
        AtomicFiles.write(dir.resolve(HfDirectory.TOKENIZER), tokenizer);
        if (bpe) AtomicFiles.write(dir.resolve(Checkpoint.TOKENIZER_FILE), tok.toLlama2c());
    }

    /**
     * Reads a {@code LlamaForCausalLM} directory (see {@link HfDirectory}): F32, F16 or BF16
     * tensors in model.safetensors or its shards, tied or untied embeddings, GQA. The config is
     * named {@code name} (null: the directory's name); its window is {@code seq} (null:
     * max_position_embeddings). Without tokenizer.json the vocabulary must be 256 (bytes). A
     * tokenizer.bin beside a tokenizer.json of the same pieces (kina's own export) gives the BPE's
     * exact scores.
     *
     * @throws ModelFileError naming the field, tensor or token kina cannot read or represent
     */
    public static ImportedModel read(Path dir, String name, Integer seq) { return read(dir, name, seq, FileCap.DEFAULT); }

    /** {@link #read(Path, String, Integer)} with each file of the directory at most {@code cap} bytes. */
    public static ImportedModel read(Path dir, String name, Integer seq, FileCap cap) {
        String where = dir.toString();
        if (!Files.isDirectory(dir)) throw new ModelFileError(where, Files.exists(dir) ? "not a directory" : "directory not found");
        HfDirectory.LlamaConfig h = HfDirectory.config(dir, cap);
        String cfgFile = dir.resolve(CONFIG).toString();
        int hd = h.hidden() / h.heads();
        if (h.hidden() % h.heads() != 0 || h.headDim() != null && h.headDim() != hd)
            throw new ModelFileError(cfgFile, "head_dim " + (h.headDim() != null ? h.headDim() : "(none)") + " with hidden_size " + h.hidden()
                    + " and num_attention_heads " + h.heads() + ": kina's heads split hidden_size evenly (head_dim = hidden_size / heads)");
        String n = name != null ? name : dir.toAbsolutePath().normalize().getFileName() == null ? "hf" : dir.toAbsolutePath().normalize().getFileName().toString();
        Config c = config(cfgFile, n, h.vocab(), h.hidden(), h.heads(), h.kvHeads(), window(cfgFile, "max_position_embeddings", h.maxPositions(), seq),
                h.layers(), h.intermediate(), h.ropeTheta(), h.eps());
        List<String> notes = new ArrayList<>();
        Tokenizer tok = tokenizer(dir, c.vocab(), notes, cap);

        Map<String, Tensor> hf = new LinkedHashMap<>();
        Map<String, Path> from = new HashMap<>();
        for (Map.Entry<Path, List<String>> f : HfDirectory.weightFiles(dir, cap).entrySet()) {
            Map<String, Tensor> got = SafeTensors.decode(f.getKey(), HfDirectory.bytes(f.getKey(), cap), true).tensors();
            for (String want : f.getValue())
                if (!got.containsKey(want)) throw new ModelFileError(f.getKey().toString(), "no tensor '" + want + "', which " + HfDirectory.INDEX + " puts here");
            for (Map.Entry<String, Tensor> e : got.entrySet()) {
                Path before = from.put(e.getKey(), f.getKey());
                if (before != null) throw new ModelFileError(f.getKey().toString(), "tensor '" + e.getKey() + "' is in " + before.getFileName() + " too");
                hf.put(e.getKey(), e.getValue());
            }
        }
        hf.keySet().removeIf(k -> k.endsWith(".rotary_emb.inv_freq"));   // older exports keep RoPE's frequencies; kina computes its own
        Map<String, Tensor> w = new LinkedHashMap<>();
        int d = c.dModel(), f = c.mlpHidden(), q = c.heads() * hd, kv = c.kvHeads() * hd;
        w.put("emb", take(where, hf, from, "model.embed_tokens.weight", c.vocab(), d, false));
        for (int l = 0; l < c.layers(); l++) {
            String k = "l" + l + "_", p = "model.layers." + l + ".";
            w.put(k + "attn_norm", take(where, hf, from, p + "input_layernorm.weight", 0, d, false));
            w.put(k + "wq", take(where, hf, from, p + "self_attn.q_proj.weight", q, d, true));
            w.put(k + "wk", take(where, hf, from, p + "self_attn.k_proj.weight", kv, d, true));
            w.put(k + "wv", take(where, hf, from, p + "self_attn.v_proj.weight", kv, d, true));
            w.put(k + "wo", take(where, hf, from, p + "self_attn.o_proj.weight", d, q, true));
            w.put(k + "mlp_norm", take(where, hf, from, p + "post_attention_layernorm.weight", 0, d, false));
            w.put(k + "w_gate", take(where, hf, from, p + "mlp.gate_proj.weight", f, d, true));
            w.put(k + "w_up", take(where, hf, from, p + "mlp.up_proj.weight", f, d, true));
            w.put(k + "w_down", take(where, hf, from, p + "mlp.down_proj.weight", d, f, true));
        }
        w.put("final_norm", take(where, hf, from, "model.norm.weight", 0, d, false));
        if (h.tied()) {
            hf.remove("lm_head.weight");            // transformers ties it to the embedding whatever the file holds
            w.put("lm_head", transpose(w.get("emb")));
            notes.add("tie_word_embeddings: the classifier is the embedding, copied into kina's lm_head (fine-tuning unties them)");
        } else {
            if (!hf.containsKey("lm_head.weight"))
                throw new ModelFileError(where, "no tensor 'lm_head.weight', and config.json's tie_word_embeddings is false");
            w.put("lm_head", take(where, hf, from, "lm_head.weight", c.vocab(), d, true));
        }
        if (!hf.isEmpty()) {
            String extra = hf.keySet().iterator().next();
            throw new ModelFileError(from.get(extra).toString(), "tensor '" + extra + "' has no place in kina's decoder (LlamaForCausalLM without biases)");
        }
        return new ImportedModel(c, w, tok, "Hugging Face LlamaForCausalLM", notes);
    }

    /** kina's weight from HF tensor {@code name} (removed from {@code hf}): rows × cols as stored (a vector when rows is 0), transposed when asked. */
    private static Tensor take(String where, Map<String, Tensor> hf, Map<String, Path> from, String name, int rows, int cols, boolean transpose) {
        Tensor t = hf.remove(name);
        if (t == null) throw new ModelFileError(where, "no tensor '" + name + "'");
        long[] want = rows == 0 ? new long[] {cols} : new long[] {rows, cols};
        if (!java.util.Arrays.equals(t.shape().dims(), want))
            throw new ModelFileError(from.get(name).toString(), "tensor '" + name + "' has shape " + java.util.Arrays.toString(t.shape().dims())
                    + ", config.json needs " + java.util.Arrays.toString(want));
        return transpose ? transpose(t) : t;
    }

    /** The tokenizer of an HF directory: tokenizer.json's (with a matching tokenizer.bin's scores), else bytes for vocab 256. */
    private static Tokenizer tokenizer(Path dir, int vocab, List<String> notes, FileCap cap) {
        kina.io.Vocabulary v = HfDirectory.tokenizer(dir, cap);
        String file = dir.resolve(HfDirectory.TOKENIZER).toString();
        if (v == null) {
            if (vocab != ByteTokenizer.VOCAB)
                throw new ModelFileError(dir.toString(), "no " + HfDirectory.TOKENIZER + ", and vocab_size " + vocab + " is not bytes (256)");
            notes.add("no tokenizer.json: vocab 256 taken as bytes");
            return new ByteTokenizer();
        }
        if (v.size() != vocab) throw new ModelFileError(file, v.size() + " tokens, but config.json's vocab_size is " + vocab);
        Tokenizer tok = TokenizerVocabulary.tokenizer(file, v);
        Path bin = dir.resolve(Checkpoint.TOKENIZER_FILE);
        if (tok instanceof BpeTokenizer && Files.exists(bin)) {
            try {
                BpeTokenizer exact = BpeTokenizer.fromLlama2c(bin.toString(), HfDirectory.bytes(bin, cap), vocab);
                boolean same = true;
                for (int i = 0; i < vocab && same; i++) same = java.util.Arrays.equals(exact.piece(i), tok.piece(i));
                if (same) tok = exact;
            } catch (DataError e) {
                // a tokenizer.bin of something else: tokenizer.json stands alone
            }
        }
        if (v.dummyPrefix()) notes.add("the tokenizer's dummy prefix (a ▁ before the text) is dropped: kina encodes text as it comes");
        return tok;
    }

    /**
     * The window of an imported model: {@code seq} when given, else the file's {@code value} of
     * {@code key}, which must be at most {@link Config#MAX_SEQ}.
     */
    static int window(String where, String key, int value, Integer seq) {
        if (seq != null) {
            if (seq < 1 || seq > Config.MAX_SEQ) throw new ModelFileError(where, "--seq " + seq + ": must be in [1, " + Config.MAX_SEQ + "]");
            return seq;
        }
        if (value > Config.MAX_SEQ)
            throw new ModelFileError(where, key + " " + value + " is over kina's longest window, " + Config.MAX_SEQ + ": give the window to train and sample with --seq N");
        return value;
    }

    /** A config of an imported model; ModelFileError (at {@code where}) naming what kina cannot build. */
    static Config config(String where, String name, int vocab, int d, int heads, int kv, int seq, int layers, int f, double rope, double eps) {
        try {
            return new Config(name, vocab, d, heads, kv, seq, layers, f, rope, eps, false);
        } catch (ConfigError e) {
            throw new ModelFileError(where, e.problem());
        }
    }

    /** [in, out] → [out, in]. */
    static Tensor transpose(Tensor t) {
        int in = (int) t.shape().dim(0), out = (int) t.shape().dim(1);
        double[] x = t.floats(), y = new double[x.length];
        for (int i = 0; i < in; i++) for (int j = 0; j < out; j++) y[j * in + i] = x[i * out + j];
        return Tensor.ofFloats(TensorType.host(DType.F32, out, in), y);
    }
}
