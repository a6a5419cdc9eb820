#!/bin/sh
# SPDX-License-Identifier: BSL-1.0
# Detection time of a SIGKILLed process, fixed timeouts against the adaptive
# timeout (docs/fault-tolerance.md#an-adaptive-timeout): dml-least-squares
# under mpi_rma with 6 processes, notify_ack over halton, rank 3 killed from
# outside after epoch 2 (test/mpi/kill_driver.sh). Settings:
#   fixed 1 s     DML_HEARTBEAT_TIMEOUT_MS=1000 (the default), wait limit 60 s
#   fixed 5 s     DML_HEARTBEAT_TIMEOUT_MS=5000, a choice for slow machines
#   adaptive      DML_ADAPTIVE_TIMEOUT=on (factor 10, floor 1 s, ceiling 60 s)
#   adaptive_f4   DML_ADAPTIVE_TIMEOUT=1000:60000:4 (factor 4)
# REPEATS runs of each, taking turns. Prints one markdown row per setting:
# runs survived (exit 0, loss within 0.27, the view change reported), the
# median and largest detection time the lowest survivor reported, and the
# median wall time of the run.
#
#   bench/adaptive_timeout.sh [BUILD_DIR] [REPEATS]
set -eu
build=${1:-build}
repeats=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
bin="$build/examples/least_squares/dml-least-squares"
[ -x "$bin" ] || { echo "no $bin: cmake --build $build --target dml-least-squares" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() {  # name, then VAR=value settings for the run
  name=$1
  shift
  start=$(date +%s.%N)
  if env "$@" bash "$here/../test/mpi/kill_driver.sh" 3 2 0.27 120 -- \
      mpiexec --oversubscribe --enable-recovery -n 6 "$bin" --transport mpi_rma --consistency notify_ack \
      --topology halton --exchange models --epochs 20 --samples 32768 >"$out/log" 2>&1; then
    end=$(date +%s.%N)
    us=$(sed -n 's/^view 1: member 3 removed.*detected after \([0-9.]*\) us.*/\1/p' "$out/log" | head -1)
    echo "$us $(echo "$end - $start" | bc)" >>"$out/$name"
  else
    echo "failed" >>"$out/$name"
  fi
}

for r in $(seq 1 "$repeats"); do
  run fixed_1s DML_HEARTBEAT_TIMEOUT_MS=1000
  run fixed_5s DML_HEARTBEAT_TIMEOUT_MS=5000
  run adaptive DML_ADAPTIVE_TIMEOUT=on
  run adaptive_f4 DML_ADAPTIVE_TIMEOUT=1000:60000:4
done

echo "| setting | survived | detection median (s) | detection max (s) | run median (s) |"
echo "|---|---|---|---|---|"
for name in fixed_1s fixed_5s adaptive adaptive_f4; do
  awk -v name="$name" -v runs="$repeats" '
    $1 == "failed" { next }
    { d[++n] = $1 / 1e6; w[n] = $2; if ($1 / 1e6 > max) max = $1 / 1e6 }
    function median(a, k,   i, j, t) {
      for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    END {
      if (n == 0) { printf "| %s | 0 of %d | - | - | - |\n", name, runs; exit }
      printf "| %s | %d of %d | %.3f | %.3f | %.1f |\n", name, n, runs, median(d, n), max, median(w, n)
    }' "$out/$name"
done
