#!/usr/bin/python3
"""validate-decoder-ad: the native path of the decoder's VJPs against NumPy and PyTorch.

Run from the repository root (torch imports only under Debian's python3; the build needs the
LLVM 19 tools):

    apt-get install -y --no-install-recommends python3-torch libopenblas0-pthread mlir-19-tools clang-19
    /usr/bin/python3 scripts/validate_decoder_ad.py

For each of the isolated decoder VJP wrappers (ad_gather, ad_reshape, ad_matmul4) and the
StoryLM-0 step (storylm0_ad_step), in F32 and in F64 (the same source with F64 for F32):

1. builds the program into a shared object with `bin/kina compile` (lowered through MLIR and
   LLVM 19; transform_ad's recorded backward included);
2. calls its `kina_call(void **descriptors)` through ctypes on the inputs of the committed
   PyTorch fixture (src/test/resources/fixtures/<example>_<f32|f64>.json), with NumPy arrays as
   the buffers of the memref descriptors (inputs, then outputs, in the order compile prints);
3. computes the same results with NumPy (the VJPs written out by hand: np.add.at for the
   gather's scatter-add, the attention backward of the step) and with PyTorch autograd (the
   gradient of out.sum(), the reverseMode seed of ones), in the example's dtype;
4. checks the shared object's outputs against both: the largest |native − reference| over the
   tensor's largest magnitude must be below 1e-5 in F32, 1e-12 in F64 (1e-10 for the step).

It writes src/test/resources/fixtures/native_decoder_ad.json: per example and dtype, the inputs,
the NumPy and PyTorch references, what the shared object returned, and the errors measured.
NativeDecoderAdTest compares kina's native engine against those references without Python.
Exits 1 with one line per failed check.
"""
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "src", "test", "resources", "fixtures")
OUT = os.path.join(FIXTURES, "native_decoder_ad.json")
EXAMPLES = ["ad_gather", "ad_reshape", "ad_matmul4", "storylm0_ad_step"]
NP = {"F32": np.float32, "F64": np.float64, "I64": np.int64}
TORCH = {"F32": torch.float32, "F64": torch.float64}
TOL = {"F32": 1e-5, "F64": 1e-12}

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)


# ---- the shared object ------------------------------------------------------------------------

TYPE = re.compile(r"(\w+) tensor<(\w+), \[([0-9, ]*)\], @host>")
OUT_TYPE = re.compile(r"tensor<(\w+), \[([0-9, ]*)\], @host>")


def dims(s):
    return [int(d) for d in s.split(",") if d.strip()]


def build(example, dtype, work):
    """bin/kina compile of the example (F64: the source with F64 for F32): (path, inputs, outputs)."""
    src = open(os.path.join(ROOT, "examples", example + ".kina")).read()
    if dtype == "F64":
        src = src.replace("F32", "F64")
    kina = os.path.join(work, f"{example}_{dtype.lower()}.kina")
    with open(kina, "w") as f:
        f.write(src)
    so = os.path.join(work, f"{example}_{dtype.lower()}.so")
    r = subprocess.run([os.path.join(ROOT, "bin", "kina"), "compile", kina, "-o", so], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"validate_decoder_ad: bin/kina compile {example} ({dtype}) failed: {r.stderr.strip()}")
    line = r.stdout.strip().splitlines()[-1]
    ins_text, outs_text = line.split(" inputs (", 1)[1].split(") then of ", 1)
    inputs = [(m.group(1), m.group(2), dims(m.group(3))) for m in TYPE.finditer(ins_text)]
    outputs = [(m.group(1), dims(m.group(2))) for m in OUT_TYPE.finditer(outs_text.split(" outputs (", 1)[1])]
    return so, inputs, outputs


def descriptor(arr):
    """A StridedMemRefType for a C-contiguous array: allocated, aligned, offset, sizes, strides."""
    r = arr.ndim
    d = (ctypes.c_int64 * (3 + 2 * r))()
    d[0] = d[1] = arr.ctypes.data
    d[2] = 0
    for i in range(r):
        d[3 + i] = arr.shape[i]
        d[3 + r + i] = arr.strides[i] // arr.itemsize
    return d


