#!/usr/bin/python3
"""PyTorch reference timing of kina's StoryLM AdamW train step (what `kina bench` times).

    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/torch_reference.py --config small --threads 1 --steps 20 --batch 8
    ... --config long --seq 2048 --batch 2      (the configs of kina.model.Config.NAMED; --seq as kina bench's)

(torch imports only under Debian's interpreter: apt-get install -y python3-torch libopenblas0-pthread.)
Prints exactly one line, in kina bench's format:

    torch bench: config=small batch=8 seq=128 threads=1 steps=20 ms/step min=… median=… max=… tokens/s=… peak_rss_mb=…

The model and step follow kina.model.StoryLm.trainStep and Optimizer.update, float32 throughout:
  x = emb[ids]                                             [B, T, d]
  per layer: h = rmsnorm(x) (x·rsqrt(mean(x²)+1e-5)·w, no bias)
             q, k, v = h @ wq, h @ wk, h @ wv (weights stored [in, out]), half-split RoPE on q, k
             att = softmax(q kᵀ / √hd + causal mask) v per head; x = x + att @ wo
             m = rmsnorm(x); x = x + (silu(m @ w_gate) · (m @ w_up)) @ w_down
  logits = rmsnorm(x, final_norm) @ lm_head (untied)        [B·T, vocab]
  loss = mean NLL; gradients by autograd; global grad-norm clip 1.0;
  AdamW β 0.9/0.95, ε 1e-8, decoupled weight decay 0.01 on matrices (rank 2) only, lr 1e-3.
Batches are random bytes (seeded), as in kina bench; warm-up as kina bench's (at least 2 steps,
--warmup, and 5 s, --warmup-seconds; at most 200 steps here; kina bench then also waits for its JIT
to go quiet, up to 400 steps, which torch has no need of) then --steps timed
steps, each wall-clock timed around forward + backward + clip + update. tokens/s = batch·seq / median.
"""
import argparse
import math
import os
import resource
import sys
import time


