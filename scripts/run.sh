#!/usr/bin/env bash
# The README's run command: installs what is missing, builds, and runs real tuning jobs
# into the default tuning database (~/.cache/pto-tune/tune.db, or $PTO_TUNE_DB):
# a 1024³ fp32 matmul tuned on this machine's CPU (every candidate measured for real
# and verified against the reference), the 4096³ fp16 matmul tuned for an Ascend 910B1
# on the NPU simulator (simulated), then the JIT's lookup finding both — and, for a
# shape nobody tuned, the nearest tuned one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh --target pto-tune --target pto-tune-worker  # only what it runs: not the tests or benchmarks
pto=build/cli/pto-tune
set -x
$pto --op matmul --shapes 1024,1024,1024 --budget 24
$pto --op matmul --shapes 4096,4096,4096 --target ascend910b1 --budget 48
$pto lookup --op matmul --shapes 1024,1024,1024
$pto lookup --op matmul --shapes 4096,4096,4096 --target ascend910b1
$pto lookup --op matmul --shapes 3072,4096,4096 --target ascend910b1