def call(so, inputs, outputs, values):
    """Runs kina_call on values (name -> array) and returns the output arrays."""
    lib = ctypes.CDLL(so)
    ins = [np.ascontiguousarray(values[name], dtype=NP[dt]).reshape(shape) for name, dt, shape in inputs]
    outs = [np.zeros(shape, dtype=NP[dt]) for dt, shape in outputs]
    descs = [descriptor(a) for a in ins + outs]
    argv = (ctypes.c_void_p * len(descs))(*[ctypes.cast(d, ctypes.c_void_p) for d in descs])
    lib.kina_call.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.kina_call.restype = None
    lib.kina_call(argv)
    return outs


# ---- NumPy: the VJPs written out ----------------------------------------------------------------

def numpy_reference(example, v):
    if example == "ad_reshape":
        x = v["x"]
        return [x.reshape(3, 2), np.ones_like(x)]
    if example == "ad_matmul4":
        q, k = v["q"], v["k"]
        s = q @ k
        ones = np.ones_like(s)
        return [s, ones @ np.swapaxes(k, -1, -2), np.swapaxes(q, -1, -2) @ ones]
    if example == "ad_gather":
        ids, emb = v["ids"], v["emb"]
        y = emb[ids]
        g = np.zeros_like(emb)
        np.add.at(g, ids.reshape(-1), np.ones_like(y).reshape(-1, emb.shape[1]))
        return [y, g]
    if example == "storylm0_ad_step":
        return [storylm0_step_numpy(v)]
    raise ValueError(example)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def storylm0_step_numpy(v):
    """emb − lr·∂(Σ logits)/∂emb: the StoryLM-0 forward and its backward by hand."""
    ids, emb, mask, scale = v["token_ids"], v["emb"], v["mask"], v["scale"]
    wq, wk, wv, wo, lm = v["wq"], v["wk"], v["wv"], v["wo"], v["lm_head"]
    heads = lambda t: t.reshape(1, 4, 2, 2).transpose(0, 2, 1, 3)          # [B, T, D] -> [B, H, T, hd]
    merge = lambda t: t.transpose(0, 2, 1, 3).reshape(1, 4, 4)
    x = emb[ids]
    qh, kh, vh = heads(x @ wq), heads(x @ wk), heads(x @ wv)
    p = softmax((qh @ np.swapaxes(kh, -1, -2)) * scale + mask, axis=3)
    m = merge(p @ vh)
    o = m @ wo
    g_logits = np.ones((1, 4, 8), dtype=emb.dtype)
    g_o = g_logits @ lm.T
    g_a = heads(g_o @ wo.T)
    g_p = g_a @ np.swapaxes(vh, -1, -2)
    g_vh = np.swapaxes(p, -1, -2) @ g_a
    g_s = p * (g_p - (g_p * p).sum(axis=3, keepdims=True)) * scale
    g_qh, g_kh = g_s @ kh, np.swapaxes(g_s, -1, -2) @ qh
    g_x = merge(g_qh) @ wq.T + merge(g_kh) @ wk.T + merge(g_vh) @ wv.T
    g_emb = np.zeros_like(emb)
    np.add.at(g_emb, ids.reshape(-1), g_x.reshape(4, 4))
    return emb - v["lr"] * g_emb


# ---- PyTorch: autograd -------------------------------------------------------------------------

