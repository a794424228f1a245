#!/usr/bin/python3
"""PyTorch reference fixtures for the transformer vocabulary, in F64.

Run from the repository root (torch imports only under Debian's python3):

    /usr/bin/python3 scripts/reference_vocab.py

Writes src/test/resources/fixtures/vocab_<op>_f64.json for the programs examples/vocab/<op>.kina
(rmsnorm, layernorm, gelu, swiglu, rope, attention, attention_start, and slice, pad and concat in
qkv_split, token_shift and concat), in the fixture format of
reference_ad.py; "program" names the example. The IR-internal attention_qk / attention_pk /
attention_pq (attention's adjoint products, no surface form) are written as
vocab_attention_<form>[_chunk]_f64.json with "program" the instruction as kina prints it. Each op is written here with PyTorch's own
operations (the formula is in the function); gradients are those of out.sum(), the reverseMode
seed of ones. Inputs are uniform in [-1, 1) from a seeded torch.Generator (rmsnorm/layernorm
weights in [0.5, 1.5)); the rope tables are cos/sin of p · 10000^(-2i/R).
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_ad import grads, uniform, write_fixture  # noqa: E402

D = "F64"
F64 = torch.float64


def fixture(op, inputs, outputs):
    write_fixture(f"vocab_{op}", D, inputs, outputs, extra={"program": f"examples/vocab/{op}.kina"})


def param(gen, shape, lo=-1.0, hi=1.0):
    x = torch.rand(shape, generator=gen, dtype=F64) * (hi - lo) + lo
    return x.requires_grad_()


def rmsnorm():
    # u = x + r;  y = u * rsqrt(mean(u^2, last axis) + eps) * w
    gen = torch.Generator().manual_seed(501)
    x, r = param(gen, (2, 3, 8)), param(gen, (2, 3, 8))
    w = param(gen, (8,), 0.5, 1.5)
    eps = 1e-5
    u = x + r
    y = u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + eps) * w
    g_x, g_w, g_r = grads(y, [x, w, r])
    assert torch.equal(g_x, g_r)
    fixture("rmsnorm", {"x": (x, D), "w": (w, D), "r": (r, D)},
            [("y", y, D), ("g_x", g_x, D), ("g_w", g_w, D), ("g_r", g_r, D)])


def layernorm():
    # y = F.layer_norm(x, [D], w, b, eps) = (x - mean) / sqrt(biased var + eps) * w + b
    gen = torch.Generator().manual_seed(502)
    x = param(gen, (2, 3, 8))
    w, b = param(gen, (8,), 0.5, 1.5), param(gen, (8,))
    y = F.layer_norm(x, (8,), w, b, 1e-5)
    mu = x.mean(-1, keepdim=True)
    alt = (x - mu) / torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + 1e-5) * w + b
    assert torch.allclose(y, alt, rtol=0, atol=1e-14)
    g_x, g_w, g_b = grads(y, [x, w, b])
    fixture("layernorm", {"x": (x, D), "w": (w, D), "b": (b, D)},
            [("y", y, D), ("g_x", g_x, D), ("g_w", g_w, D), ("g_b", g_b, D)])


def gelu():
    # y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  == F.gelu(x, approximate="tanh")
    gen = torch.Generator().manual_seed(503)
    x = param(gen, (3, 5), -3.0, 3.0)
    y = F.gelu(x, approximate="tanh")
    alt = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    assert torch.allclose(y, alt, rtol=0, atol=1e-15)
    (g_x,) = grads(y, [x])
    fixture("gelu", {"x": (x, D)}, [("y", y, D), ("g_x", g_x, D)])


def swiglu():
    # y = silu(g) * u,  silu(g) = g * sigmoid(g)
    gen = torch.Generator().manual_seed(504)
    g, u = param(gen, (3, 6), -3.0, 3.0), param(gen, (3, 6))
    y = F.silu(g) * u
    g_g, g_u = grads(y, [g, u])
    fixture("swiglu", {"g": (g, D), "u": (u, D)}, [("y", y, D), ("g_g", g_g, D), ("g_u", g_u, D)])


def rope_tables(length, rotary):
    inv = 1.0 / (10000.0 ** (torch.arange(0, rotary, 2, dtype=F64) / rotary))   # [R/2]
    theta = torch.arange(length, dtype=F64)[:, None] * inv[None, :]             # [L, R/2]
    return torch.cos(theta), torch.sin(theta)


def rope():
    # x [1, T, H*hd] viewed [1, T, H, hd]; the first R dims of each head rotate, half-split
    # ("rotate_half", NeoX/Qwen): y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin, x1 = dims [0, R/2),
    # x2 = dims [R/2, R); row t uses table row start + t; dims [R, hd) pass through.
    gen = torch.Generator().manual_seed(505)
    t, h, hd, rot, start = 4, 2, 6, 4, 1
    x = param(gen, (1, t, h * hd))
    cos, sin = rope_tables(6, rot)
    xv = x.view(1, t, h, hd)
    x1, x2, rest = xv[..., : rot // 2], xv[..., rot // 2: rot], xv[..., rot:]
    c = cos[start: start + t][None, :, None, :]
    s = sin[start: start + t][None, :, None, :]
    y = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s, rest], dim=-1).reshape(1, t, h * hd)
    (g_x,) = grads(y, [x])
    fixture("rope", {"x": (x, D), "cos": (cos, D), "sin": (sin, D)}, [("y", y, D), ("g_x", g_x, D)])


def attended(t, length, window=None, chunk=None, start=0):
    """[T, L] bool: row r attends j in [lo, min(start + r, L - 1)], lo = 0, max(0, start + r - W + 1)
    with a window W, or (start + r) // C * C with a chunk C."""
    allowed = torch.zeros(t, length, dtype=torch.bool)
    for r in range(t):
        last = start + r
        lo = max(0, last - window + 1) if window else (last // chunk * chunk if chunk else 0)
        for j in range(lo, min(last, length - 1) + 1):
            allowed[r, j] = True
    return allowed


def attention_ref(q, k, v, sinks, heads, kv, scale=None, softcap=None, window=None, chunk=None, start=0):
    """Causal GQA attention. q [B, T, H*hd], k, v [B, L, KV*hd]. Query head h reads kv head
    h // (H/KV) (repeat_interleave). Row r attends j in [lo, min(start + r, L - 1)], lo = 0,
    max(0, start + r - W + 1) with a window W, or (start + r) // C * C with a chunk C.
    s = alpha q.k (alpha = scale or 1/sqrt(hd)); s = C tanh(s / C) with a softcap; the softmax
    runs over the attended scores and, with sinks, the head's sink logit (which carries no value)."""
    b, t, _ = q.shape
    length = k.shape[1]
    hd = q.shape[2] // heads
    qh = q.view(b, t, heads, hd).transpose(1, 2)
    kh = k.view(b, length, kv, hd).transpose(1, 2).repeat_interleave(heads // kv, dim=1)
    vh = v.view(b, length, kv, hd).transpose(1, 2).repeat_interleave(heads // kv, dim=1)
    alpha = scale if scale is not None else 1.0 / math.sqrt(hd)
    s = (qh @ kh.transpose(-2, -1)) * alpha
    if softcap is not None:
        s = softcap * torch.tanh(s / softcap)
    allowed = attended(t, length, window, chunk, start)
    s = s.masked_fill(~allowed, float("-inf"))
    if sinks is not None:
        col = sinks.view(1, heads, 1, 1).expand(b, heads, t, 1)
        p = torch.softmax(torch.cat([s, col], dim=-1), dim=-1)[..., :length]
    else:
        p = torch.softmax(s, dim=-1)
    return (p @ vh).transpose(1, 2).reshape(b, t, heads * hd)


def attention():
    gen = torch.Generator().manual_seed(506)
    q, k, v = param(gen, (1, 5, 8), -1.5, 1.5), param(gen, (1, 5, 4), -1.5, 1.5), param(gen, (1, 5, 4))
    sinks = param(gen, (4,))
    y = attention_ref(q, k, v, sinks, heads=4, kv=2, softcap=2.0, window=3)
    g = grads(y, [q, k, v, sinks])
    fixture("attention", {"q": (q, D), "k": (k, D), "v": (v, D), "sinks": (sinks, D)},
            [("y", y, D), ("g_q", g[0], D), ("g_k", g[1], D), ("g_v", g[2], D), ("g_sinks", g[3], D)])


def attention_start():
    gen = torch.Generator().manual_seed(507)
    q, k, v = param(gen, (2, 3, 6), -1.5, 1.5), param(gen, (2, 5, 3), -1.5, 1.5), param(gen, (2, 5, 3))
    y = attention_ref(q, k, v, None, heads=2, kv=1, scale=0.5, chunk=2, start=2)
    g = grads(y, [q, k, v])
    fixture("attention_start", {"q": (q, D), "k": (k, D), "v": (v, D)},
            [("y", y, D), ("g_q", g[0], D), ("g_k", g[1], D), ("g_v", g[2], D)])


def heads_view(x, heads):
    """x [*lead, N, heads*hd] -> [B, heads, N, hd] with B the product of lead."""
    n, w = x.shape[-2], x.shape[-1]
    return x.reshape(-1, n, heads, w // heads).transpose(1, 2)


def attention_product_ref(form, a, b, heads, kv, window=None, chunk=None, start=0):
    """attention's adjoint products over attended pairs (Instr.AttentionProduct), in PyTorch terms.
    Head h reads kv head h // (H/KV) (repeat_interleave); M = attended(T, L) as attention masks.
      qk: a [*lead, T, H*hd], b [*lead, L, KV*hd] -> [*lead, H, T, L]: (a_h @ b_kv(h)^T), 0 where not M;
      pk: a [*lead, H, T, L], b [*lead, L, KV*hd] -> [*lead, T, H*hd]: (a_h * M) @ b_kv(h);
      pq: a [*lead, H, T, L], b [*lead, T, H*hd] -> [*lead, L, KV*hd]: sum over the heads h of kv
          head c of (a_h * M)^T @ b_h."""
    g = heads // kv
    if form == "qk":
        lead, t, length = a.shape[:-2], a.shape[-2], b.shape[-2]
        qh = heads_view(a, heads)
        kh = heads_view(b, kv).repeat_interleave(g, dim=1)
        s = qh @ kh.transpose(-2, -1)
        mask = attended(t, length, window, chunk, start)
        return torch.where(mask, s, torch.zeros((), dtype=s.dtype)).reshape(*lead, heads, t, length)
    lead, t, length = a.shape[:-3], a.shape[-2], a.shape[-1]
    mask = attended(t, length, window, chunk, start)
    p = torch.where(mask, a, torch.zeros((), dtype=a.dtype)).reshape(-1, heads, t, length)
    if form == "pk":
        vh = heads_view(b, kv).repeat_interleave(g, dim=1)                    # [B, H, L, hd]
        y = p @ vh                                                           # [B, H, T, hd]
        return y.transpose(1, 2).reshape(*lead, t, b.shape[-1] // kv * heads)
    assert form == "pq"
    xh = heads_view(b, heads)                                                # [B, H, T, hd]
    y = p.transpose(-2, -1) @ xh                                             # [B, H, L, hd]
    hd = xh.shape[-1]
    y = y.reshape(-1, kv, g, length, hd).sum(2)                              # [B, KV, L, hd]
    return y.transpose(1, 2).reshape(*lead, length, kv * hd)


def attention_products():
    """The three forms on two masks each, written vocab_attention_{qk,pk,pq}[_chunk]_f64.json with
    "program" the instruction as kina's printer shows it (it has no surface form; the test builds it):
    H = 4 on KV = 2, hd 2, T = L = 5, batch [2], window 2 from start 2 (row 4 attends nothing); and
    H = 2 on KV = 1, hd 3, T = 3, L = 4, batch [2, 1], chunk 2 from start 1."""
    masks = [
        ("", dict(lead=(2,), heads=4, kv=2, hd=2, t=5, length=5, window=2, chunk=None, start=2)),
        ("_chunk", dict(lead=(2, 1), heads=2, kv=1, hd=3, t=3, length=4, window=None, chunk=2, start=1)),
    ]
    seed = 511
    for form in ("qk", "pk", "pq"):
        for suffix, m in masks:
            gen = torch.Generator().manual_seed(seed)
            seed += 1
            lead, h, kv, hd, t, length = m["lead"], m["heads"], m["kv"], m["hd"], m["t"], m["length"]
            rows, keys, probs = (*lead, t, h * hd), (*lead, length, kv * hd), (*lead, h, t, length)
            sa = rows if form == "qk" else probs
            sb = rows if form == "pq" else keys
            a, b = param(gen, sa), param(gen, sb)
            y = attention_product_ref(form, a, b, h, kv, m["window"], m["chunk"], m["start"])
            g_a, g_b = grads(y, [a, b])
            opts = f"heads={h}, kv_heads={kv}"
            opts += f", window={m['window']}" if m["window"] else ""
            opts += f", chunk={m['chunk']}" if m["chunk"] else ""
            opts += f", start={m['start']}" if m["start"] else ""
            name = f"attention_{form}{suffix}"
            write_fixture(f"vocab_{name}", D, {"a": (a, D), "b": (b, D)},
                          [("y", y, D), ("g_a", g_a, D), ("g_b", g_b, D)],
                          extra={"program": f"%attention_{form}(a, b, {opts})"})


def qkv_split():
    # qkv = x @ w; q, k, v = qkv[:, 0:3], qkv[:, 3:6], qkv[:, 6:9]; y = tanh(q * k) + v
    gen = torch.Generator().manual_seed(511)
    x, w = param(gen, (4, 6)), param(gen, (6, 9))
    q, k, v = (x @ w).split(3, dim=1)
    y = torch.tanh(q * k) + v
    g_x, g_w = grads(y, [x, w])
    fixture("qkv_split", {"x": (x, D), "w": (w, D)}, [("y", y, D), ("g_x", g_x, D), ("g_w", g_w, D)])


def token_shift():
    # shifted = F.pad(x[:, :-1], one zero row in front along time); y = x + mix * (shifted - x)
    gen = torch.Generator().manual_seed(512)
    x, mix = param(gen, (2, 5, 3)), param(gen, (3,))
    shifted = F.pad(x[:, :-1, :], (0, 0, 1, 0))
    y = x + mix * (shifted - x)
    g_x, g_mix = grads(y, [x, mix])
    fixture("token_shift", {"x": (x, D), "mix": (mix, D)}, [("y", y, D), ("g_x", g_x, D), ("g_mix", g_mix, D)])


def concat():
    # y = torch.cat([tanh(x), sigmoid(u)], dim=1) @ w
    gen = torch.Generator().manual_seed(513)
    x, u, w = param(gen, (4, 3)), param(gen, (4, 2)), param(gen, (5, 2))
    y = torch.cat([torch.tanh(x), torch.sigmoid(u)], dim=1) @ w
    g_x, g_u, g_w = grads(y, [x, u, w])
    fixture("concat", {"x": (x, D), "u": (u, D), "w": (w, D)},
            [("y", y, D), ("g_x", g_x, D), ("g_u", g_u, D), ("g_w", g_w, D)])


def main():
    rmsnorm()
    layernorm()
    gelu()
    swiglu()
    rope()
    attention()
    attention_start()
    attention_products()
    qkv_split()
    token_shift()
    concat()
    return 0


if __name__ == "__main__":
    sys.exit(main())
