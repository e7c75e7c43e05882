#!/usr/bin/env bash
# The README's run command: installs what is missing, builds, and runs real jobs —
# a matmul measured on this machine's CPU (verified against the reference), the same
# kernel simulated for an Ascend 910B1, and the cost model's explanation of it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
pto=build/cli/pto-tune
config='{"cube":{"m":[128,128],"k":[64,256],"n":[256,256]},"nbuffer":2}'
set -x
$pto run --op matmul --shapes 1024,1024,1024 --dtype fp32 --target host
$pto run --op matmul --shapes 6144,6144,6144 --dtype fp16 --target ascend910b1 --config "$config"
$pto explain --op matmul --shapes 6144,6144,6144 --dtype fp16 --target ascend910b1 --config "$config"
