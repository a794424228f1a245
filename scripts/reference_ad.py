#!/usr/bin/python3
"""PyTorch reference fixtures for the isolated reverse-mode examples.

Run from the repository root (torch imports only under Debian's python3):

    apt-get install -y python3-torch libopenblas0-pthread
    /usr/bin/python3 scripts/reference_ad.py

Writes src/test/resources/fixtures/<example>_<f64|f32>.json for ad_reshape, ad_matmul4,
ad_gather and nll_ad. Each example is computed here in PyTorch's own terms (reshape,
torch.matmul, F.embedding, torch.log_softmax + gather) with autograd; the gradients are those
of out.sum(), i.e. the reverseMode seed of ones on the primal result. Inputs come from a
seeded torch.Generator: floats uniform in [-1, 1) (drawn in float64, rounded to float32 for
the F32 fixture, which then computes in float32), I64 ids in range.

Fixture format (one file per example per dtype):
    {"program": "examples/<example>.kina", "dtype": "F64",
     "inputs":  {"<name>": {"dtype": "F64", "shape": [...], "data": [row-major numbers]}, ...},
     "outputs": [{"name": ..., "dtype": ..., "shape": [...], "data": [...]}, ...]}
outputs are in the order of the program's result tuple. Floats are written with round-trip
precision (json.dumps of a Python float); F32 values are the exact doubles of the floats.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "src", "test", "resources", "fixtures")
TORCH_DTYPE = {"F64": torch.float64, "F32": torch.float32}

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)


def uniform(gen, shape, dtype):
    """Uniform [-1, 1) drawn in float64 from gen, then rounded to dtype (kina 'F64'/'F32')."""
    x = torch.rand(shape, generator=gen, dtype=torch.float64) * 2.0 - 1.0
    return x.to(TORCH_DTYPE[dtype])


def entry(t, dtype):
    """JSON entry for a tensor: kina dtype name, shape, flat row-major data."""
    t = t.detach().contiguous()
    if dtype == "I64":
        data = [int(v) for v in t.reshape(-1).tolist()]
    else:
        assert t.dtype == TORCH_DTYPE[dtype], (t.dtype, dtype)
        data = [float(v) for v in t.reshape(-1).tolist()]
    return {"dtype": dtype, "shape": list(t.shape), "data": data}


def output(name, t, dtype):
    e = entry(t, dtype)
    return {"name": name, **e}


def write_fixture(example, dtype, inputs, outputs, extra=None):
    """inputs: dict name -> (tensor, kina dtype); outputs: list of (name, tensor, kina dtype)."""
    doc = {
        "program": f"examples/{example}.kina",
        "dtype": dtype,
        "inputs": {n: entry(t, d) for n, (t, d) in inputs.items()},
        "outputs": [output(n, t, d) for n, t, d in outputs],
    }
    if extra is not None:
        doc.update(extra)
    os.makedirs(FIXTURES, exist_ok=True)
    path = os.path.join(FIXTURES, f"{example}_{dtype.lower()}.json")
    with open(path, "w") as f:
        f.write(dumps(doc))
    print("wrote", os.path.relpath(path, ROOT))
    return doc


def dumps(doc):
    """JSON text with one tensor per line (compact, diff-friendly); floats round-trip."""
    def compact(v):
        return json.dumps(v, separators=(", ", ": "))
    lines = ["{"]
    keys = list(doc)
    for i, key in enumerate(keys):
        comma = "," if i + 1 < len(keys) else ""
        value = doc[key]
        if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            lines.append(f" {json.dumps(key)}: {{")
            names = list(value)
            for j, n in enumerate(names):
                c = "," if j + 1 < len(names) else ""
                lines.append(f"  {json.dumps(n)}: {compact(value[n])}{c}")
            lines.append(f" }}{comma}")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f" {json.dumps(key)}: [")
            for j, v in enumerate(value):
                c = "," if j + 1 < len(value) else ""
                lines.append(f"  {compact(v)}{c}")
            lines.append(f" ]{comma}")
        else:
            lines.append(f" {json.dumps(key)}: {compact(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def grads(out, params):
    """Gradients of out.sum() w.r.t. params (the reverseMode seed: ones of out)."""
    return torch.autograd.grad(out.sum(), params)


def ad_reshape(dtype):
    gen = torch.Generator().manual_seed(101)
    x = uniform(gen, (2, 3), dtype).requires_grad_()
    y = x.reshape(3, 2)
    (g_x,) = grads(y, [x])
    assert torch.equal(g_x, torch.ones_like(x))
    write_fixture("ad_reshape", dtype, {"x": (x, dtype)},
                  [("y", y, dtype), ("g_x", g_x, dtype)])


def ad_matmul4(dtype):
    gen = torch.Generator().manual_seed(202)
    q = uniform(gen, (1, 2, 4, 2), dtype).requires_grad_()
    k = uniform(gen, (1, 2, 2, 4), dtype).requires_grad_()
    s = torch.matmul(q, k)
    g_q, g_k = grads(s, [q, k])
    ones = torch.ones_like(s)
    assert torch.allclose(g_q, ones @ k.detach().transpose(-2, -1), rtol=1e-6, atol=1e-6)
    assert torch.allclose(g_k, q.detach().transpose(-2, -1) @ ones, rtol=1e-6, atol=1e-6)
    write_fixture("ad_matmul4", dtype, {"q": (q, dtype), "k": (k, dtype)},
                  [("s", s, dtype), ("g_q", g_q, dtype), ("g_k", g_k, dtype)])


AD_GATHER_IDS = [[3, 1, 3, 7]]  # a repeated id: row 3 receives two contributions


def ad_gather(dtype):
    gen = torch.Generator().manual_seed(303)
    ids = torch.tensor(AD_GATHER_IDS, dtype=torch.int64)
    emb = uniform(gen, (8, 4), dtype).requires_grad_()
    y = F.embedding(ids, emb)                      # [1, 4, 4]
    (g_emb,) = grads(y, [emb])
    # row r of g_emb = (number of times r occurs in ids) * ones
    assert torch.equal(g_emb[3], torch.full((4,), 2.0, dtype=g_emb.dtype))
    assert torch.equal(g_emb[1], torch.ones(4, dtype=g_emb.dtype))
    assert torch.equal(g_emb[7], torch.ones(4, dtype=g_emb.dtype))
    for r in (0, 2, 4, 5, 6):
        assert torch.equal(g_emb[r], torch.zeros(4, dtype=g_emb.dtype)), r
    # plain indexing agrees with F.embedding
    assert torch.equal(y, emb.detach()[ids])
    write_fixture("ad_gather", dtype, {"ids": (ids, "I64"), "emb": (emb, dtype)},
                  [("y", y, dtype), ("g_emb", g_emb, dtype)])


def nll_ad(dtype):
    gen = torch.Generator().manual_seed(404)
    logits = uniform(gen, (1, 4, 8), dtype).requires_grad_()
    targets = torch.randint(0, 8, (1, 4), generator=gen, dtype=torch.int64)
    log_probs = torch.log_softmax(logits, dim=2)
    picked = torch.gather(log_probs, 2, targets.unsqueeze(2)).squeeze(2)   # [1, 4]
    loss = -picked
    (g_logits,) = grads(loss, [logits])
    # sanity: d(sum of per-position NLL)/d logits = softmax - onehot(targets)
    expect = torch.softmax(logits.detach(), dim=2) - F.one_hot(targets, 8).to(logits.dtype)
    tol = 1e-14 if dtype == "F64" else 1e-6
    assert torch.allclose(g_logits, expect, rtol=0, atol=tol), (g_logits - expect).abs().max()
    write_fixture("nll_ad", dtype, {"logits": (logits, dtype), "targets": (targets, "I64")},
                  [("nll", loss, dtype), ("g_logits", g_logits, dtype)])


def main():
    for dtype in ("F64", "F32"):
        ad_reshape(dtype)
        ad_matmul4(dtype)
        ad_gather(dtype)
        nll_ad(dtype)
    return 0


if __name__ == "__main__":
    sys.exit(main())
