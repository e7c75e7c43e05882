#!/usr/bin/env bash
# Regenerates the raw figures behind results/ on this machine: builds Release, runs
# every bench program and writes each one's output, headed by the machine, the command
# and the date, into results/generated/<name>.txt; then tunes a small suite into a
# throwaway tuning database and writes its report (results/generated/report/). The
# hand-written analyses (results/*.md) quote these outputs; results/README.md is the
# index. Simulated figures say so in their output.
#
#   results/run.sh [--only NAME[,NAME...]] [--build DIR] [--out DIR]
#
# --out writes elsewhere than results/generated: figures of another machine beside
# this one's (results/generated/zen5 holds a Zen 5 VM's).
#
# NAME: tuning, ranking, ranking_cpu, runtime_steps, cost_model, lookup, cpu_matmul, sim_calibration,
# sim_speed, measure_overhead, validate, batch, flash_attention, attention_host, python_lookup, report. The whole run takes hours on a 2-core machine (tuning and
# ranking dominate); --only picks parts.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
only=""
out=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --only) only=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    *) echo "usage: results/run.sh [--only NAME[,NAME...]] [--build DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done
out=${out:-$root/results/generated}
mkdir -p "$out"

wanted() { [[ -z $only || ",$only," == *",$1,"* ]]; }

# The commit, and whether sources differ from it (this run's own outputs aside).
machine() {
  echo "machine: $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
    "family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') model $(grep -m1 '^model[[:space:]]' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
    "$(grep -m1 -o -w 'avx512f' /proc/cpuinfo || grep -m1 -o -w 'avx2' /proc/cpuinfo || echo 'no AVX2')"
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "commit: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet -- . ':!results/generated' || echo ' (with local changes)')"
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
}

# record NAME COMMAND...: runs COMMAND from the repository root, writes generated/NAME.txt
# headed by the machine and the command.
record() {
  local name=$1
  shift
  wanted "$name" || return 0
  local file=$out/$name.txt
  echo "== $name: $*" >&2
  { machine; echo "command: $*"; echo; (cd "$root" && "$@"); } >"$file.tmp" 2>&1
  mv "$file.tmp" "$file"
}

# run NAME TARGET ARGS...: builds the bench (or test) program TARGET and records it.
run() {
  local name=$1 target=$2
  shift 2
  wanted "$name" || return 0
  cmake --build "$build" -j"$(nproc)" --target "$target" >/dev/null
  local bin=$build/bench/$target
  [[ -x $bin ]] || bin=$build/tests/$target
  record "$name" "${bin#"$root"/}" "$@"
}

# build TARGET...: for the parts that run the CLI or the Python package.
build() { cmake --build "$build" -j"$(nproc)" --target "$@" >/dev/null; }

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null

run tuning tuning_bench --seeds 5
run ranking ranking_bench --seed 1
run ranking_cpu ranking_cpu_bench --seed 1 --save "$out/ranking_cpu_seed1.jsonl"
run runtime_steps runtime_steps_bench --benchmark_repetitions=10 --benchmark_report_aggregates_only=true \
  --benchmark_enable_random_interleaving=true
run cost_model cost_model_bench --benchmark_filter='Score|ModelOnly|Estimate' \
  --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
run lookup lookup_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
# OpenBLAS picks its kernels by CPU model, and on an unknown model in a VM falls back to
# a slow generic one: name the AVX-512 kernels where the CPU has AVX-512 (on a CPU
# without it they end in SIGILL), else let OpenBLAS detect.
if [[ -z ${OPENBLAS_CORETYPE:-} ]] && grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SKYLAKEX; fi
OPENBLAS_NUM_THREADS=2 run cpu_matmul matmul_bench
run sim_calibration sim_bench --benchmark_filter=Guide
run sim_speed sim_bench
run measure_overhead measure_bench --benchmark_min_time=1
if wanted validate || wanted batch; then build pto-tune; fi
record validate "${build#"$root"/}/cli/pto-tune" validate --cross-validate
record batch bench/batch_bench.sh "${build#"$root"/}/cli/pto-tune"
if wanted flash_attention; then build pto-tune; fi
record flash_attention bench/flash_attention_bench.sh "${build#"$root"/}/cli/pto-tune"
# flash_attention against attention on this CPU, each at the config its tuning chose (cpu backend, measured).
if wanted attention_host; then build pto-tune attention_host_bench; fi
host_db=$(mktemp -d)/tune.db
record attention_host bash -c "b=${build#"$root"/}; \$b/cli/pto-tune tune --op flash_attention --shapes 1,8,2048,2048,64 --db $host_db && \$b/cli/pto-tune tune --op attention --shapes 1,8,2048,64 --db $host_db && PTO_TUNE_DB=$host_db \$b/bench/attention_host_bench"
rm -rf "$(dirname "$host_db")"
if wanted python_lookup; then build _pto_tune; fi
PYTHONPATH=$build/python record python_lookup python3 bench/python_lookup.py

if wanted report; then
  echo "== report: a small tuning suite (model and sim backends, simulated) and its report" >&2
  cmake --build "$build" -j"$(nproc)" --target pto-tune >/dev/null
  db=$(mktemp -d)/tune.db
  # --retune: each strategy runs its own search, not on from the database's records of the last.
  for strategy in random topk evolve; do
    for shapes in 512,512,512 1024,1024,1024 300,700,500; do
      "$build/cli/pto-tune" tune --op matmul --shapes "$shapes" --target ascend910b1 --backend sim \
        --strategy "$strategy" --budget 24 --retune --db "$db" >/dev/null
    done
    "$build/cli/pto-tune" tune --op softmax --shapes 256,4096 --target ascend910b1 --backend sim \
      --strategy "$strategy" --budget 16 --retune --db "$db" >/dev/null
    "$build/cli/pto-tune" tune --op matmul --shapes 2048,2048,2048 --target ascend910b1 --backend model \
      --strategy "$strategy" --budget 32 --retune --db "$db" >/dev/null
  done
  "$build/cli/pto-tune" report --db "$db" --out "$out/report"
  rm -rf "$(dirname "$db")"
fi
echo "results/run.sh: wrote $out" >&2
