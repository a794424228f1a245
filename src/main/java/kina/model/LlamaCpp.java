package kina.model;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kina.eval.Tensor;
import kina.io.Gguf;
import kina.io.Gguf.Value;
import kina.io.ModelFileError;
import kina.io.Vocabulary;
import kina.ir.DType;
import kina.ir.TensorType;

/**
 * A StoryLM as llama.cpp's GGUF ({@code general.architecture = "llama"}), written and read.
 *
 * <p>Tensors: {@code token_embd}, per layer {@code blk.N.attn_norm}, {@code attn_q}, {@code attn_k},
 * {@code attn_v}, {@code attn_output}, {@code ffn_norm}, {@code ffn_gate}, {@code ffn_up}, {@code
 * ffn_down}, then {@code output_norm} and {@code output} (each {@code .weight}). Matrices are
 * PyTorch Linear weights (out × in, so kina's x @ W transposed), their dims innermost first
 * ({@code ne = {in, out}}). llama.cpp's {@code llama} architecture rotates adjacent pairs (2j,
 * 2j+1) of a head, kina the half-split pairs (j, j + hd/2): the rows of attn_q and attn_k are
 * permuted within each head as for llama2.c's run.c (see {@link Llama2c}), which leaves every
 * attention score unchanged. Keys: {@code llama.context_length} (kina's seq), {@code
 * embedding_length}, {@code block_count}, {@code feed_forward_length}, {@code rope.dimension_count}
 * (the head dim), {@code attention.head_count}, {@code attention.head_count_kv}, {@code
 * attention.layer_norm_rms_epsilon}, {@code rope.freq_base}.
 *
 * <p>The vocabulary is SentencePiece's ({@code tokenizer.ggml.model = "llama"}; see {@link
 * TokenizerVocabulary}), with {@code add_bos_token} and {@code add_space_prefix} false, so that
 * llama.cpp feeds a prompt's tokens as kina trained on running text. Reading takes F32, F16 and
 * BF16 tensors of a llama model whose vocabulary kina's tokenizers can represent, a missing
 * {@code output} as a classifier tied to the embedding, and refuses the rest by key or tensor.
 */
public final class LlamaCpp {
    private LlamaCpp() {}

    /** Throws ConfigError for what llama.cpp's llama architecture cannot hold (the toy; no MLP). */
    public static void requireFits(Config c) {
        if (c.toy()) throw new ConfigError(c.name(), "the toy config has no norms or MLP; GGUF's llama architecture holds StoryLM decoders only");
        if (c.mlpHidden() == 0) throw new ConfigError(c.name(), "mlp_hidden 0: every layer of llama.cpp's llama architecture has an MLP");
    }