def torch_reference(example, v, dtype):
    t = {k: torch.tensor(a) for k, a in v.items()}
    if example == "ad_reshape":
        x = t["x"].requires_grad_()
        y = x.reshape(3, 2)
        y.sum().backward()
        return [y, x.grad]
    if example == "ad_matmul4":
        q, k = t["q"].requires_grad_(), t["k"].requires_grad_()
        s = torch.matmul(q, k)
        s.sum().backward()
        return [s, q.grad, k.grad]
    if example == "ad_gather":
        emb = t["emb"].requires_grad_()
        y = torch.nn.functional.embedding(t["ids"], emb)
        y.sum().backward()
        return [y, emb.grad]
    if example == "storylm0_ad_step":
        emb = t["emb"].requires_grad_()
        x = torch.nn.functional.embedding(t["token_ids"], emb)
        heads = lambda u: u.view(1, 4, 2, 2).transpose(1, 2)
        q, k, vv = heads(x @ t["wq"]), heads(x @ t["wk"]), heads(x @ t["wv"])
        p = torch.softmax((q @ k.transpose(-1, -2)) * t["scale"] + t["mask"], dim=-1)
        logits = ((p @ vv).transpose(1, 2).reshape(1, 4, 4) @ t["wo"]) @ t["lm_head"]
        logits.sum().backward()
        with torch.no_grad():
            return [emb - t["lr"] * emb.grad]
    raise ValueError(example)


# ---- checks and the fixture --------------------------------------------------------------------

def load_inputs(example, dtype):
    with open(os.path.join(FIXTURES, f"{example}_{dtype.lower()}.json")) as f:
        fx = json.load(f)
    return {name: np.array(e["data"], dtype=NP[e["dtype"]]).reshape(e["shape"]) for name, e in fx["inputs"].items()}, fx["inputs"]


def error(got, want):
    want = np.asarray(want, dtype=np.float64)
    scale = max(float(np.abs(want).max()), np.finfo(np.float64).tiny)
    return float(np.abs(np.asarray(got, dtype=np.float64) - want).max()) / scale


def entry(name, a, dtype):
    a = np.asarray(a)
    return {"name": name, "dtype": dtype, "shape": list(a.shape), "data": [float(x) for x in a.reshape(-1).tolist()]}


NAMES = {"ad_gather": ["y", "g_emb"], "ad_reshape": ["y", "g_x"], "ad_matmul4": ["s", "g_q", "g_k"],
         "storylm0_ad_step": ["new_emb"]}


def main():
    cases, failures = [], []
    with tempfile.TemporaryDirectory(prefix="validate-decoder-ad") as work:
        for example in EXAMPLES:
            for dtype in ("F32", "F64"):
                so, inputs, outputs = build(example, dtype, work)
                values, raw = load_inputs(example, dtype)
                native = call(so, inputs, outputs, values)
                ref_np = [np.asarray(a, dtype=NP[dtype]) for a in numpy_reference(example, values)]
                ref_torch = [a.detach().numpy() for a in torch_reference(example, values, dtype)]
                tol = 1e-10 if dtype == "F64" and example == "storylm0_ad_step" else TOL[dtype]
                errs = {"numpy": max(error(n, r) for n, r in zip(native, ref_np)),
                        "torch": max(error(n, r) for n, r in zip(native, ref_torch))}
                for what, e in errs.items():
                    status = "ok" if e <= tol else "FAILED"
                    print(f"{example:17s} {dtype}: native vs {what:5s} {e:.2e} (tolerance {tol:.0e}) {status}")
                    if e > tol:
                        failures.append(f"{example} {dtype}: native vs {what} {e:.3g} > {tol:g}")
                names = NAMES[example]
                cases.append({"program": f"examples/{example}.kina", "dtype": dtype, "tolerance": tol, "inputs": raw,
                              "numpy": [entry(n, a, dtype) for n, a in zip(names, ref_np)],
                              "torch": [entry(n, a, dtype) for n, a in zip(names, ref_torch)],
                              "native": [entry(n, a, dtype) for n, a in zip(names, native)],
                              "errors": errs})
    with open(OUT, "w") as f:
        json.dump({"about": "scripts/validate_decoder_ad.py: the decoder VJP wrappers and the StoryLM-0 step built with bin/kina compile, "
                            "called through ctypes, against NumPy and PyTorch (torch " + torch.__version__ + ")",
                   "cases": cases}, f, indent=1)
        f.write("\n")
    print(f"wrote {os.path.relpath(OUT, ROOT)}")
    if failures:
        for line in failures:
            print("validate_decoder_ad: " + line, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
