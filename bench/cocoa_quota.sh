#!/bin/sh
# SPDX-License-Identifier: BSL-1.0
# Accuracy against bytes for dml-cocoa's filters under a byte quota: every
# filter at 1 %, 10 % and 100 % of the dense model's bytes per rank and
# round, and no filter (every change, every round), on Fashion-MNIST
# one-vs-rest (all 10 classes, argmax). Prints the markdown table of
# docs/cocoa.md.
#   bench/cocoa_quota.sh [build-dir] [extra dml-cocoa arguments...]
# Defaults: build, 4 in-process ranks, the first 10000 training samples,
# 20 rounds, lambda 1e-3, l1-ratio 0.5, gamma add.
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
tool="$build/examples/cocoa/dml-cocoa"
[ -x "$tool" ] || { echo "cocoa_quota.sh: $tool not found (cmake --build $build --target dml-cocoa)" >&2; exit 1; }
common="--ranks 4 --limit 10000 --rounds 20 --lambda 0.001 --l1-ratio 0.5 --gamma add --report-every 20"
run() {  # filter, quota or -, arguments
  filter=$1 quota=$2
  shift 2
  line=$("$tool" $common "$@" 2>/dev/null | grep '^final:')
  acc=$(echo "$line" | sed 's/.*accuracy=\([0-9.]*\).*/\1/')
  obj=$(echo "$line" | sed 's/.*objective=\([0-9.]*\).*/\1/')
  bytes=$(echo "$line" | sed 's/.*bytes=\([0-9]*\).*/\1/')
  secs=$(echo "$line" | sed 's/.*seconds=\([0-9.]*\).*/\1/')
  printf '| %s | %s | %.4f | %.4f | %s | %.1f |\n' "$filter" "$quota" "$obj" "$acc" "$bytes" "$secs"
}
echo "| filter | quota | objective | test accuracy | bytes sent (all ranks) | seconds |"
echo "|---|---|---|---|---|---|"
run none - "$@"
for filter in magnitude relative random round_robin; do
  for quota in 1 10 100; do
    run "$filter" "$quota %" --filter "$filter" --quota-percent "$quota" "$@"
  done
done
