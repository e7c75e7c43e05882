#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz on their seed corpus (tests/fuzz/corpus/),
# in a build of their own (build-fuzz, clang, ASan+UBSan with UB fatal).
#   scripts/fuzz.sh              # CI smoke run: each fuzzer 30 s
#   scripts/fuzz.sh 60           # each fuzzer 60 s
#   scripts/fuzz.sh --runs N     # each fuzzer N executions (results/fuzz.md: 10 M)
#   PTO_FUZZERS="batch_file_fuzz import_fuzz" scripts/fuzz.sh ...   # only these
# Without clang it says so and exits 0: the fuzzers need libFuzzer, which GCC lacks.
# Exit status 1 when a fuzzer finds a crash; its input is left in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang++ >/dev/null; then
  echo "scripts/fuzz.sh: skipped: clang++ not found (apt-get install clang)"
  exit 0
fi
if [ "${1:-}" = --runs ]; then limit=(-runs="${2:?--runs needs a count}"); else limit=(-max_total_time="${1:-30}"); fi
read -r -a fuzzers <<< "${PTO_FUZZERS:-tile_config_fuzz target_fuzz workload_fuzz batch_file_fuzz import_fuzz}"
# The longest input each fuzzer needs: a valid target file is 2.5-2.7 KB (its required
# fields), so target_fuzz keeps 4096; a tile config or a workload key is under 150
# bytes, and 1024 bytes still nest 16 times past the 64-level JSON limit. Shorter
# inputs run faster (results/fuzz.md). A batch file of a few entries with ranges fits in
# 1024; an import holds whole records (an exported one is ~450 bytes, a protocol
# request with its answer ~1.5 KB), so import_fuzz keeps 4096.
declare -A max_len=([tile_config_fuzz]=1024 [target_fuzz]=4096 [workload_fuzz]=1024 [batch_file_fuzz]=1024 [import_fuzz]=4096)
CXX=clang++ CC=clang cmake -S . -B build-fuzz -G Ninja -DPTO_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target "${fuzzers[@]}"
for f in "${fuzzers[@]}"; do
  scratch=build-fuzz/tests/fuzz/corpus_$f
  mkdir -p "$scratch"
  echo "== $f ${limit[*]} -max_len=${max_len[$f]}"
  # -print_final_stats: the figures for results/fuzz.md.
  (cd build-fuzz && tests/fuzz/"$f" "${limit[@]}" -max_len="${max_len[$f]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      "../$scratch" "../tests/fuzz/corpus/$f" 2>&1 | grep -E "^(#|stat::|==|SUMMARY|INFO: Running|Done)" | tail -n 25)
done
