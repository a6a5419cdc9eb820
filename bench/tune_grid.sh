#!/bin/sh
# SPDX-License-Identifier: BSL-1.0
# The exhaustive grid that docs/tuning.md compares `dml-logreg --tune`
# with: plain dml-logreg runs, one after another, over lr x cb-size, each
# to completion. Prints per run the setting, its final accuracy and the
# wall seconds since the grid started, so the time at which the grid first
# reaches a given accuracy can be read off.
# Usage: bench/tune_grid.sh BUILD_DIR [EPOCHS] [RANKS]
set -eu
bin="${1:?usage: tune_grid.sh BUILD_DIR [EPOCHS] [RANKS]}/examples/logreg/dml-logreg"
epochs="${2:-12}"
ranks="${3:-8}"
start=$(date +%s.%N)
for lr in 0.01 0.1 1 10; do
  for cb in 64 256 1024; do
    acc=$("$bin" --ranks "$ranks" --epochs "$epochs" --lr "$lr" --cb-size "$cb" |
      sed -n 's/^final: accuracy=\([0-9.]*\).*/\1/p')
    now=$(date +%s.%N)
    echo "lr $lr cb-size $cb accuracy $acc elapsed $(echo "$now - $start" | bc) s"
  done
done
