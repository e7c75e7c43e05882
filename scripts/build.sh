#!/usr/bin/env bash
# Configures and builds pto-tune (Release) into build/: every target, or only those
# named with --target (scripts/run.sh builds the two programs it runs). Other arguments
# go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
configure=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--target" ] && [ $# -gt 1 ]; then targets+=(--target "$2"); shift 2; else configure+=("$1"); shift; fi
done
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${configure[@]}" >/dev/null
cmake --build build -j "$(nproc)" "${targets[@]}"
