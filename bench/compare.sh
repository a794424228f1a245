#!/usr/bin/env bash
# The StoryLM train step, kina against PyTorch: `bin/kina bench` and bench/torch_reference.py run
# alternately (kina, torch, kina, torch, …) for ROUNDS rounds on the same config, batch and threads.
#
#   bench/compare.sh CONFIG THREADS [ROUNDS]       e.g.  bench/compare.sh small 1 3
#
# Env: STEPS (timed steps per run, default 20), BATCH (8), SEQ (the sequence length instead of the
# config's, both sides: `SEQ=2048 BATCH=2 bench/compare.sh long 1 3`), TORCH_PYTHON (/usr/bin/python3, Debian's,
# which has torch), KINA_CMD / TORCH_CMD (replace either command, e.g. with `echo "kina bench: …"`
# to test the parsing). Torch runs with OMP_WAIT_POLICY=PASSIVE (no spinning workers on 2 cores).
# Prints every run's result line, then per side min / median / max ms/step (min of the runs' mins,
# median of their medians, max of their maxes) and kina/torch for each (> 1: kina is slower), and
# peak memory per side (median of the runs' peak_rss_mb; kina's arena_mb), and the paired ratios: each round's kina run over the torch run after it, by minima and by medians,
# and their medians (a slow phase of the host then weighs on both sides of a ratio alike).
set -uo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
[[ $# -ge 2 && $# -le 3 ]] || { echo "usage: bench/compare.sh CONFIG THREADS [ROUNDS]" >&2; exit 2; }
CONFIG=$1 THREADS=$2 ROUNDS=${3:-3}
STEPS=${STEPS:-20} BATCH=${BATCH:-8} SEQ_ARG=${SEQ:+--seq $SEQ}
KINA_CMD=${KINA_CMD:-"$ROOT/bin/kina bench --config $CONFIG --steps $STEPS --threads $THREADS --batch $BATCH $SEQ_ARG"}
TORCH_CMD=${TORCH_CMD:-"env OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=$THREADS ${TORCH_PYTHON:-/usr/bin/python3} $ROOT/bench/torch_reference.py --config $CONFIG --steps $STEPS --threads $THREADS --batch $BATCH $SEQ_ARG"}

LINES=()
run() {  # run SIDE CMD: keeps the one result line "SIDE bench: …"
    local side=$1 cmd=$2 line
    line=$(bash -c "$cmd" 2>/dev/null | grep -E "^$side bench: " | tail -1)
    if [[ -z $line ]]; then echo "compare.sh: no '$side bench:' line from: $cmd" >&2; exit 1; fi
    echo "$line"
    LINES+=("$line")
}
for ((r = 1; r <= ROUNDS; r++)); do
    run kina "$KINA_CMD"
    run torch "$TORCH_CMD"
done

RESULT_LINES=$(printf '%s\n' "${LINES[@]}") python3 - "$CONFIG" "$BATCH" "$THREADS" "$STEPS" "$ROUNDS" <<'PY'
import os, re, statistics, sys
config, batch, threads, steps, rounds = sys.argv[1:]
side = {"kina": [], "torch": []}
rss = {"kina": [], "torch": []}
arena = []
seq = None
for line in os.environ["RESULT_LINES"].splitlines():
    m = re.match(r"(kina|torch) bench: .*ms/step min=([\d.]+) median=([\d.]+) max=([\d.]+)", line)
    if m:
        side[m.group(1)].append(tuple(float(m.group(i)) for i in (2, 3, 4)))
        r = re.search(r" peak_rss_mb=(\d+)", line)
        if r:
            rss[m.group(1)].append(float(r.group(1)))
        a = re.search(r" arena_mb=([\d.]+)", line)
        if a:
            arena.append(float(a.group(1)))
        q = re.search(r" seq=(\d+)", line)
        if q:
            seq = q.group(1)
if not side["kina"] or not side["torch"]:
    sys.exit("compare.sh: missing results")
agg = {s: (min(r[0] for r in v), statistics.median(r[1] for r in v), max(r[2] for r in v)) for s, v in side.items()}
f = "{:>9.4f}" if min(agg["kina"][1], agg["torch"][1]) < 1 else "{:>9.1f}"
if config == "storylm0":
    batch = "1"
print(f"config={config} batch={batch}" + (f" seq={seq}" if seq else "") + f" threads={threads} steps={steps} rounds={rounds}")
print(f"{'':<6} {'runs':>4} {'min':>9} {'median':>9} {'max':>9}  ms/step")
for s in ("kina", "torch"):
    print(f"{s:<6} {len(side[s]):>4} " + " ".join(f.format(x) for x in agg[s]))
k, t = agg["kina"], agg["torch"]
print(f"{'ratio':<6} {'':>4} {k[0] / t[0]:>9.3f} {k[1] / t[1]:>9.3f} {k[2] / t[2]:>9.3f}  kina/torch (>1: kina slower)")
# Each round's kina run against the torch run right after it (the same minute of the host's load).
pairs = list(zip(side["kina"], side["torch"]))
if pairs:
    by_min = [a[0] / b[0] for a, b in pairs]
    by_med = [a[1] / b[1] for a, b in pairs]
    print(f"{'paired':<6} {len(pairs):>4} {statistics.median(by_min):>9.3f} {statistics.median(by_med):>9.3f} {'':>9}  "
          f"median of the rounds' ratios (min, median); rounds: " + " ".join(f"{x:.2f}" for x in by_med))
if rss["kina"] and rss["torch"]:
    k, t = statistics.median(rss["kina"]), statistics.median(rss["torch"])
    print(f"memory peak_rss_mb median: kina {k:.0f}" + (f" (arena {statistics.median(arena):.1f})" if arena else "")
          + f", torch {t:.0f}, kina/torch {k / t:.3f}")
PY