def _blas_threads_from_argv(argv):
    """--threads N (or --threads=N) from the command line, before torch is imported; None if absent."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return None


# torch.set_num_threads does not reach Debian's OpenBLAS (libopenblas0-pthread keeps its own pool,
# sized by the cores): measured on the 2-vCPU machine, --threads 1 alone ran medium's step at
# 186 % CPU (its matmuls on 2 threads), with OMP_NUM_THREADS=1 at 99 %. The BLAS pool is sized
# from these variables when the library loads, so they are set before torch is imported.
_t = _blas_threads_from_argv(sys.argv[1:]) or "1"
if _t.isdigit() and int(_t) > 0:                  # anything else: argparse below says what is wrong
    for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_v, _t)

import torch  # noqa: E402  (after the thread variables above)
import torch.nn.functional as F  # noqa: E402

# kina.model.Config.NAMED (kv_heads = heads; rope_base 10000; eps 1e-5)
CONFIGS = {
    "tiny": dict(vocab=256, d=64, heads=2, seq=64, layers=2, hidden=172),
    "small": dict(vocab=256, d=128, heads=4, seq=128, layers=2, hidden=344),
    "medium": dict(vocab=256, d=256, heads=8, seq=256, layers=4, hidden=688),
    "long": dict(vocab=256, d=256, heads=8, seq=1024, layers=4, hidden=688),
    "stories15m": dict(vocab=256, d=288, heads=6, seq=256, layers=6, hidden=768),
}
MAX_SEQ = 4096                                    # kina.model.Config.MAX_SEQ
EPS, ROPE_BASE = 1e-5, 10000.0
BETA1, BETA2, ADAM_EPS, WEIGHT_DECAY, CLIP, LR = 0.9, 0.95, 1e-8, 0.01, 1.0, 1e-3


def weight_shapes(c):
    """StoryLm.weights order: (name, shape)."""
    d, hd_all, h = c["d"], c["d"], c["hidden"]
    w = [("emb", (c["vocab"], d))]
    for l in range(c["layers"]):
        p = f"l{l}_"
        w += [(p + "attn_norm", (d,)), (p + "wq", (d, hd_all)), (p + "wk", (d, hd_all)), (p + "wv", (d, hd_all)),
              (p + "wo", (hd_all, d))]
        if h > 0:
            w += [(p + "mlp_norm", (d,)), (p + "w_gate", (d, h)), (p + "w_up", (d, h)), (p + "w_down", (h, d))]
    w += [("final_norm", (d,)), ("lm_head", (d, c["vocab"]))]
    return w


def rope_tables(c):
    hd = c["d"] // c["heads"]
    t = torch.arange(c["seq"], dtype=torch.float64).unsqueeze(1)
    i = torch.arange(hd // 2, dtype=torch.float64).unsqueeze(0)
    theta = t * torch.pow(torch.tensor(ROPE_BASE, dtype=torch.float64), -2.0 * i / hd)
    return torch.cos(theta).float(), torch.sin(theta).float()


def rmsnorm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS) * w


def rope(x, cos, sin, heads, hd):
    """x [B, T, heads·hd]: per head y_i = x_i cos − x_{i+hd/2} sin, y_{i+hd/2} = x_{i+hd/2} cos + x_i sin."""
    b, t, _ = x.shape
    xh = x.view(b, t, heads, hd)
    x1, x2 = xh[..., : hd // 2], xh[..., hd // 2:]
    c, s = cos.view(1, t, 1, hd // 2), sin.view(1, t, 1, hd // 2)
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).reshape(b, t, heads * hd)


def loss_fn(c, w, ids, targets, cos, sin, mask):
    b, t = ids.shape
    n, d, heads = b * t, c["d"], c["heads"]
    hd = d // heads
    x = F.embedding(ids, w["emb"])
    for l in range(c["layers"]):
        p = f"l{l}_"
        h2 = rmsnorm(x, w[p + "attn_norm"]).reshape(n, d)
        q = rope((h2 @ w[p + "wq"]).view(b, t, d), cos, sin, heads, hd)
        k = rope((h2 @ w[p + "wk"]).view(b, t, d), cos, sin, heads, hd)
        v = (h2 @ w[p + "wv"]).view(b, t, d)
        qh, kh, vh = (z.view(b, t, heads, hd).transpose(1, 2) for z in (q, k, v))
        s = torch.matmul(qh, kh.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)
        y = torch.matmul(att, vh).transpose(1, 2).reshape(n, d)
        x = x + (y @ w[p + "wo"]).view(b, t, d)
        if c["hidden"] > 0:
            m2 = rmsnorm(x, w[p + "mlp_norm"]).reshape(n, d)
            x = x + ((F.silu(m2 @ w[p + "w_gate"]) * (m2 @ w[p + "w_up"])) @ w[p + "w_down"]).view(b, t, d)
    logits = rmsnorm(x, w["final_norm"]).reshape(n, d) @ w["lm_head"]
    return F.cross_entropy(logits, targets)


# StoryLM-0 (kina.model.Config "storylm0"; examples/storylm0_train_step.kina)
TOY = dict(vocab=8, d=4, heads=2, seq=4)
TOY_LR, TOY_WARMUP = 0.1, 2000


def toy_loss(c, w, ids, targets):
    """StoryLM-0, the toy decoder: no norm, residual, MLP or RoPE; mask and scale are parameters."""
    t, d, h = c["seq"], c["d"], c["heads"]
    hd = d // h
    x = F.embedding(ids, w["emb"])                                       # [1, T, D]
    q, k, v = (torch.matmul(x, w[n].reshape(1, d, d)) for n in ("wq", "wk", "wv"))
    qh, kh, vh = (z.reshape(1, t, h, hd).transpose(1, 2) for z in (q, k, v))
    s = torch.matmul(qh, kh.transpose(2, 3))                             # [1, H, T, T]
    p = torch.softmax(s * w["scale"].expand(1, h, t, t) + w["mask"].expand(1, h, t, t), dim=3)
    m = torch.matmul(p, vh).transpose(1, 2).reshape(1, t, d)
    logits = torch.matmul(torch.matmul(m, w["wo"].reshape(1, d, d)), w["lm_head"].reshape(1, d, c["vocab"]))
    picked = torch.gather(torch.log_softmax(logits, dim=2), 2, targets.unsqueeze(2)).squeeze(2)
    return (-picked).sum(dim=1, keepdim=True) * (1.0 / t)               # [1, 1]


def toy_main(args):
    """SGD (lr 0.1) on all 8 parameters of StoryLM-0, batch 1; as kina bench --config storylm0."""
    c = TOY
    v, d, t = c["vocab"], c["d"], c["seq"]
    gen = torch.Generator().manual_seed(1)
    w = {n: (0.3 * torch.randn(sh, generator=gen)) for n, sh in
         (("emb", (v, d)), ("wq", (d, d)), ("wk", (d, d)), ("wv", (d, d)), ("wo", (d, d)), ("lm_head", (d, v)))}
    w["mask"] = torch.triu(torch.full((t, t), -1e9), diagonal=1).reshape(1, 1, t, t)
    w["scale"] = torch.full((1, 1, 1, 1), 1 / math.sqrt(d // c["heads"]))
    for p in w.values():
        p.requires_grad_(True)
    params = list(w.values())
    data = torch.Generator().manual_seed(42)
    warmup = TOY_WARMUP if args.warmup is None else args.warmup
    ms = []
    for s in range(warmup + args.steps):
        ids = torch.randint(0, v, (1, t), generator=data)
        targets = torch.randint(0, v, (1, t), generator=data)
        t0 = time.perf_counter()
        loss = toy_loss(c, w, ids, targets)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(TOY_LR * g)
        t1 = time.perf_counter()
        if s >= warmup:
            ms.append((t1 - t0) * 1e3)
    if not math.isfinite(loss.item()):
        sys.exit(f"torch bench: loss {loss.item()}")
    report(args, 1, t, ms)


def report(args, batch, seq, ms):
    srt = sorted(ms)
    n = len(srt)
    median = srt[n // 2] if n % 2 == 1 else (srt[n // 2 - 1] + srt[n // 2]) / 2
    tokens = batch * seq / (median / 1000)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    f = (lambda x: f"{x:.4f}") if args.config == "storylm0" else (lambda x: f"{x:.1f}")
    print(f"torch bench: config={args.config} batch={batch} seq={seq} threads={args.threads} steps={args.steps} "
          f"ms/step min={f(srt[0])} median={f(median)} max={f(srt[-1])} tokens/s={tokens:.0f} peak_rss_mb={rss:.0f}")


def positive(text):
    """argparse type: an integer >= 1 (a usage error, not a traceback, for 0 or less)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}")
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {v}")
    return v


