#!/usr/bin/env bash
# Installs the Debian packages pto-tune builds with, only those that are missing.
set -euo pipefail
packages=(g++ cmake ninja-build libboost-program-options-dev libsqlite3-dev nlohmann-json3-dev
          libgtest-dev libbenchmark-dev libopenblas-dev pybind11-dev python3-dev python3-pytest)
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
