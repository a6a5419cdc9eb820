#!/bin/sh
# SPDX-License-Identifier: BSL-1.0
# Fusion and overlap on the MLP (docs/trainers.md#exchange-fused-and-overlapped):
# dml-mlp on Fashion-MNIST, 8 ranks (in-process threads, and 8 processes of
# mpi_rma under mpiexec), EPOCHS epochs, with --exchange layers (a vector
# per layer: today's path before vector groups), fused (the layers in one
# vector group, one exchange per step) and overlapped (fused, each step's
# gradient exchange running in the background while the next gradient is
# computed). The configurations take turns within each of REPEATS repeats.
# Prints one markdown row per configuration: the medians of the training
# seconds (dml-mlp's final line: from the first step to the last epoch's
# end, start-up and evaluation of epoch 0 excluded), of the time per step,
# of the final accuracy, and the speed-up over layers in the same run.
#
#   bench/mlp_exchange.sh [BUILD_DIR] [REPEATS] [EPOCHS]
set -eu
build=${1:-build}
repeats=${2:-3}
epochs=${3:-1}
bin="$build/examples/mlp/dml-mlp"
[ -x "$bin" ] || { echo "no $bin: cmake --build $build --target dml-mlp" >&2; exit 1; }
command -v mpiexec >/dev/null || { echo "no mpiexec: apt-get install openmpi-bin" >&2; exit 1; }
root=""
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for r in $(seq 1 "$repeats"); do
  for transport in inproc mpi_rma; do
    for how in layers fused overlapped; do
      log="$out/$transport.$how.$r.log"
      if [ "$transport" = inproc ]; then
        "$bin" --ranks 8 --epochs "$epochs" --exchange "$how" >"$log" 2>&1
      else
        mpiexec -n 8 --oversubscribe $root "$bin" --transport mpi_rma --epochs "$epochs" --exchange "$how" >"$log" 2>&1
      fi
      echo "repeat $r: $transport $how: $(grep '^final:' "$log")" >&2
    done
  done
done

python3 - "$out" "$repeats" <<'PY'
import re, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
def run(transport, how, r):
    text = open(f"{out}/{transport}.{how}.{r}.log").read()
    final = re.search(r"^final: accuracy=([0-9.]+) .*seconds=([0-9.]+)", text, re.M)
    head = re.search(r"(\d+) training", text)
    cb = re.search(r"cb-size (\d+)", text)
    epochs = int(re.search(r"epochs=(\d+)", text).group(1))
    steps = epochs * (int(head.group(1)) // (8 * int(cb.group(1))))
    return float(final.group(2)), float(final.group(2)) / steps * 1e3, float(final.group(1))
print("| transport | exchange | seconds (median) | ms per step | accuracy | speed-up over layers |")
print("|---|---|---:|---:|---:|---:|")
for transport in ("inproc", "mpi_rma"):
    base = None
    for how in ("layers", "fused", "overlapped"):
        rs = [run(transport, how, r) for r in range(1, repeats + 1)]
        sec, ms, acc = (statistics.median(x[i] for x in rs) for i in range(3))
        base = base or sec
        print(f"| {transport} | {how} | {sec:.3f} | {ms:.2f} | {acc:.4f} | {base / sec:.2f}x |")
PY
