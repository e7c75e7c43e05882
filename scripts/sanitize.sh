#!/usr/bin/env bash
# Runs the test suite under sanitizers: every test with ASan+UBSan (GCC), and the
# parallel parts — the CPU runtime's scheduler, the end-to-end property test, the
# isolated measurement children, the sim runner's worker threads, the JIT's lookup chain
# and its memo under many threads, the predictor's lazy refit, the batch engine's shared
# claim file, the tuner's parallel scoring — with TSan (clang + LLVM's libomp and its Archer tool,
# which make OpenMP visible to TSan). Slow: a separate build of everything, twice.
#   scripts/sanitize.sh [asan|tsan]    (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
which="${1:-both}"

if [ "$which" != tsan ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPTO_SANITIZE=address,undefined \
        -DPTO_BUILD_BENCH=OFF >/dev/null
  cmake --build build-asan -j "$(nproc)"
  # The Python tests would need libasan preloaded into the interpreter (results/robustness.md).
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -E '^python_'
fi

if [ "$which" != asan ]; then
  dpkg -s clang libomp-dev libclang-rt-14-dev >/dev/null 2>&1 ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libomp-dev libclang-rt-14-dev
  cmake -S . -B build-tsan -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DPTO_SANITIZE=thread -DPTO_BUILD_BENCH=OFF >/dev/null
  tests=(core_runtime_scheduler_test core_runtime_execute_graph_test core_runtime_matmul_test core_runtime_errors_test
         core_end_to_end_test measure_isolation_test measure_runner_test core_config_chain_test core_jit_test
         db_config_lookup_test search_model_pick_test cost_model_predictor_test batch_batch_run_test search_tuner_test)
  cmake --build build-tsan -j "$(nproc)" --target "${tests[@]}"
  archer=$(find /usr/lib/llvm-*/lib -name libarcher.so | head -n1)
  # die_after_fork=0: the cpu runner forks, then starts a fresh thread in the child.
  export OMP_TOOL_LIBRARIES="$archer" TSAN_OPTIONS="die_after_fork=0 suppressions=$PWD/tests/sanitizers/tsan.supp"
  for t in "${tests[@]}"; do build-tsan/tests/"$t"; done
fi
