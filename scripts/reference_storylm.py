#!/usr/bin/python3
"""PyTorch reference for ONE StoryLM 'tiny' training step (kina.model.StoryLm.trainStep with AdamW), in F64.

Run from any directory (torch imports only under Debian's python3):

    apt-get install -y python3-torch libopenblas0-pthread
    /usr/bin/python3 scripts/reference_storylm.py

Writes src/test/resources/fixtures/storylm_tiny_step_f64.safetensors (written by hand: 8-byte
little-endian header length, JSON header padded with spaces to a multiple of 8, raw little-endian
data). It holds the inputs of the step under kina's input names (ids, targets, cos, sin, each
weight, m_<w>, v_<w>, lr, bc1, bc2) and the expected results under "out.": out.loss, out.grad_norm
([1, 1]), out.g_<w> (the unclipped gradient of the mean NLL), out.new_<w>, out.new_m_<w>,
out.new_v_<w>. Hyperparameters and sizes are in __metadata__ (strings).

The model is written in PyTorch's own terms, float64 throughout:
  x0 = F.embedding(ids, emb)                                     [B, T, D]
  per layer l:
    h = rmsnorm(x, attn_norm)   (x * rsqrt(mean(x^2, -1) + eps) * w)
    q, k, v = h2 @ wq, h2 @ wk, h2 @ wv  on the flattened [B*T, D] rows, reshaped [B, T, H*hd]
    q, k = rope(q), rope(k)     (per head, half-split "rotate_half" pairs over the head's hd dims)
    att = softmax(q_h k_h^T / sqrt(hd) + causal mask) v_h, heads concatenated
    x = x + att @ wo
    m = rmsnorm(x, mlp_norm); x = x + (silu(m @ w_gate) * (m @ w_up)) @ w_down
  logits = rmsnorm(x, final_norm) @ lm_head                      [B*T, V]
  loss = F.cross_entropy(logits, targets)  (mean over B*T)
Then, mirroring kina.model.Optimizer.update: grad_norm = sqrt(sum of every g^2), clip_scale =
clip / max(grad_norm, clip), gc = g * clip_scale; AdamW new_m = m*b1 + gc*(1-b1), new_v =
v*b2 + gc*gc*(1-b2), mhat = new_m*bc1, vhat = new_v*bc2, upd = mhat / (sqrt(vhat) + eps)
(+ w*weight_decay for rank-2 weights), new_w = w - lr*upd.
"""
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True

DT = torch.float64
# Config 'tiny' (kina.model.Config.NAMED)
VOCAB, D, HEADS, KV_HEADS, SEQ, LAYERS, HIDDEN = 256, 64, 2, 2, 64, 2, 172
HD = D // HEADS
EPS, ROPE_BASE = 1e-5, 10000.0
BATCH = 2
# AdamW hyperparameters (kina.model.Optimizer.AdamW) and the step scalars
BETA1, BETA2, ADAM_EPS, WEIGHT_DECAY, CLIP = 0.9, 0.95, 1e-8, 0.1, 1.0
STEP_T, LR = 3, 0.01
SEED = 2024

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "test", "resources", "fixtures",
                   "storylm_tiny_step_f64.safetensors")


def weight_shapes():
    """StoryLm.weights(tiny): (name, shape) in parameter order."""
    w = [("emb", (VOCAB, D))]
    for l in range(LAYERS):
        p = f"l{l}_"
        w += [(p + "attn_norm", (D,)), (p + "wq", (D, HEADS * HD)), (p + "wk", (D, KV_HEADS * HD)),
              (p + "wv", (D, KV_HEADS * HD)), (p + "wo", (HEADS * HD, D)),
              (p + "mlp_norm", (D,)), (p + "w_gate", (D, HIDDEN)), (p + "w_up", (D, HIDDEN)),
              (p + "w_down", (HIDDEN, D))]
    w += [("final_norm", (D,)), ("lm_head", (D, VOCAB))]
    return w


WEIGHTS = weight_shapes()


def rope_tables():
    """cos, sin [T, hd/2]: theta(t, i) = t * base^(-2i/hd), in float64."""
    t = torch.arange(SEQ, dtype=DT).unsqueeze(1)
    i = torch.arange(HD // 2, dtype=DT).unsqueeze(0)
    theta = t * torch.pow(torch.tensor(ROPE_BASE, dtype=DT), -2.0 * i / HD)
    return torch.cos(theta), torch.sin(theta)


def rmsnorm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS) * w


