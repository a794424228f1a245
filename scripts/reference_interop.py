#!/usr/bin/python3
"""NumPy reference forwards for kina's llama2.c and Hugging Face exports (float64).

Run from the repository root, in this order (the second step is kina's own export):

    /usr/bin/python3 scripts/reference_interop.py llama2c
    bin/kina import src/test/resources/fixtures/interop/model.bin --out /tmp/interop
    bin/kina export --checkpoint /tmp/interop --format hf -o src/test/resources/fixtures/interop/hf
    /usr/bin/python3 scripts/reference_interop.py hf

llama2c: writes fixtures/interop/model.bin, llama2.c's legacy v0 file, with seeded random weights
for the config fixtures/interop/interop.json (GQA), and logits_llama2c.npy: the logits of IDS at
every position, computed as llama2.c's run.c computes them from that file alone (its layout and
conventions, not kina's): x = embedding row; per layer RMSNorm (ε 1e-5 added to the mean square),
q, k, v = W x with W out x in, RoPE on interleaved pairs (2j, 2j+1) of each head by
pos * 10000^(-2j/hs), causal softmax attention with scale 1/sqrt(hs), query head h reading kv head
h // (H/KV), wo, residual; RMSNorm, w2(silu(w1 x) * w3 x), residual; final RMSNorm; the classifier
(negative vocab_size: stored after the RoPE tables).

hf: reads fixtures/interop/hf/model.safetensors and config.json (as transformers' LlamaForCausalLM
would: model.embed_tokens.weight, model.layers.N.self_attn.q_proj.weight, ..., lm_head.weight)
and writes logits_hf.npy with transformers' conventions: RoPE by rotate_half on half-split pairs,
cos/sin of pos * rope_theta^(-2i/head_dim) repeated over both halves; x * rsqrt(mean(x^2) + eps) * w;
down(silu(gate x) * up x).
"""
import json
import math
import os
import struct
import sys

import numpy as np

DIR = "src/test/resources/fixtures/interop"
IDS = [84, 104, 101, 32, 109, 97, 110, 32, 119, 104, 111, 32, 115, 97, 105, 100]


def rmsnorm(x, w, eps):
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def silu(x):
    return x / (1.0 + np.exp(-x))


