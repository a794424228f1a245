#!/usr/bin/python3
"""PyTorch reference fixtures for StoryLM-0: the SGD step on Σ logits and the composed train step.

Run from the repository root (torch imports only under Debian's python3):

    apt-get install -y python3-torch libopenblas0-pthread
    /usr/bin/python3 scripts/reference_storylm0.py

The model is written plainly in PyTorch's own terms (F.embedding, x @ W, view/transpose head
split, implicit broadcasting of mask and scale, torch.softmax, F.cross_entropy), with the
semantics of scripts/README.md ("Model semantics"): vocab 8, d_model 4, sequence 4, 2 heads of dim 2, one attention
layer, no norm / residual / MLP; matrices stored [in, out] and applied as x @ W; additive mask
[1,1,4,4] with 0 on and below the diagonal and -1e9 above; scale = 1/sqrt(2) stored [1,1,1,1].
Weights: uniform [-1, 1) from a seeded torch.Generator (drawn in float64, rounded to float32 for
the F32 fixtures, which then compute in float32). ids [[3, 1, 3, 7]], targets [[1, 3, 7, 0]],
lr 0.1 (a [1, 1] tensor; float32(0.1) in F32).

Writes to src/test/resources/fixtures/:
  storylm0_ad_step_<f64|f32>.json     examples/storylm0_ad_step.kina: outputs [new_emb], where
      new_emb = emb - lr * d(sum logits)/d emb. The extra key "handle" lists the handle tuple
      (logits, g_emb, g_mask, g_scale, g_wq, g_wk, g_wv, g_wo, g_lm): the logits and the
      gradients of sum(logits) (the reverseMode seed of ones) w.r.t. each floating parameter.
  storylm0_train_step_<f64|f32>.json  examples/storylm0_train_step.kina: outputs
      (new_emb, new_mask, new_scale, new_wq, new_wk, new_wv, new_wo, new_lm, loss), loss the
      mean next-token NLL ([1, 1]) and new_p = p - lr * d loss / d p (SGD). The extra key
      "handle" lists (loss, g_emb, ..., g_lm).
Format as in scripts/reference_ad.py.
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_ad import TORCH_DTYPE, entry, uniform, write_fixture  # noqa: E402

VOCAB, D, T, H = 8, 4, 4, 2
HD = D // H
IDS = [[3, 1, 3, 7]]
TARGETS = [[1, 3, 7, 0]]
LR = 0.1
FLOAT_PARAMS = ["emb", "mask", "scale", "wq", "wk", "wv", "wo", "lm_head"]
GRAD_NAMES = ["g_emb", "g_mask", "g_scale", "g_wq", "g_wk", "g_wv", "g_wo", "g_lm"]
NEW_NAMES = ["new_emb", "new_mask", "new_scale", "new_wq", "new_wk", "new_wv", "new_wo", "new_lm"]


def make_inputs(dtype):
    """The StoryLM-0 inputs in parameter order (token_ids first), plus targets and lr."""
    td = TORCH_DTYPE[dtype]
    gen = torch.Generator().manual_seed(1400)
    emb = uniform(gen, (VOCAB, D), dtype)
    wq = uniform(gen, (D, D), dtype)
    wk = uniform(gen, (D, D), dtype)
    wv = uniform(gen, (D, D), dtype)
    wo = uniform(gen, (D, D), dtype)
    lm_head = uniform(gen, (D, VOCAB), dtype)
    mask = torch.triu(torch.full((T, T), -1e9, dtype=torch.float64), diagonal=1)
    mask = mask.to(td).reshape(1, 1, T, T)
    scale = torch.tensor(1.0 / math.sqrt(HD), dtype=torch.float64).to(td).reshape(1, 1, 1, 1)
    return {
        "token_ids": torch.tensor(IDS, dtype=torch.int64),
        "targets": torch.tensor(TARGETS, dtype=torch.int64),
        "emb": emb, "mask": mask, "scale": scale,
        "wq": wq, "wk": wk, "wv": wv, "wo": wo, "lm_head": lm_head,
        "lr": torch.tensor([[LR]], dtype=torch.float64).to(td),
    }


def storylm0_logits(token_ids, emb, mask, scale, wq, wk, wv, wo, lm_head):
    """The decoder in plain PyTorch: [1, 4] ids -> [1, 4, 8] logits."""
    x = F.embedding(token_ids, emb)                          # [B, T, D]
    B, Tn, C = x.shape
    q = (x @ wq).view(B, Tn, H, HD).transpose(1, 2)          # [B, H, T, hd]
    k = (x @ wk).view(B, Tn, H, HD).transpose(1, 2)
    v = (x @ wv).view(B, Tn, H, HD).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) * scale + mask           # [B, H, T, T], implicit broadcast
    att = torch.softmax(att, dim=-1)
    y = (att @ v).transpose(1, 2).contiguous().view(B, Tn, C)
    return (y @ wo) @ lm_head                                # [B, T, V]


def storylm0_logits_let_per_op(token_ids, emb, mask, scale, wq, wk, wv, wo, lm_head):
    """The same forward transcribed let by let from examples/storylm0_ad_step.kina
    (explicit reshapes, permutes and same-rank broadcasts); used only as a cross-check."""
    x = emb[token_ids]
    q = x @ wq.reshape(1, 4, 4)
    k = x @ wk.reshape(1, 4, 4)
    v = x @ wv.reshape(1, 4, 4)
    qh = q.reshape(1, 4, 2, 2).permute(0, 2, 1, 3)
    kt = k.reshape(1, 4, 2, 2).permute(0, 2, 1, 3).permute(0, 1, 3, 2)
    vh = v.reshape(1, 4, 2, 2).permute(0, 2, 1, 3)
    s = qh @ kt
    ss = s * scale.expand(1, 2, 4, 4)
    sm = ss + mask.expand(1, 2, 4, 4)
    p = torch.softmax(sm, dim=3)
    m = (p @ vh).permute(0, 2, 1, 3).reshape(1, 4, 4)
    o = m @ wo.reshape(1, 4, 4)
    return o @ lm_head.reshape(1, 4, 8)


def leaves(inp):
    return {n: inp[n].clone().requires_grad_() for n in FLOAT_PARAMS}


def check_common(dtype, inp, w, grads):
    # rows of emb whose id does not occur get exactly zero gradient (the ScatterAdd property)
    g_emb = grads[0]
    for r in range(VOCAB):
        if r not in IDS[0]:
            assert torch.equal(g_emb[r], torch.zeros(D, dtype=g_emb.dtype)), r
    # masked scores (above the diagonal) get exactly zero gradient
    g_mask = grads[1]
    above = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1).reshape(1, 1, T, T)
    assert torch.equal(g_mask[above], torch.zeros_like(g_mask[above]))
    # the let-per-op transcription of the .kina forward agrees with the plain model
    args = [inp["token_ids"]] + [w[n].detach() for n in FLOAT_PARAMS]
    a = storylm0_logits(*args)
    b = storylm0_logits_let_per_op(*args)
    tol = 1e-13 if dtype == "F64" else 1e-5
    assert torch.allclose(a, b, rtol=tol, atol=tol), (a - b).abs().max()


def fixture_inputs(inp, dtype, names):
    return {n: (inp[n], "I64" if inp[n].dtype == torch.int64 else dtype) for n in names}


def ad_step(dtype):
    """The StoryLM-0 step: seed ones on the logits, SGD on emb only."""
    inp = make_inputs(dtype)
    w = leaves(inp)
    logits = storylm0_logits(inp["token_ids"], *[w[n] for n in FLOAT_PARAMS])
    grads = torch.autograd.grad(logits.sum(), [w[n] for n in FLOAT_PARAMS])
    check_common(dtype, inp, w, grads)
    with torch.no_grad():
        new_emb = inp["emb"] - inp["lr"] * grads[0]
    names = ["token_ids"] + FLOAT_PARAMS + ["lr"]
    handle = [("logits", logits, dtype)] + [(g, t, dtype) for g, t in zip(GRAD_NAMES, grads)]
    write_fixture("storylm0_ad_step", dtype, fixture_inputs(inp, dtype, names),
                  [("new_emb", new_emb, dtype)],
                  extra={"handle": [dict(name=n, **entry(t, d)) for n, t, d in handle]})


def train_step(dtype):
    """The composed train step: mean NLL of the decoder, SGD on all 8 floating parameters."""
    inp = make_inputs(dtype)
    w = leaves(inp)
    logits = storylm0_logits(inp["token_ids"], *[w[n] for n in FLOAT_PARAMS])
    loss = F.cross_entropy(logits.view(-1, VOCAB), inp["targets"].view(-1), reduction="mean")
    grads = torch.autograd.grad(loss, [w[n] for n in FLOAT_PARAMS])
    check_common(dtype, inp, w, grads)
    # the loss as the .kina program spells it: -take_along_axis(log_softmax), summed, * 0.25
    with torch.no_grad():
        lp = torch.log_softmax(logits, dim=2)
        picked = torch.gather(lp, 2, inp["targets"].unsqueeze(2)).squeeze(2)
        alt = (-picked).sum(dim=1, keepdim=True) * 0.25
        tol = 1e-14 if dtype == "F64" else 1e-6
        assert torch.allclose(alt.reshape(()), loss, rtol=tol, atol=tol)
        loss11 = loss.detach().reshape(1, 1)
        new = [inp[n] - inp["lr"] * g for n, g in zip(FLOAT_PARAMS, grads)]
    names = ["token_ids", "targets"] + FLOAT_PARAMS + ["lr"]
    outputs = [(n, t, dtype) for n, t in zip(NEW_NAMES, new)] + [("loss", loss11, dtype)]
    handle = [("loss", loss11, dtype)] + [(g, t, dtype) for g, t in zip(GRAD_NAMES, grads)]
    write_fixture("storylm0_train_step", dtype, fixture_inputs(inp, dtype, names), outputs,
                  extra={"handle": [dict(name=n, **entry(t, d)) for n, t, d in handle]})


def main():
    for dtype in ("F64", "F32"):
        ad_step(dtype)
        train_step(dtype)
    return 0


if __name__ == "__main__":
    sys.exit(main())
