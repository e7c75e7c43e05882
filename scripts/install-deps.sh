#!/usr/bin/env bash
# Installs the Debian packages pto-tune builds with, only those that are missing.
# --test adds chromium (about 80 MB to download), which only the report test uses
# (it renders `pto-tune report` headless and skips, saying so, where chromium is absent).
set -euo pipefail
packages=(g++ cmake ninja-build libboost-program-options-dev libsqlite3-dev nlohmann-json3-dev
          libgtest-dev libbenchmark-dev libopenblas-dev
          pybind11-dev python3-dev python3-pytest  # the Python package and its tests
          python3-yaml)  # python3-yaml: tests/cli/batch_test.cpp parses the Kubernetes manifest
[ "${1:-}" = "--test" ] && packages+=(chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