def make_train_step(c, batch):
    """The benchmarked step of config c: (next_batch, train_step). next_batch() draws a random byte
    batch (ids [batch, seq], targets [batch·seq]); train_step(ids, targets) runs forward, backward,
    gradient-norm clipping and AdamW on weights initialised as kina's bench does, and returns the loss.
    Also used by bench/torch_profile.py."""
    gen = torch.Generator().manual_seed(1)
    params = {}
    for name, shape in weight_shapes(c):
        params[name] = (torch.ones(shape) if len(shape) == 1 else 0.02 * torch.randn(shape, generator=gen)).requires_grad_(True)
    order = [params[n] for n, _ in weight_shapes(c)]
    opt = torch.optim.AdamW([{"params": [p for p in order if p.dim() == 2], "weight_decay": WEIGHT_DECAY},
                             {"params": [p for p in order if p.dim() != 2], "weight_decay": 0.0}],
                            lr=LR, betas=(BETA1, BETA2), eps=ADAM_EPS)
    cos, sin = rope_tables(c)
    mask = ~torch.ones(c["seq"], c["seq"], dtype=torch.bool).tril()
    data = torch.Generator().manual_seed(42)
    v = 256 if c["vocab"] >= 256 else c["vocab"]

    def next_batch():
        ids = torch.randint(0, v, (batch, c["seq"]), generator=data)
        targets = torch.randint(0, v, (batch * c["seq"],), generator=data)
        return ids, targets

    def train_step(ids, targets):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(c, params, ids, targets, cos, sin, mask)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(order, CLIP)
        opt.step()
        return loss

    return next_batch, train_step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="small", choices=sorted(CONFIGS) + ["storylm0"])
    ap.add_argument("--batch", type=positive, default=8)
    ap.add_argument("--threads", type=positive, default=1)
    ap.add_argument("--steps", type=positive, default=20)
    ap.add_argument("--seq", type=positive, default=None, help=f"sequence length instead of the config's (at most {MAX_SEQ}), as kina bench --seq")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up steps at least (default 2; storylm0: 2000)")
    ap.add_argument("--warmup-seconds", type=float, default=5.0, help="warm-up time at least, as kina bench (default 5; not storylm0)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    if args.config == "storylm0":
        return toy_main(args)
    if args.warmup is None:
        args.warmup = 2
    c = dict(CONFIGS[args.config])
    if args.seq is not None:
        if args.seq > MAX_SEQ:
            ap.error(f"--seq {args.seq}: must be at most {MAX_SEQ}")
        c["seq"] = args.seq
    next_batch, train_step = make_train_step(c, args.batch)
    ms = []
    warm_until = time.perf_counter() + args.warmup_seconds
    warm = None                                   # warm-up steps, once they are over (as kina bench)
    s = 0
    while warm is None or s < warm + args.steps:
        if warm is None and s >= args.warmup and (time.perf_counter() >= warm_until or s >= 200):
            warm = s
        ids, targets = next_batch()               # drawn outside the timed window
        t0 = time.perf_counter()
        loss = train_step(ids, targets)
        t1 = time.perf_counter()
        if not math.isfinite(loss.item()):
            sys.exit(f"torch bench: loss {loss.item()} at step {s + 1}")
        if warm is not None:
            ms.append((t1 - t0) * 1e3)
        s += 1
    report(args, args.batch, c["seq"], ms)


if __name__ == "__main__":
    main()
