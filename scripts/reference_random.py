#!/usr/bin/python3
"""Reference values for kina's counter-based random numbers (Philox-4x32-10) and the PyTorch
fixtures of the examples that use them.

Run from the repository root (torch and numpy import only under Debian's python3):

    /usr/bin/python3 scripts/reference_random.py

Philox is written here once for any word width, from the paper (J. K. Salmon, M. A. Moraes,
R. O. Dror, D. E. Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011), and checked two
ways before anything is written: at 64-bit words against numpy's own Philox-4x64-10 bit
generator (np.random.Philox), and at 32-bit words against the known-answer vectors Random123
publishes for Philox-4x32-10. Then it writes:

- src/test/resources/fixtures/random_philox.json: those known answers, and for some keys, streams
  and positions the four words, the F32 and F64 uniforms and the F64 normal of kina's mapping
  (docs/language.md, "Random"), the normal with Python's math (the same formula as StrictMath,
  within an ulp);
- vocab_<example>_f64.json for examples/vocab/random_projection, noise and dropout, in the fixture
  format of reference_ad.py: the random values from the reference above, everything else
  PyTorch's operations, gradients those of out.sum(). Dropout is PyTorch's own scaling
  (torch.nn.functional.dropout's `noise.div_(1 - p); input * noise`) of a mask taken from the
  uniforms;
- dropout_scaling_f32.json and _f64.json: y = x.dropout(key, p=0.15) and the cotangent of x for
  the seed w, which kina must reproduce bit for bit in both dtypes.
"""
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_ad import FIXTURES, ROOT, grads, write_fixture  # noqa: E402

# Multipliers and Weyl increments of Philox-4xW (the paper's table; Random123's philox.h)
CONSTANTS = {
    32: ((0xD2511F53, 0xCD9E8D57), (0x9E3779B9, 0xBB67AE85)),
    64: ((0xD2E7470EE14C6C93, 0xCA5A826395121157), (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)),
}

