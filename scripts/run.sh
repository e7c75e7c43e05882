#!/usr/bin/env bash
# The README's run command: installs what is missing, builds, and runs a real job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build/cli/pto-tune run --op matmul --shapes 512,512,512 --dtype fp32 --target host
