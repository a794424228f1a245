#!/usr/bin/env bash
# kina's sgemm (JMH, bench/src/main/java/kina/bench/MatmulBench.java) against NumPy/OpenBLAS on the
# shapes of bench/shapes.txt, 1 and 2 threads, the two run alternately; prints GFLOP/s and kina/OpenBLAS.
#
#   bench/matmul.sh                      # threads 1 and 2, one round (about 10 minutes)
#   THREADS="1" ROUNDS=2 bench/matmul.sh # rounds alternate numpy, kina, numpy, kina, …
#   QUICK=1 ONLY=sq256,small.up bench/matmul.sh
#
# Env: THREADS (default "1 2"), ROUNDS (1), QUICK=1 (short JMH iterations and NumPy timing),
# ONLY (comma-separated shape names), PYTHON (python3 with NumPy; default python3).
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset for the NumPy command only (they pin an older
# kernel choice on some machines); the kernel it then runs is printed (architecture=…).
# Raw outputs land in bench/target/matmul-DATE/ (ignored by git).
# Summary per shape and thread count: kina = JMH mean µs/op, NumPy = median of ~0.2 s rounds; with
# several rounds each side's best round counts.
set -euo pipefail
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
JDK=$("$ROOT/bin/find-jdk")
PY=${PYTHON:-python3}
THREADS=${THREADS:-1 2}
ROUNDS=${ROUNDS:-1}
OUT="$ROOT/bench/target/matmul-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"

# Build the main jar (as bin/kina does) and the benchmark jar.
(cd "$ROOT" && JAVA_HOME="$JDK" mvn -q -B -DskipTests package 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' >&2)
(cd "$ROOT/bench" && JAVA_HOME="$JDK" mvn -q -B package 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' >&2)

# Shapes as JMH params: name:BxMxKxN:TT
SHAPES=$(grep -v '^\s*#' "$ROOT/bench/shapes.txt" | awk 'NF==6 {print $1":"$2"x"$3"x"$4"x"$5":"$6}' |
    { if [[ -n ${ONLY:-} ]]; then grep -E "^($(echo "$ONLY" | tr ',' '|')):"; else cat; fi } | paste -sd, -)
[[ -n $SHAPES ]] || { echo "matmul.sh: no shapes (ONLY=${ONLY:-})" >&2; exit 2; }

if [[ -n ${QUICK:-} ]]; then JMH_ITER=(-wi 1 -i 2 -w 500ms -r 500ms); NP_SECONDS=0.5
else JMH_ITER=(); NP_SECONDS=2; fi

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cpus," \
     "$(grep -o -m1 -w 'avx512f' /proc/cpuinfo || echo 'no avx512f'); $("$JDK/bin/java" -version 2>&1 | head -1)"
for ((r = 1; r <= ROUNDS; r++)); do
    for t in $THREADS; do
        echo "== round $r, $t thread(s): numpy" >&2
        env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS="$t" OMP_NUM_THREADS="$t" \
            "$PY" "$ROOT/bench/numpy_matmul.py" --threads "$t" --seconds "$NP_SECONDS" \
            ${ONLY:+--only "$ONLY"} | tee "$OUT/numpy-r$r-t$t.txt" >&2
        echo "== round $r, $t thread(s): kina (JMH)" >&2
        "$JDK/bin/java" --add-modules jdk.incubator.vector -cp "$ROOT/bench/target/benchmarks.jar:$ROOT/target/kina.jar" \
            org.openjdk.jmh.Main MatmulBench -p shape="$SHAPES" -p threads="$t" "${JMH_ITER[@]}" \
            -rf json -rff "$OUT/kina-r$r-t$t.json" 2>&1 | grep -E '^(Benchmark|MatmulBench)' >&2 || true
    done
done

"$PY" - "$OUT" <<'PY'
import glob, json, os, re, sys
out = sys.argv[1]
kina, numpy = {}, {}
for f in glob.glob(os.path.join(out, "kina-*.json")):
    for r in json.load(open(f)):
        name, dims, trans = r["params"]["shape"].split(":")
        b, m, k, n = map(int, dims.split("x"))
        g = 2.0 * b * m * k * n / (r["primaryMetric"]["score"] * 1e3)
        key = (name, int(r["params"]["threads"]))
        kina[key] = max(kina.get(key, 0), g)
order = []
for f in sorted(glob.glob(os.path.join(out, "numpy-*.txt"))):
    for line in open(f):
        mm = re.match(r"numpy shape=(\S+) dims=(\S+) trans=(\S+) threads=(\d+) .* gflops median=([\d.]+)", line)
        if mm:
            key = (mm.group(1), int(mm.group(4)))
            numpy[key] = max(numpy.get(key, 0), float(mm.group(5)))
            if mm.group(1) not in [o[0] for o in order]:
                order.append((mm.group(1), mm.group(2), mm.group(3)))
threads = sorted({k[1] for k in list(kina) + list(numpy)})
head = f"{'shape':<14} {'BxMxKxN':<16} {'tr':<3}" + "".join(f" | T={t}: {'kina':>6} {'OpenBLAS':>8} {'ratio':>5}" for t in threads)
print("GFLOP/s (kina: JMH mean; OpenBLAS: NumPy median round); ratio = kina / OpenBLAS")
print(head)
print("-" * len(head))
for name, dims, trans in order:
    row = f"{name:<14} {dims:<16} {trans:<3}"
    for t in threads:
        kg, ng = kina.get((name, t)), numpy.get((name, t))
        ratio = f"{kg / ng:5.2f}" if kg and ng else "    -"
        row += f" | T={t}: {kg or 0:6.1f} {ng or 0:8.1f} {ratio}"
    print(row)
print(f"raw results: {out}")
PY