# Random123's kat_vectors for philox4x32_10: counter (4 words), key (2 words) -> output (4 words)
KAT_4X32_10 = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff),
     (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


def philox(counter, key, width=32, rounds=10):
    """Philox-4xW-R of a 4-word counter under a 2-word key: the key bumped before every round but the first."""
    (m0, m1), (w0, w1) = CONSTANTS[width]
    mask = (1 << width) - 1
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(rounds):
        if r > 0:
            k0, k1 = (k0 + w0) & mask, (k1 + w1) & mask
        p0, p1 = m0 * c0, m1 * c2
        c0, c1, c2, c3 = ((p1 >> width) ^ c1 ^ k0), p1 & mask, ((p0 >> width) ^ c3 ^ k1), p0 & mask
    return c0, c1, c2, c3


def check_against_numpy():
    """At 64-bit words, philox() is numpy's Philox bit generator (which steps its counter, then draws)."""
    rng = np.random.default_rng(7)
    for _ in range(4):
        counter = [int(v) for v in rng.integers(0, 2**63, 4)]
        key = [int(v) for v in rng.integers(0, 2**63, 2)]
        bg = np.random.Philox(counter=counter, key=key)
        got = [int(v) for v in bg.random_raw(8)]
        for block in range(2):
            c = counter[0] + block + 1
            want = philox((c & (2**64 - 1), counter[1] + (c >> 64), counter[2], counter[3]), key, width=64)
            assert tuple(got[4 * block:4 * block + 4]) == want, (counter, key, block, got, want)


def check_known_answers():
    for counter, key, out in KAT_4X32_10:
        assert philox(counter, key) == out, (counter, key, philox(counter, key), out)


# ---- kina's mapping ------------------------------------------------------------------------------

def words(key, stream, n):
    """The block of element n: counter (n low, n high, S low, S high), key (K low, K high); K, S, n as 64-bit."""
    m = 2**32 - 1
    key, stream = key % 2**64, stream % 2**64
    return philox((n & m, n >> 32, stream & m, stream >> 32), (key & m, key >> 32))


def uniform32(x):
    return (x[0] >> 8) * 2.0**-24


def uniform64(a, b):
    return (((a << 32) | b) >> 11) * 2.0**-53


def normal(x):
    u1, u2 = uniform64(x[0], x[1]), uniform64(x[2], x[3])
    return math.sqrt(-2 * math.log(1 - u1)) * math.cos((2 * math.pi) * u2)


def field(shape, key, stream, f):
    n = math.prod(shape)
    return torch.tensor([f(words(key, stream, i)) for i in range(n)], dtype=torch.float64).reshape(shape)


def write_philox():
    elements = []
    for key, stream in [(0, 0), (1234567, 89), (-1, -1), (2**40 + 3, 0)]:
        for n in [0, 1, 2, 255, 2**32 + 5]:
            x = words(key, stream, n)
            elements.append({"key": key, "stream": stream, "n": n, "words": list(x),
                             "uniform_f32": uniform32(x), "uniform_f64": uniform64(x[0], x[1]), "normal_f64": normal(x)})
    doc = {"kat": [{"counter": list(c), "key": list(k), "out": list(o)} for c, k, o in KAT_4X32_10],
           "elements": elements}
    path = os.path.join(FIXTURES, "random_philox.json")
    with open(path, "w") as f:
        f.write("{\n \"kat\": [\n")
        f.write(",\n".join("  " + json.dumps(e) for e in doc["kat"]))
        f.write("\n ],\n \"elements\": [\n")
        f.write(",\n".join("  " + json.dumps(e) for e in elements))
        f.write("\n ]\n}\n")
    print("wrote", os.path.relpath(path, ROOT))


# ---- the examples' fixtures ----------------------------------------------------------------------

D = "F64"
F64 = torch.float64
KEY = (1234567, 89)


def param(gen, shape, dtype=F64):
    return (torch.rand(shape, generator=gen, dtype=F64) * 2 - 1).to(dtype).requires_grad_()


def key_entry():
    return torch.tensor(KEY, dtype=torch.int64), "I64"


def fixture(name, inputs, outputs, dtype=D):
    write_fixture(f"vocab_{name}", dtype, inputs, outputs, extra={"program": f"examples/vocab/{name}.kina"})


def random_projection():
    # w = u − 0.5 with u = key.random_uniform([3, 4]) (F64's 53 bits); y = tanh(x @ w)
    gen = torch.Generator().manual_seed(601)
    x = param(gen, (5, 3))
    u = field((3, 4), *KEY, lambda b: uniform64(b[0], b[1]))
    y = torch.tanh(x @ (u - 0.5))
    (g_x,) = grads(y, [x])
    fixture("random_projection", {"x": (x, D), "key": key_entry()}, [("y", y, D), ("g_x", g_x, D)])


def noise():
    # z = x + 0.1·ε, ε = key.random_normal([4, 3]); y = z @ w
    gen = torch.Generator().manual_seed(602)
    x, w = param(gen, (4, 3)), param(gen, (3, 2))
    eps = field((4, 3), *KEY, normal)
    y = (x + eps * 0.1) @ w
    g_x, g_w = grads(y, [x, w])
    fixture("noise", {"x": (x, D), "w": (w, D), "key": key_entry()}, [("y", y, D), ("g_x", g_x, D), ("g_w", g_w, D)])


def dropout():
    # h = x @ w; y = h.dropout(key, p=0.25): PyTorch's scaling of the mask uniform >= p
    gen = torch.Generator().manual_seed(603)
    x, w = param(gen, (4, 6)), param(gen, (6, 5))
    y = (x @ w) * scaled_mask((4, 5), 0.25, F64)
    g_x, g_w = grads(y, [x, w])
    fixture("dropout", {"x": (x, D), "w": (w, D), "key": key_entry()}, [("y", y, D), ("g_x", g_x, D), ("g_w", g_w, D)])


def scaled_mask(shape, p, td):
    """PyTorch's dropout noise for the mask uniform >= p (the uniform of the dtype: F32's 24 bits, F64's 53)."""
    u = field(shape, *KEY, uniform32 if td == torch.float32 else (lambda b: uniform64(b[0], b[1])))
    noise = (u >= p).to(td)
    noise.div_(1 - p)                        # as torch.nn.functional.dropout scales its mask
    return noise


def dropout_scaling(dtype):
    # y = x.dropout(key, p=0.15), seeded by a weight w: z = (y * w).sum(), so g_x = w·noise.
    # One rounding each way, so kina's bits equal PyTorch's in F32 and F64.
    gen = torch.Generator().manual_seed(604)
    td = torch.float32 if dtype == "F32" else F64
    x, w = param(gen, (3, 7), td), param(gen, (3, 7), td).detach()
    y = x * scaled_mask((3, 7), 0.15, td)
    (g_x,) = torch.autograd.grad((y * w).sum(), [x])
    write_fixture("dropout_scaling", dtype, {"x": (x, dtype), "w": (w, dtype), "key": key_entry()},
                  [("y", y, dtype), ("g_x", g_x, dtype)], extra={"program": "x.dropout(key, p=0.15)"})


def main():
    check_against_numpy()
    check_known_answers()
    write_philox()
    random_projection()
    noise()
    dropout()
    dropout_scaling("F64")
    dropout_scaling("F32")
    return 0


if __name__ == "__main__":
    sys.exit(main())