def rope(x, cos, sin, heads):
    """x [B, T, heads*hd]; per head, y_i = x_i cos - x_{i+hd/2} sin, y_{i+hd/2} = x_{i+hd/2} cos + x_i sin."""
    b, t, _ = x.shape
    xh = x.view(b, t, heads, HD)
    x1, x2 = xh[..., : HD // 2], xh[..., HD // 2:]
    c, s = cos.view(1, t, 1, HD // 2), sin.view(1, t, 1, HD // 2)
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).reshape(b, t, heads * HD)


def attention(q, k, v, heads, kv_heads):
    """Causal multi-head attention, scale 1/sqrt(hd); q [B, T, H*hd], k, v [B, T, KV*hd]."""
    b, t, _ = q.shape
    qh = q.view(b, t, heads, HD).transpose(1, 2)
    kh = k.view(b, t, kv_heads, HD).transpose(1, 2).repeat_interleave(heads // kv_heads, dim=1)
    vh = v.view(b, t, kv_heads, HD).transpose(1, 2).repeat_interleave(heads // kv_heads, dim=1)
    scores = torch.matmul(qh, kh.transpose(-2, -1)) * (1.0 / math.sqrt(HD))
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    return torch.matmul(p, vh).transpose(1, 2).reshape(b, t, heads * HD)


def forward_loss(ids, targets, cos, sin, w):
    """Mean next-token NLL ([] scalar) of the StoryLM forward."""
    b, t = ids.shape
    n = b * t
    x = F.embedding(ids, w["emb"])
    for l in range(LAYERS):
        p = f"l{l}_"
        h2 = rmsnorm(x, w[p + "attn_norm"]).reshape(n, D)
        q = torch.matmul(h2, w[p + "wq"]).reshape(b, t, HEADS * HD)
        k = torch.matmul(h2, w[p + "wk"]).reshape(b, t, KV_HEADS * HD)
        v = torch.matmul(h2, w[p + "wv"]).reshape(b, t, KV_HEADS * HD)
        att = attention(rope(q, cos, sin, HEADS), rope(k, cos, sin, KV_HEADS), v, HEADS, KV_HEADS)
        x = x + torch.matmul(att.reshape(n, HEADS * HD), w[p + "wo"]).reshape(b, t, D)
        m2 = rmsnorm(x, w[p + "mlp_norm"]).reshape(n, D)
        act = F.silu(torch.matmul(m2, w[p + "w_gate"])) * torch.matmul(m2, w[p + "w_up"])
        x = x + torch.matmul(act, w[p + "w_down"]).reshape(b, t, D)
    logits = torch.matmul(rmsnorm(x, w["final_norm"]).reshape(n, D), w["lm_head"])
    return F.cross_entropy(logits, targets, reduction="mean"), logits


def adamw_step(w, g, m, v, lr, bc1, bc2):
    """Clipping and AdamW in kina.model.Optimizer.update's operation order; returns grad_norm and the new tensors."""
    gsq = None
    for name, shape in WEIGHTS:
        gg = g[name] * g[name]
        ss = gg.sum(dim=1, keepdim=True).sum(dim=0, keepdim=True) if len(shape) == 2 else gg.sum(dim=0, keepdim=True).reshape(1, 1)
        gsq = ss if gsq is None else gsq + ss
    grad_norm = gsq.sqrt()
    clip_c = torch.tensor([[CLIP]], dtype=DT)
    clip_scale = clip_c / torch.maximum(grad_norm, clip_c)
    one_minus_beta1, one_minus_beta2 = 1 - BETA1, 1 - BETA2  # the literals kina prints (double arithmetic)
    new_w, new_m, new_v = {}, {}, {}
    for name, shape in WEIGHTS:
        r = (lambda s: s) if len(shape) == 2 else (lambda s: s.reshape(1))
        gc = g[name] * r(clip_scale).expand(shape)
        nm = m[name] * BETA1 + gc * one_minus_beta1
        nv = v[name] * BETA2 + gc * gc * one_minus_beta2
        mhat = nm * r(bc1).expand(shape)
        vhat = nv * r(bc2).expand(shape)
        upd = mhat / (vhat.sqrt() + ADAM_EPS)
        if len(shape) == 2 and WEIGHT_DECAY > 0:
            upd = upd + w[name] * WEIGHT_DECAY
        new_w[name] = w[name] - r(lr).expand(shape) * upd
        new_m[name], new_v[name] = nm, nv
    return grad_norm, clip_scale, new_w, new_m, new_v


def make_inputs():
    gen = torch.Generator().manual_seed(SEED)
    stream = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=gen, dtype=torch.int64)
    ids = stream[:, :SEQ].contiguous()
    targets = stream[:, 1:].reshape(BATCH * SEQ).contiguous()
    w, m, v = {}, {}, {}
    for name, shape in WEIGHTS:
        z = torch.randn(shape, generator=gen, dtype=DT)
        w[name] = 1.0 + 0.1 * z if len(shape) == 1 else 0.1 * z
    for name, shape in WEIGHTS:
        m[name] = 0.01 * torch.randn(shape, generator=gen, dtype=DT)
    for name, shape in WEIGHTS:
        v[name] = (0.01 * torch.randn(shape, generator=gen, dtype=DT)) ** 2
    return ids, targets, w, m, v


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, tensor F64 or I64); row-major little-endian data, header padded to 8."""
    header, blobs, off = {}, [], 0
    for name, t in tensors:
        t = t.contiguous()
        if t.dtype == torch.float64:
            dt, fmt = "F64", "<%dd"
            vals = [float(x) for x in t.reshape(-1).tolist()]
        elif t.dtype == torch.int64:
            dt, fmt = "I64", "<%dq"
            vals = [int(x) for x in t.reshape(-1).tolist()]
        else:
            raise ValueError(f"{name}: unsupported dtype {t.dtype}")
        data = struct.pack(fmt % len(vals), *vals)
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    header["__metadata__"] = metadata
    hj = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hj += b" " * ((-len(hj)) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for b in blobs:
            f.write(b)


def naive_attention(q, k, v, heads):
    """Row-by-row transcription of the attention semantics (check only)."""
    b, t, _ = q.shape
    out = torch.zeros_like(q)
    for bi in range(b):
        for h in range(heads):
            cols = slice(h * HD, (h + 1) * HD)
            for r in range(t):
                s = torch.stack([torch.dot(q[bi, r, cols], k[bi, j, cols]) / math.sqrt(HD) for j in range(r + 1)])
                p = torch.exp(s - s.max())
                p = p / p.sum()
                out[bi, r, cols] = (p.unsqueeze(1) * v[bi, : r + 1, cols]).sum(0)
    return out


def torch_adamw_check(w, g, m, v, clip_scale, new_w, new_m, new_v):
    """torch.optim.AdamW (state at step t-1, fed the clipped gradients) agrees with adamw_step."""
    ps = {n: w[n].clone().requires_grad_(True) for n, _ in WEIGHTS}
    groups = [{"params": [ps[n] for n, s in WEIGHTS if len(s) == 2], "weight_decay": WEIGHT_DECAY},
              {"params": [ps[n] for n, s in WEIGHTS if len(s) != 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=LR, betas=(BETA1, BETA2), eps=ADAM_EPS)
    for n, _ in WEIGHTS:
        ps[n].grad = g[n] * clip_scale.item()
        opt.state[ps[n]] = {"step": torch.tensor(float(STEP_T - 1)), "exp_avg": m[n].clone(),
                            "exp_avg_sq": v[n].clone()}
    opt.step()
    worst = 0.0
    for n, _ in WEIGHTS:
        for got, want in ((ps[n].detach(), new_w[n]), (opt.state[ps[n]]["exp_avg"], new_m[n]),
                          (opt.state[ps[n]]["exp_avg_sq"], new_v[n])):
            worst = max(worst, ((got - want).abs().max() / want.abs().max()).item())
    assert worst < 1e-12, worst
    return worst


def sanity_checks(ids, targets, cos, sin, w, g, loss, logits, grad_norm, clip_scale):
    gen = torch.Generator().manual_seed(7)
    # RoPE: the half-split rotation equals complex multiplication of (x_i + i x_{i+hd/2}) by e^{i theta}
    x = torch.randn(BATCH, SEQ, HEADS * HD, generator=gen, dtype=DT)
    xh = x.view(BATCH, SEQ, HEADS, HD)
    z = torch.complex(xh[..., : HD // 2], xh[..., HD // 2:]) * torch.complex(cos, sin).view(1, SEQ, 1, HD // 2)
    assert torch.allclose(rope(x, cos, sin, HEADS), torch.cat([z.real, z.imag], -1).reshape(x.shape), rtol=0, atol=1e-14)
    # attention: batched masked form equals the row-by-row causal softmax
    q, k, v = (torch.randn(BATCH, 8, HEADS * HD, generator=gen, dtype=DT) for _ in range(3))
    assert torch.allclose(attention(q, k, v, HEADS, KV_HEADS), naive_attention(q, k, v, HEADS), rtol=0, atol=1e-13)
    # kina's loss spelling: -(take_along_axis(log_softmax)) summed, times 1/(B*T)
    kl = -(torch.log_softmax(logits, 1).gather(1, targets.unsqueeze(1))).sum() * (1.0 / (BATCH * SEQ))
    assert abs(kl.item() - loss.item()) < 1e-13, (kl.item(), loss.item())
    # finite differences of the loss for a few entries of every weight
    worst = 0.0
    with torch.no_grad():
        for name, shape in WEIGHTS:
            scale = g[name].abs().max().item()
            for _ in range(3):
                idx = tuple(int(torch.randint(0, s, (1,), generator=gen)) for s in shape)
                if name == "emb":  # pick a row that occurs, so the entry has a gradient
                    idx = (int(ids.reshape(-1)[int(torch.randint(0, ids.numel(), (1,), generator=gen))]), idx[1])
                h = 1e-5
                orig = w[name][idx].item()
                w[name][idx] = orig + h
                lp = forward_loss(ids, targets, cos, sin, w)[0].item()
                w[name][idx] = orig - h
                lm = forward_loss(ids, targets, cos, sin, w)[0].item()
                w[name][idx] = orig
                fd = (lp - lm) / (2 * h)
                err = abs(fd - g[name][idx].item()) / scale
                worst = max(worst, err)
                assert err < 1e-6, (name, idx, fd, g[name][idx].item(), scale)
    # emb gradient is exactly zero on rows of ids that do not occur
    unused = torch.ones(VOCAB, dtype=torch.bool)
    unused[ids.reshape(-1)] = False
    assert (g["emb"][unused] == 0).all()
    # clipping binds
    assert grad_norm.item() > CLIP and clip_scale.item() < 1, grad_norm.item()
    return worst


def main():
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    ids, targets, w, m, v = make_inputs()
    cos, sin = rope_tables()
    lr = torch.tensor([[LR]], dtype=DT)
    bc1 = torch.tensor([[1.0 / (1.0 - BETA1 ** STEP_T)]], dtype=DT)
    bc2 = torch.tensor([[1.0 / (1.0 - BETA2 ** STEP_T)]], dtype=DT)

    params = {k: t.clone().requires_grad_(True) for k, t in w.items()}
    loss, logits = forward_loss(ids, targets, cos, sin, params)
    grads = torch.autograd.grad(loss, [params[n] for n, _ in WEIGHTS])
    g = {n: gr.detach() for (n, _), gr in zip(WEIGHTS, grads)}
    grad_norm, clip_scale, new_w, new_m, new_v = adamw_step(w, g, m, v, lr, bc1, bc2)

    worst = sanity_checks(ids, targets, cos, sin, {k: t.clone() for k, t in w.items()}, g, loss.detach(),
                          logits.detach(), grad_norm, clip_scale)

    adam_worst = torch_adamw_check(w, g, m, v, clip_scale, new_w, new_m, new_v)

    tensors = [("ids", ids), ("targets", targets), ("cos", cos), ("sin", sin)]
    tensors += [(n, w[n]) for n, _ in WEIGHTS]
    tensors += [("m_" + n, m[n]) for n, _ in WEIGHTS]
    tensors += [("v_" + n, v[n]) for n, _ in WEIGHTS]
    tensors += [("lr", lr), ("bc1", bc1), ("bc2", bc2)]
    tensors += [("out.loss", loss.detach().reshape(1, 1)), ("out.grad_norm", grad_norm)]
    tensors += [("out.g_" + n, g[n]) for n, _ in WEIGHTS]
    tensors += [("out.new_" + n, new_w[n]) for n, _ in WEIGHTS]
    tensors += [("out.new_m_" + n, new_m[n]) for n, _ in WEIGHTS]
    tensors += [("out.new_v_" + n, new_v[n]) for n, _ in WEIGHTS]
    metadata = {
        "script": "scripts/reference_storylm.py",
        "config": "tiny", "vocab": str(VOCAB), "d_model": str(D), "heads": str(HEADS), "kv_heads": str(KV_HEADS),
        "head_dim": str(HD), "seq": str(SEQ), "layers": str(LAYERS), "mlp_hidden": str(HIDDEN),
        "eps": repr(EPS), "rope_base": repr(ROPE_BASE), "batch": str(BATCH),
        "optimizer": "adamw", "beta1": repr(BETA1), "beta2": repr(BETA2), "adam_eps": repr(ADAM_EPS),
        "weight_decay": repr(WEIGHT_DECAY), "clip": repr(CLIP), "step_t": str(STEP_T), "lr": repr(LR),
        "seed": str(SEED), "torch": torch.__version__,
    }
    write_safetensors(OUT, tensors, metadata)
    print(f"loss {loss.item():.17g}  grad_norm {grad_norm.item():.17g}  clip_scale {clip_scale.item():.17g}")
    print(f"finite differences: worst |fd - ad| / max|g_w| = {worst:.3g}")
    print(f"torch.optim.AdamW on the clipped gradients: worst relative difference {adam_worst:.3g}")
    print(f"wrote {os.path.relpath(OUT)} ({os.path.getsize(OUT)} bytes, {len(tensors)} tensors)")
    print("metadata", json.dumps(metadata))


if __name__ == "__main__":
    main()
