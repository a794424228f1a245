#!/usr/bin/python3
"""PyTorch's train step of bench/torch_reference.py under torch.autograd.profiler: where its time goes.

    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/torch_profile.py --config medium --steps 8 [--threads 1]

Runs 6 warm-up steps, then STEPS profiled ones (the same model, AdamW, clipping and random byte
batches as torch_reference.py), and prints ms per step (the profiler's overhead included), the
ten ops with the most self time per step, and per shape of aten::mm / aten::bmm the calls per step,
ms per call and GFLOP/s. Compare kina's `bin/kina bench --config C --threads T --steps N --profile`
(bench/RESULTS.md, "Train step against PyTorch"). Debian's python3-torch runs under /usr/bin/python3 only.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference as tr  # noqa: E402  (sets the BLAS thread variables from --threads before torch loads)
import torch  # noqa: E402


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="medium", choices=sorted(tr.CONFIGS))
    ap.add_argument("--batch", type=tr.positive, default=8)
    ap.add_argument("--threads", type=tr.positive, default=1)
    ap.add_argument("--steps", type=tr.positive, default=8)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    next_batch, train_step = tr.make_train_step(tr.CONFIGS[args.config], args.batch)

    def step():
        train_step(*next_batch())

    for _ in range(6):
        step()
    with torch.autograd.profiler.profile(record_shapes=True) as prof:
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        ms = (time.perf_counter() - t0) * 1e3 / args.steps
    n = args.steps
    print(f"torch profile: config={args.config} batch={args.batch} threads={args.threads} steps={n} ms/step={ms:.1f} (profiled)")
    for e in sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:10]:
        print(f"  {e.key:<36} {e.self_cpu_time_total / n / 1e3:9.1f} ms/step")
    mm = 0.0
    for e in prof.key_averages(group_by_input_shape=True):
        if e.key not in ("aten::mm", "aten::bmm"):
            continue
        a, b = e.input_shapes[0], e.input_shapes[1]
        flops = 2 * (a[0] if len(a) == 2 else a[0] * a[1]) * a[-1] * b[-1]
        per_call = e.self_cpu_time_total / e.count          # µs
        mm += e.self_cpu_time_total if e.key == "aten::mm" else 0
        print(f"  {e.key:<10} {str(a):>16} x {str(b):<16} {e.count / n:5.1f} calls/step {per_call / 1e3:8.3f} ms {flops / per_call / 1e3:6.1f} GFLOP/s")
    print(f"  aten::mm total {mm / n / 1e3:.1f} ms/step")


if __name__ == "__main__":
    main()
