#!/usr/bin/python3
"""PyTorch reference fixtures for the transformer vocabulary (issue 5), in F64.

Run from the repository root (torch imports only under Debian's python3):

    /usr/bin/python3 scripts/reference_vocab.py

Writes src/test/resources/fixtures/vocab_<op>_f64.json for the programs examples/vocab/<op>.kina
(rmsnorm, layernorm, gelu, swiglu, rope, attention, attention_start), in the fixture format of
reference_ad.py; "program" names the example. Each op is written here with PyTorch's own
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
    allowed = torch.zeros(t, length, dtype=torch.bool)
    for r in range(t):
        last = start + r
        lo = max(0, last - window + 1) if window else (last // chunk * chunk if chunk else 0)
        for j in range(lo, min(last, length - 1) + 1):
            allowed[r, j] = True
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


def main():
    rmsnorm()
    layernorm()
    gelu()
    swiglu()
    rope()
    attention()
    attention_start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
