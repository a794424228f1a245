package kina.model;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import kina.eval.Tensor;
import kina.io.AtomicFiles;
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

    /** Writes {@code dir}/model.safetensors and {@code dir}/config.json (each atomically); FileFormatError when the file system refuses. */
    public static void write(Path dir, Config c, Map<String, Tensor> w, boolean bpe) {
        Map<String, Tensor> t = tensors(c, w);
        byte[] cfg = config(c, bpe);
        AtomicFiles.write(dir.resolve(WEIGHTS), SafeTensors.encode(t, Map.of("format", "pt")));
        AtomicFiles.write(dir.resolve(CONFIG), cfg);
    }

    /** [in, out] → [out, in]. */
    static Tensor transpose(Tensor t) {
        int in = (int) t.shape().dim(0), out = (int) t.shape().dim(1);
        double[] x = t.floats(), y = new double[x.length];
        for (int i = 0; i < in; i++) for (int j = 0; j < out; j++) y[j * in + i] = x[i * out + j];
        return Tensor.ofFloats(TensorType.host(DType.F32, out, in), y);
    }
}