    /**
     * The GGUF file of {@code c}, kina's weights {@code w} and tokenizer {@code tok}: matrices F16
     * when {@code f16} (round to nearest even), else F32; the norms always F32.
     *
     * @throws ConfigError for a config or a vocabulary the format cannot hold
     */
    public static byte[] write(Config c, Map<String, Tensor> w, Tokenizer tok, boolean f16) {
        requireFits(c);
        Vocabulary v = TokenizerVocabulary.of(tok);
        Map<String, Value> m = new LinkedHashMap<>();
        m.put("general.architecture", Value.string("llama"));
        m.put("general.name", Value.string(c.name()));
        m.put("general.file_type", Value.u32(f16 ? 1 : 0));         // llama_ftype: ALL_F32, MOSTLY_F16
        m.put("general.alignment", Value.u32(Gguf.DEFAULT_ALIGNMENT));
        m.put("llama.context_length", Value.u32(c.seq()));
        m.put("llama.embedding_length", Value.u32(c.dModel()));
        m.put("llama.block_count", Value.u32(c.layers()));
        m.put("llama.feed_forward_length", Value.u32(c.mlpHidden()));
        m.put("llama.rope.dimension_count", Value.u32(c.headDim()));
        m.put("llama.attention.head_count", Value.u32(c.heads()));
        m.put("llama.attention.head_count_kv", Value.u32(c.kvHeads()));
        m.put("llama.attention.layer_norm_rms_epsilon", Value.f32(c.eps()));
        m.put("llama.rope.freq_base", Value.f32(c.ropeBase()));
        m.put("llama.vocab_size", Value.u32(c.vocab()));
        m.put("tokenizer.ggml.model", Value.string("llama"));
        m.put("tokenizer.ggml.tokens", Value.array(Gguf.ValueType.STRING, v.tokens()));
        List<Double> scores = new ArrayList<>();
        List<Long> types = new ArrayList<>();
        for (int i = 0; i < v.size(); i++) {
            scores.add((double) v.scores()[i]);
            types.add((long) v.types().get(i).id);
        }
        m.put("tokenizer.ggml.scores", Value.array(Gguf.ValueType.FLOAT32, scores));
        m.put("tokenizer.ggml.token_type", Value.array(Gguf.ValueType.INT32, types));
        if (tok instanceof BpeTokenizer) {
            m.put("tokenizer.ggml.unknown_token_id", Value.u32(BpeTokenizer.UNK));
            m.put("tokenizer.ggml.bos_token_id", Value.u32(BpeTokenizer.BOS));
            m.put("tokenizer.ggml.eos_token_id", Value.u32(BpeTokenizer.EOS));
        }
        m.put("tokenizer.ggml.add_bos_token", Value.bool(false));
        m.put("tokenizer.ggml.add_eos_token", Value.bool(false));
        m.put("tokenizer.ggml.add_space_prefix", Value.bool(false));

        Gguf.Dtype mat = f16 ? Gguf.Dtype.F16 : Gguf.Dtype.F32;
        List<Gguf.Tensor> t = new ArrayList<>();
        t.add(new Gguf.Tensor("token_embd.weight", new long[] {c.dModel(), c.vocab()}, mat, floats(w.get("emb"))));
        for (int l = 0; l < c.layers(); l++) {
            String k = "l" + l + "_", p = "blk." + l + ".";
            t.add(vector(p + "attn_norm.weight", w.get(k + "attn_norm")));
            t.add(matrix(p + "attn_q.weight", w.get(k + "wq"), c.headDim(), mat));
            t.add(matrix(p + "attn_k.weight", w.get(k + "wk"), c.headDim(), mat));
            t.add(matrix(p + "attn_v.weight", w.get(k + "wv"), 0, mat));
            t.add(matrix(p + "attn_output.weight", w.get(k + "wo"), 0, mat));
            t.add(vector(p + "ffn_norm.weight", w.get(k + "mlp_norm")));
            t.add(matrix(p + "ffn_gate.weight", w.get(k + "w_gate"), 0, mat));
            t.add(matrix(p + "ffn_up.weight", w.get(k + "w_up"), 0, mat));
            t.add(matrix(p + "ffn_down.weight", w.get(k + "w_down"), 0, mat));
        }
        t.add(vector("output_norm.weight", w.get("final_norm")));
        t.add(matrix("output.weight", w.get("lm_head"), 0, mat));
        return Gguf.write(m, t);
    }

    private static float[] floats(Tensor t) {
        double[] d = t.floats();
        float[] f = new float[d.length];
        for (int i = 0; i < d.length; i++) f[i] = (float) d[i];
        return f;
    }

    private static Gguf.Tensor vector(String name, Tensor t) {
        return new Gguf.Tensor(name, new long[] {t.size()}, Gguf.Dtype.F32, floats(t));
    }

    /** kina's [in, out] weight as out × in rows (ne {in, out}); with hd > 0 the rows of each head of width hd in run.c's interleaved order. */
    private static Gguf.Tensor matrix(String name, Tensor t, int hd, Gguf.Dtype dtype) {
        int in = (int) t.shape().dim(0), out = (int) t.shape().dim(1);
        double[] x = t.floats();
        float[] y = new float[x.length];
        for (int r = 0; r < out; r++) {
            int col = hd > 0 ? Llama2c.halfSplitColumn(r, hd) : r;
            for (int i = 0; i < in; i++) y[r * in + i] = (float) x[i * out + col];
        }
        return new Gguf.Tensor(name, new long[] {in, out}, dtype, y);
    }

