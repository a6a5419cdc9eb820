#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Installs the Debian packages dml needs to build, test and run its examples.
# Idempotent: packages already present are skipped, and the package index is
# refreshed at most once per run (only when something is missing).
#   scripts/setup-debian.sh           build, test and examples
#   scripts/setup-debian.sh --bench   and the benchmarks' peers (bench/run)
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  python3-minimal
  libboost-dev libboost-mpi-dev libopenmpi-dev openmpi-bin
  libeigen3-dev xtensor-dev
  libibverbs-dev
  catch2
  libcli11-dev nlohmann-json3-dev  # the examples' command lines, dml-topology's JSON (never the library)
  dataset-fashion-mnist
  zlib1g-dev
  clang libclang-rt-14-dev  # scripts/fuzz.sh, ctest 'fuzz: libFuzzer': libFuzzer and the sanitizers' runtimes
)
# --bench: also the peers bench/run measures dml against (Gloo, PyTorch for
# DDP, liblinear) and matplotlib for its plots.
if [[ ${1:-} == --bench ]]; then
  packages+=(libgloo-dev python3-torch python3-numpy python3-matplotlib liblinear-tools)
elif (($#)); then
  echo "setup-debian: unknown argument '$1' (only --bench)" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup-debian: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "setup-debian: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "setup-debian: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup-debian: done"
