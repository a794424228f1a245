#!/usr/bin/env python3
"""NumPy (OpenBLAS) float32 matmul on the shapes of bench/shapes.txt: the reference for kina's sgemm.

    OPENBLAS_NUM_THREADS=1 python3 bench/numpy_matmul.py [--threads 1] [--seconds 2] [--only NAME,...]

Set the thread count in the environment before Python starts (OPENBLAS_NUM_THREADS, as
bench/matmul.sh does); --threads also applies it through threadpoolctl when that is installed.
For each shape: operands uniform in [-1, 1) (seed 42), NT/TN given to matmul as transposed views
(no copy; OpenBLAS gets the transpose flag), batched shapes as a [batch, m, k] @ [batch, k, n]
matmul. Warm-up 0.3 s, then timed rounds of ~0.2 s each for --seconds; prints one line per shape:

    numpy shape=NAME dims=BxMxKxN trans=TT threads=T us/op median=… min=… gflops median=… max=…
"""
import argparse
import os
import sys
import time

import numpy as np


def read_shapes(path):
    shapes = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, batch, m, k, n, trans = line.split()
            shapes.append((name, int(batch), int(m), int(k), int(n), trans))
    return shapes


def operands(batch, m, k, n, trans, rng):
    def mat(rows, cols):
        x = (rng.random((batch, rows, cols), dtype=np.float32) * 2 - 1).astype(np.float32)
        return x[0] if batch == 1 else x

    def t(x):
        return x.T if x.ndim == 2 else x.transpose(0, 2, 1)

    a = t(mat(k, m)) if trans[0] == "T" else mat(m, k)
    b = t(mat(n, k)) if trans[1] == "T" else mat(k, n)
    return a, b


def blas_info():
    """threadpoolctl's report when installed; otherwise OpenBLAS's own answers through ctypes."""
    try:
        import threadpoolctl
        return threadpoolctl.threadpool_info()
    except ImportError:
        pass
    import ctypes
    import glob
    info = {"threadpoolctl": "not installed"}
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "*openblas*"))
    for path in libs:
        lib = ctypes.CDLL(path)
        for prefix in ("scipy_openblas_", "openblas_"):
            for suffix in ("64_", ""):
                try:
                    core, cfg, nt = (getattr(lib, prefix + f + suffix) for f in ("get_corename", "get_config", "get_num_threads"))
                except AttributeError:
                    continue
                core.restype = cfg.restype = ctypes.c_char_p
                info.update(filepath=os.path.basename(path), architecture=core().decode(), version=cfg().decode(),
                            num_threads=nt())
                return [info]
    return [info]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--only", default=None, help="comma-separated shape names")
    ap.add_argument("--shapes", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "shapes.txt"))
    args = ap.parse_args()
    threads = args.threads or int(os.environ.get("OPENBLAS_NUM_THREADS", "0") or 0) or os.cpu_count()
    limiter = None
    try:
        import threadpoolctl
        limiter = threadpoolctl.threadpool_limits(limits=threads)
    except ImportError:
        pass
    print(f"numpy {np.__version__}; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')} "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')} OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE')}")
    print(f"blas: {blas_info()}")
    sys.stdout.flush()
    only = set(args.only.split(",")) if args.only else None
    rng = np.random.default_rng(42)
    for name, batch, m, k, n, trans in read_shapes(args.shapes):
        if only and name not in only:
            continue
        a, b = operands(batch, m, k, n, trans, rng)
        flops = 2.0 * batch * m * k * n
        out = np.matmul(a, b)
        t_end = time.perf_counter() + 0.3
        while time.perf_counter() < t_end:
            np.matmul(a, b, out=out)
        # calls per round: about 0.2 s
        t0 = time.perf_counter()
        np.matmul(a, b, out=out)
        one = max(time.perf_counter() - t0, 1e-7)
        reps = max(1, int(0.2 / one))
        rounds = []
        t_end = time.perf_counter() + args.seconds
        while time.perf_counter() < t_end or len(rounds) < 3:
            t0 = time.perf_counter()
            for _ in range(reps):
                np.matmul(a, b, out=out)
            rounds.append((time.perf_counter() - t0) / reps)
        rounds.sort()
        med, best = rounds[len(rounds) // 2], rounds[0]
        print(f"numpy shape={name} dims={batch}x{m}x{k}x{n} trans={trans} threads={threads} "
              f"us/op median={med * 1e6:.2f} min={best * 1e6:.2f} "
              f"gflops median={flops / med / 1e9:.1f} max={flops / best / 1e9:.1f}")
        sys.stdout.flush()
    if limiter is not None:
        limiter.restore_original_limits()


if __name__ == "__main__":
    main()