    /**
     * Reads a GGUF file of a llama model; the config is named {@code name} (null: the file's
     * {@code general.name}, else {@code fallbackName}) and its window is {@code seq} (null: the
     * file's {@code llama.context_length}). {@code where} names the file in errors.
     *
     * @throws ModelFileError for a file kina cannot read or a model it cannot represent, by key or tensor
     */
    public static ImportedModel read(String where, byte[] file, String name, String fallbackName, Integer seq) {
        Gguf.Contents g = Gguf.read(where, file);
        Map<String, Value> m = g.metadata();
        String arch = text(where, m, "general.architecture", null);
        if (!arch.equals("llama")) throw new ModelFileError(where, "general.architecture \"" + arch + "\": kina imports llama models");
        for (String key : m.keySet()) {
            if (key.equals("llama.expert_count") && count(where, m, key, 0) > 0)
                throw new ModelFileError(where, key + " " + m.get(key).value() + ": kina's decoder has one MLP a layer, not experts");
            if (key.startsWith("llama.rope.scaling.") && !(key.equals("llama.rope.scaling.type") && "none".equals(m.get(key).value())))
                throw new ModelFileError(where, key + " " + m.get(key).value() + ": kina's RoPE is unscaled (rope.freq_base only)");
        }
        int d = count(where, m, "llama.embedding_length", null), layers = count(where, m, "llama.block_count", null);
        int heads = count(where, m, "llama.attention.head_count", null), kv = count(where, m, "llama.attention.head_count_kv", heads);
        int f = count(where, m, "llama.feed_forward_length", null);
        int hd = count(where, m, "llama.rope.dimension_count", d / heads);
        if (hd * heads != d)
            throw new ModelFileError(where, "llama.rope.dimension_count " + hd + " with " + heads + " heads over embedding_length " + d
                    + ": kina's heads split d_model and RoPE rotates each whole head");
        String tokModel = text(where, m, "tokenizer.ggml.model", null);
        if (!tokModel.equals("llama"))
            throw new ModelFileError(where, "tokenizer.ggml.model \"" + tokModel + "\": kina's tokenizers are bytes or a SentencePiece-style BPE (\"llama\")");
        Vocabulary voc = vocabulary(where, m);
        Tokenizer tok = TokenizerVocabulary.tokenizer(where, voc);
        int window = HuggingFace.window(where, "llama.context_length", count(where, m, "llama.context_length", null), seq);
        String n = name != null ? name : m.containsKey("general.name") ? text(where, m, "general.name", null) : fallbackName;
        Config c = HuggingFace.config(where, n, voc.size(), d, heads, kv, window, layers, f,
                shortest(number(where, m, "llama.rope.freq_base", 10000)), shortest(number(where, m, "llama.attention.layer_norm_rms_epsilon", null)));

        Map<String, Gguf.Tensor> byName = new LinkedHashMap<>();
        for (Gguf.Tensor t : g.tensors()) byName.put(t.name(), t);
        Map<String, Tensor> w = new LinkedHashMap<>();
        List<String> notes = new ArrayList<>();
        w.put("emb", take(where, byName, "token_embd.weight", c.vocab(), d, -1));
        for (int l = 0; l < layers; l++) {
            String k = "l" + l + "_", p = "blk." + l + ".";
            w.put(k + "attn_norm", take(where, byName, p + "attn_norm.weight", 0, d, -1));
            w.put(k + "wq", take(where, byName, p + "attn_q.weight", d, heads * hd, hd));
            w.put(k + "wk", take(where, byName, p + "attn_k.weight", d, kv * hd, hd));
            w.put(k + "wv", take(where, byName, p + "attn_v.weight", d, kv * hd, 0));
            w.put(k + "wo", take(where, byName, p + "attn_output.weight", heads * hd, d, 0));
            w.put(k + "mlp_norm", take(where, byName, p + "ffn_norm.weight", 0, d, -1));
            w.put(k + "w_gate", take(where, byName, p + "ffn_gate.weight", d, f, 0));
            w.put(k + "w_up", take(where, byName, p + "ffn_up.weight", d, f, 0));
            w.put(k + "w_down", take(where, byName, p + "ffn_down.weight", f, d, 0));
        }
        w.put("final_norm", take(where, byName, "output_norm.weight", 0, d, -1));
        if (byName.containsKey("output.weight")) {
            w.put("lm_head", take(where, byName, "output.weight", d, c.vocab(), 0));
        } else {
            w.put("lm_head", HuggingFace.transpose(w.get("emb")));
            notes.add("no output.weight: the classifier is the embedding (tied), copied into kina's lm_head");
        }
        if (!byName.isEmpty()) throw new ModelFileError(where, "tensor '" + byName.keySet().iterator().next() + "' has no place in kina's decoder");
        if (voc.dummyPrefix()) notes.add("tokenizer.ggml.add_space_prefix: kina encodes text without the leading space");
        return new ImportedModel(c, w, tok, "GGUF (llama)", notes);
    }