def causal_attention(q, k, v, heads, kv_heads):
    # q [T, H, hs], k, v [T, KV, hs]
    t, _, hs = q.shape
    g = heads // kv_heads
    out = np.zeros_like(q)
    for h in range(heads):
        kk, vv = k[:, h // g, :], v[:, h // g, :]
        s = q[:, h, :] @ kk.T / math.sqrt(hs)
        s = s + np.triu(np.full((t, t), -np.inf), 1)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        out[:, h, :] = p @ vv
    return out


def llama2c():
    cfg = json.load(open(os.path.join(DIR, "interop.json")))
    d, f, layers, heads, kv = cfg["d_model"], cfg["mlp_hidden"], cfg["layers"], cfg["heads"], cfg["kv_heads"]
    vocab, seq = cfg["vocab"], cfg["seq"]
    hs = d // heads
    rng = np.random.RandomState(26)

    def mat(o, i):
        return (rng.standard_normal((o, i)) * 0.25).astype(np.float32)

    def gain(n):
        return (1 + 0.2 * rng.standard_normal(n)).astype(np.float32)

    emb = mat(vocab, d)
    att_norm = [gain(d) for _ in range(layers)]
    wq = [mat(heads * hs, d) for _ in range(layers)]
    wk = [mat(kv * hs, d) for _ in range(layers)]
    wv = [mat(kv * hs, d) for _ in range(layers)]
    wo = [mat(d, heads * hs) for _ in range(layers)]
    ffn_norm = [gain(d) for _ in range(layers)]
    w1 = [mat(f, d) for _ in range(layers)]
    w2 = [mat(d, f) for _ in range(layers)]
    w3 = [mat(f, d) for _ in range(layers)]
    final = gain(d)
    cls = mat(vocab, d)
    # the RoPE tables run.c skips, as kina writes them: theta(t, i) = t * base^(-2i/hs)
    cos = np.array([[math.cos(t * math.pow(10000.0, -2.0 * i / hs)) for i in range(hs // 2)] for t in range(seq)], dtype=np.float32)
    sin = np.array([[math.sin(t * math.pow(10000.0, -2.0 * i / hs)) for i in range(hs // 2)] for t in range(seq)], dtype=np.float32)
    with open(os.path.join(DIR, "model.bin"), "wb") as out:
        out.write(struct.pack("<7i", d, f, layers, heads, kv, -vocab, seq))
        for group in ([emb], att_norm, wq, wk, wv, wo, ffn_norm, w1, w2, w3, [final], [cos], [sin], [cls]):
            for a in group:
                out.write(np.ascontiguousarray(a, dtype="<f4").tobytes())

    f64 = lambda a: a.astype(np.float64)
    x = f64(emb)[IDS]                                           # [T, D]
    t = len(IDS)
    pos = np.arange(t)[:, None]
    freq = np.array([math.pow(10000.0, -(2 * j) / hs) for j in range(hs // 2)])
    ang = pos * freq                                            # [T, hs/2]
    c, s = np.cos(ang), np.sin(ang)

    def rope_interleaved(v, n):
        v = v.reshape(t, n, hs // 2, 2)
        a, b = v[..., 0], v[..., 1]
        return np.stack([a * c[:, None, :] - b * s[:, None, :], a * s[:, None, :] + b * c[:, None, :]], axis=-1).reshape(t, n, hs)

    for l in range(layers):
        h = rmsnorm(x, f64(att_norm[l]), 1e-5)
        q = rope_interleaved(h @ f64(wq[l]).T, heads)
        k = rope_interleaved(h @ f64(wk[l]).T, kv)
        v = (h @ f64(wv[l]).T).reshape(t, kv, hs)
        a = causal_attention(q, k, v, heads, kv).reshape(t, d)
        x = x + a @ f64(wo[l]).T
        h = rmsnorm(x, f64(ffn_norm[l]), 1e-5)
        x = x + (silu(h @ f64(w1[l]).T) * (h @ f64(w3[l]).T)) @ f64(w2[l]).T
    logits = rmsnorm(x, f64(final), 1e-5) @ f64(cls).T
    np.save(os.path.join(DIR, "logits_llama2c.npy"), logits)
    print("wrote model.bin and logits_llama2c.npy", logits.shape, "max |logit| %.3f" % np.abs(logits).max())


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack_from("<Q", data, 0)[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, v in header.items():
        if name == "__metadata__":
            continue
        assert v["dtype"] == "F32", v
        a, b = v["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + a:8 + n + b], dtype="<f4").reshape(v["shape"]).astype(np.float64)
    return out


def hf_logits(w, cfg, ids):
    """The logits of ids at every position for LlamaForCausalLM's tensors w (float64, by name) and
    config.json's fields, with transformers' conventions; lm_head is the embedding when tied."""
    d, heads, kv, layers = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["num_hidden_layers"]
    hd, eps, theta = cfg.get("head_dim", d // heads), cfg["rms_norm_eps"], cfg["rope_theta"]
    t = len(ids)
    inv = np.array([1.0 / theta ** (2 * i / hd) for i in range(hd // 2)])
    ang = np.arange(t)[:, None] * inv                           # [T, hd/2]
    emb = np.concatenate([ang, ang], axis=-1)                   # transformers: cat(freqs, freqs)
    cos, sin = np.cos(emb)[:, None, :], np.sin(emb)[:, None, :]

    def rotate_half(v):
        return np.concatenate([-v[..., hd // 2:], v[..., :hd // 2]], axis=-1)

    x = w["model.embed_tokens.weight"][ids]
    for l in range(layers):
        p = "model.layers.%d." % l
        h = rmsnorm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(t, heads, hd)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(t, kv, hd)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(t, kv, hd)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = causal_attention(q, k, v, heads, kv).reshape(t, heads * hd)
        x = x + a @ w[p + "self_attn.o_proj.weight"].T
        h = rmsnorm(x, w[p + "post_attention_layernorm.weight"], eps)
        x = x + (silu(h @ w[p + "mlp.gate_proj.weight"].T) * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]
    return rmsnorm(x, w["model.norm.weight"], eps) @ head.T


def hf():
    cfg = json.load(open(os.path.join(DIR, "hf", "config.json")))
    w = read_safetensors(os.path.join(DIR, "hf", "model.safetensors"))
    assert cfg["architectures"] == ["LlamaForCausalLM"] and not cfg["tie_word_embeddings"]
    logits = hf_logits(w, cfg, IDS)
    np.save(os.path.join(DIR, "logits_hf.npy"), logits)
    print("wrote logits_hf.npy", logits.shape)


if __name__ == "__main__":
    {"llama2c": llama2c, "hf": hf}[sys.argv[1]]()
