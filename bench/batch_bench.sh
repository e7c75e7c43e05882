#!/usr/bin/env bash
# Offline tuning figures for results/batch_tuning.md (the batch command, end to end):
#   1. workloads tuned per minute on a batch of 200 sim workloads, --jobs 1 and --jobs 2
#      (and with the same measurements as one shared --total-budget)
#   2. database size per 1,000 workloads (model backend, the same budget)
#   3. a shared --total-budget against an equal split of it: the geometric-mean speedup
#      over the defaults each reaches (sim), and how the shared budget was spread
#   4. how busy --jobs keeps its workers on the README's batch shape (issue 28): four
#      LLM matmuls and a softmax, M = 1..8192 in powers of two, 70 sim workloads,
#      budget 16: wall time, the workers' busy fraction, the critical path, CPU time
# Usage: bench/batch_bench.sh [PTO_TUNE_BINARY]   (default build/cli/pto-tune)
#   PARTS="rate size shared busy" picks parts; JOBS, TOTALS, BUSY_JOBS override their lists.
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
# the shared-budget comparison: 16 workloads of mixed ops and sizes, where the headroom
# over the default differs much between workloads
with open(f"{d}/mixed.txt", "w") as f:
    for shape in ("1024,1024,256", "512,2048,256", "64,2048,512", "2048,64,256", "256,256,1024", "128,512,128"):
        f.write(f"matmul {shape} fp16\n")
    for op, shape in (("softmax", "16,1024"), ("softmax", "2048,1024"), ("softmax", "256,4096"),
                      ("layernorm", "512,1024"), ("rmsnorm", "1024,512"), ("gelu", "64,256"),
                      ("gelu", "1024,1024"), ("add", "32,128"), ("add", "2048,2048"), ("sum", "256,1024")):
        f.write(f"{op} {shape}\n")
# the README's batch shape: Llama-2-7B's QKV, attention-out, MLP up and MLP down
# matmuls and a softmax over the hidden size, M = 1..8192 in powers of two
with open(f"{d}/llm70.txt", "w") as f:
    for shape in ("12288,4096", "4096,4096", "11008,4096", "4096,11008"):
        f.write(f"matmul M=1..8192:pow2,{shape} fp16\n")
    f.write("softmax M=1..8192:pow2,4096\n")
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

parts=${PARTS:-rate size shared busy}
has() { [[ " $parts " == *" $1 "* ]]; }

if has rate; then
for jobs in ${JOBS:-1 2}; do
  "$bin" batch "$dir/b200.txt" --target $target --backend sim --budget 4 --jobs $jobs --json --db "$dir/j$jobs.db" > "$dir/j$jobs.json"
  echo "sim, 200 workloads, --budget 4, --jobs $jobs: $(summary "$dir/j$jobs.json")"
done
# the same measurements as one shared budget: the scheduler's rounds and sessions
"$bin" batch "$dir/b200.txt" --target $target --backend sim --total-budget 800 --json --db "$dir/t800.db" > "$dir/t800.json"
echo "sim, 200 workloads, --total-budget 800, --jobs 1: $(summary "$dir/t800.json")"
fi

if has size; then
"$bin" batch "$dir/b1000.txt" --target $target --backend model --budget 4 --json --db "$dir/k.db" > "$dir/k.json"
sqlite3_size=$(stat -c %s "$dir/k.db")
[ -f "$dir/k.db-wal" ] && sqlite3_size=$((sqlite3_size + $(stat -c %s "$dir/k.db-wal")))
echo "model, 1000 workloads, --budget 4: $(summary "$dir/k.json"); database $(( sqlite3_size / 1024 )) KiB (with its WAL)"
fi

spread() {
  python3 - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("  " + ", ".join(f"{r['workload'].split('|')[0]} {r['workload'].split('|')[1]}: {r.get('measured', 0)} "
                       f"({r.get('speedup_vs_default', 1):.2f}x)" for r in s["results"]))
PY
}

if has shared; then
for total in ${TOTALS:-64 128 256}; do
  for mode in shared equal; do
    flag=""; [ $mode = equal ] && flag=--equal-split
    "$bin" batch "$dir/mixed.txt" --target $target --backend sim --total-budget $total $flag --json --db "$dir/$mode$total.db" > "$dir/$mode$total.json"
    echo "sim, 16 mixed workloads, --total-budget $total, $mode: $(summary "$dir/$mode$total.json")"
    spread "$dir/$mode$total.json"
  done
done
fi

if has busy; then
for jobs in ${BUSY_JOBS:-1 2}; do
  "$bin" batch "$dir/llm70.txt" --target $target --backend sim --budget 16 --jobs $jobs --json --db "$dir/busy$jobs.db" > "$dir/busy$jobs.json"
  python3 - "$dir/busy$jobs.json" "$jobs" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
w, c = s["workers"], s["critical_path"]
print(f"sim, 70 LLM workloads, --budget 16, --jobs {sys.argv[2]}: elapsed {s['elapsed_s']:.1f} s"
      f"  busy fraction {w['busy_fraction']:.3f} (busy s {', '.join(f'{b:.1f}' for b in w['busy_s'])})"
      f"  critical path {c['seconds']:.1f} s ({c['workload']})  CPU {w['cpu_s']:.1f} s on {w['cores']} cores"
      f"  tuned {s['workloads'].get('tuned', 0)}")
PY
done
fi