    /**
     * The kina weight from tensor {@code name} (removed from {@code t}): with in 0 a vector of
     * {@code out}; with hd −1 a row-major [in, out] as stored (the embedding); else kina's [in, out]
     * from out × in rows, unpermuted per head of width hd when hd > 0.
     */
    private static Tensor take(String where, Map<String, Gguf.Tensor> t, String name, int in, int out, int hd) {
        Gguf.Tensor g = t.remove(name);
        if (g == null) throw new ModelFileError(where, "no tensor '" + name + "'");
        long[] want = in == 0 ? new long[] {out} : hd < 0 ? new long[] {out, in} : new long[] {in, out};
        if (!java.util.Arrays.equals(g.ne(), want))
            throw new ModelFileError(where, "tensor '" + name + "' has ne " + java.util.Arrays.toString(g.ne()) + ", the config needs " + java.util.Arrays.toString(want));
        float[] x = g.values();
        double[] y = new double[x.length];
        if (in == 0 || hd < 0) {
            for (int i = 0; i < x.length; i++) y[i] = x[i];
            return Tensor.ofFloats(in == 0 ? TensorType.host(DType.F32, out) : TensorType.host(DType.F32, in, out), y);
        }
        for (int r = 0; r < out; r++) {
            int col = hd > 0 ? Llama2c.halfSplitColumn(r, hd) : r;
            for (int i = 0; i < in; i++) y[i * out + col] = x[r * in + i];
        }
        return Tensor.ofFloats(TensorType.host(DType.F32, in, out), y);
    }

    private static Vocabulary vocabulary(String where, Map<String, Value> m) {
        List<Object> tokens = array(where, m, "tokenizer.ggml.tokens", Gguf.ValueType.STRING);
        int n = tokens.size();
        float[] scores = new float[n];
        List<Vocabulary.Type> types = new ArrayList<>();
        if (m.containsKey("tokenizer.ggml.scores")) {
            List<Object> s = array(where, m, "tokenizer.ggml.scores", Gguf.ValueType.FLOAT32);
            if (s.size() != n) throw new ModelFileError(where, "tokenizer.ggml.scores has " + s.size() + " entries for " + n + " tokens");
            for (int i = 0; i < n; i++) scores[i] = (float) (double) (Double) s.get(i);
        }
        List<Object> ty = m.containsKey("tokenizer.ggml.token_type") ? array(where, m, "tokenizer.ggml.token_type", Gguf.ValueType.INT32) : null;
        if (ty != null && ty.size() != n) throw new ModelFileError(where, "tokenizer.ggml.token_type has " + ty.size() + " entries for " + n + " tokens");
        List<String> strings = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            strings.add((String) tokens.get(i));
            Vocabulary.Type t = ty == null ? Vocabulary.Type.NORMAL : Vocabulary.Type.of((Long) ty.get(i));
            if (t == null) throw new ModelFileError(where, "tokenizer.ggml.token_type of token " + i + " is " + ty.get(i));
            types.add(t);
        }
        Value prefix = m.get("tokenizer.ggml.add_space_prefix");
        return new Vocabulary(strings, scores, types, prefix == null || Boolean.TRUE.equals(prefix.value()));
    }

    /** The decimal that float32 {@code v} was written from: the shortest that rounds to it (1e-5, not 9.99999974738e-06). */
    static double shortest(double v) { return Double.parseDouble(Float.toString((float) v)); }

    private static String text(String where, Map<String, Value> m, String key, String dflt) {
        Value v = m.get(key);
        if (v == null) {
            if (dflt == null) throw new ModelFileError(where, "no " + key);
            return dflt;
        }
        if (!(v.value() instanceof String s)) throw new ModelFileError(where, key + " is " + v.type() + ", not a string");
        return s;
    }

    private static int count(String where, Map<String, Value> m, String key, Integer dflt) {
        Value v = m.get(key);
        if (v == null) {
            if (dflt == null) throw new ModelFileError(where, "no " + key);
            return dflt;
        }
        if (!(v.value() instanceof Long l) || l < 0 || l > Integer.MAX_VALUE) throw new ModelFileError(where, key + " " + v.value() + ": a count is needed");
        return (int) (long) l;
    }

    private static double number(String where, Map<String, Value> m, String key, Integer dflt) {
        Value v = m.get(key);
        if (v == null) {
            if (dflt == null) throw new ModelFileError(where, "no " + key);
            return dflt;
        }
        if (!(v.value() instanceof Double x)) throw new ModelFileError(where, key + " is " + v.type() + ", not a float");
        return x;
    }

    private static List<Object> array(String where, Map<String, Value> m, String key, Gguf.ValueType element) {
        Value v = m.get(key);
        if (v == null) throw new ModelFileError(where, "no " + key);
        if (!(v.value() instanceof Gguf.Array a) || a.element() != element)
            throw new ModelFileError(where, key + " is not an array of " + element);
        return a.values();
    }
}
