#!/usr/bin/env bash
# Offline tuning figures for results/batch_tuning.md (the batch command, end to end):
#   1. workloads tuned per minute on a batch of 200 sim workloads, --jobs 1 and --jobs 2
#   2. database size per 1,000 workloads (model backend, the same budget)
#   3. a shared --total-budget against an equal split of it: the geometric-mean speedup
#      over the defaults each reaches (sim)
# Usage: bench/batch_bench.sh [PTO_TUNE_BINARY]   (default build/cli/pto-tune)
set -euo pipefail
bin=${1:-build/cli/pto-tune}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
target=ascend910b1

# 200 small sim workloads: matmuls M x 64 x 64 and softmaxes M x 256.
python3 - "$dir" <<'PY'
import sys
d = sys.argv[1]
with open(f"{d}/b200.txt", "w") as f:
    for i in range(100):
        f.write(f"matmul {16 * (i + 1)},64,64 fp16\n")
        f.write(f"softmax {16 * (i + 1)},256\n")
with open(f"{d}/b1000.txt", "w") as f:
    for i in range(500):
        f.write(f"matmul {8 * (i + 1)},64,128 fp16\n")
        f.write(f"softmax {8 * (i + 1)},512\n")
# the shared-budget comparison: mixed sizes, where headroom differs between workloads
with open(f"{d}/mixed.txt", "w") as f:
    for m in (64, 256, 1024):
        for n in (128, 512, 2048):
            f.write(f"matmul {m},{n},256 fp16\n")
    for m in (16, 256, 2048):
        f.write(f"softmax {m},1024\n")
PY

summary() {
  python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
tuned = s["workloads"].get("tuned", 0)
print(f"tuned {tuned}  elapsed {s['elapsed_s']:.1f} s  per minute {60 * tuned / s['elapsed_s']:.1f}"
      f"  measurements {s['measurements']}  geomean speedup {s['geomean_speedup']:.4f}")
PY
}

for jobs in ${JOBS:-1 2}; do
  "$bin" batch "$dir/b200.txt" --target $target --backend sim --budget 4 --jobs $jobs --json --db "$dir/j$jobs.db" > "$dir/j$jobs.json"
  echo "sim, 200 workloads, --budget 4, --jobs $jobs: $(summary "$dir/j$jobs.json")"
done

"$bin" batch "$dir/b1000.txt" --target $target --backend model --budget 4 --json --db "$dir/k.db" > "$dir/k.json"
sqlite3_size=$(stat -c %s "$dir/k.db")
[ -f "$dir/k.db-wal" ] && sqlite3_size=$((sqlite3_size + $(stat -c %s "$dir/k.db-wal")))
echo "model, 1000 workloads, --budget 4: $(summary "$dir/k.json"); database $(( sqlite3_size / 1024 )) KiB (with its WAL)"

for total in ${TOTALS:-48 96 192}; do
  for mode in shared equal; do
    flag=""; [ $mode = equal ] && flag=--equal-split
    "$bin" batch "$dir/mixed.txt" --target $target --backend sim --total-budget $total $flag --json --db "$dir/$mode$total.db" > "$dir/$mode$total.json"
    echo "sim, 12 mixed workloads, --total-budget $total, $mode: $(summary "$dir/$mode$total.json")"
  done
done
