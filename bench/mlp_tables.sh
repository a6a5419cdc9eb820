#!/bin/sh
# SPDX-License-Identifier: BSL-1.0
# GeePS's per-layer tables (Cui's thesis §4.4.4, Fig. 4.12) at small scale:
# dml-mlp on Fashion-MNIST with its parameters in distributed vectors
# (--params vectors, the default trainer), in one table (--params table:
# every layer's update leaves at the end of the backward pass) and in one
# table per layer (--params tables: a layer's update leaves as soon as its
# gradient is ready). Under bsp, at 2 and 4 in-process ranks and, when
# mpiexec is there, 2 MPI processes over mpi_rma. The three modes take
# turns within each repeat, so that a change in the machine's load hits
# them alike. Prints one markdown row per (where, mode): the median seconds
# per epoch, its ratio to vectors' and (tables) to one table's in the same
# setting (the median of the ratios of runs that ran side by side), the fastest and slowest run, the median final test accuracy, and
# for the table modes the seconds the members waited in the tables per
# member and epoch (reads held back by bsp, and the reports' sync), and the
# MiB each member wrote per epoch (vectors: its scatters; tables: its
# updates into the owners' rings; rows fetched by one-sided reads are not
# counted). Exits 1 when a run fails.
#
#   bench/mlp_tables.sh [--quick] [--no-mpi] [--repeats R] [--epochs E] [--limit N]
#                       [--bin PATH | --build DIR]
#
# --quick (ctest's smoke run): 1000 samples, one epoch, one repeat, in-process
# only, evaluated on 2000 test samples.
set -eu
quick=0 mpi=1 repeats=3 epochs=3 limit=20000 bin="" build=build
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --no-mpi) mpi=0 ;;
    --repeats) repeats=$2; shift ;;
    --epochs) epochs=$2; shift ;;
    --limit) limit=$2; shift ;;
    --bin) bin=$2; shift ;;
    --build) build=$2; shift ;;
    *) echo "mlp_tables.sh: unknown argument '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$bin" ] || bin="$build/examples/mlp/dml-mlp"
[ -x "$bin" ] || { echo "mlp_tables.sh: no $bin (cmake --build $build --target dml-mlp)" >&2; exit 2; }
test_limit=""
if [ "$quick" = 1 ]; then
  repeats=1 epochs=1 limit=1000 mpi=0 test_limit="--test-limit 2000"
fi
if [ "$mpi" = 1 ] && ! command -v mpiexec >/dev/null 2>&1; then
  echo "mlp_tables.sh: no mpiexec, in-process ranks only" >&2
  mpi=0
fi
mpiexec_root=""
[ "$(id -u)" -eq 0 ] && mpiexec_root=--allow-run-as-root
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() {  # where mode repeat: appends "where mode final-line tables-line" to $out/rows
  log="$out/$1.$2.$3.log"
  if [ "$1" = mpi_rma-2 ]; then
    mpiexec --oversubscribe $mpiexec_root -n 2 "$bin" --transport mpi_rma --params "$2" \
      --limit "$limit" $test_limit --epochs "$epochs" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
  else
    "$bin" --ranks "${1#inproc-}" --params "$2" --limit "$limit" $test_limit --epochs "$epochs" >"$log" 2>&1 ||
      { cat "$log" >&2; exit 1; }
  fi
  printf '%s %s %s | %s\n' "$1" "$2" "$(grep '^final:' "$log" | tail -1)" \
    "$(grep '^tables:' "$log" | tail -1)" >>"$out/rows"
}

wheres="inproc-2 inproc-4"
[ "$mpi" = 1 ] && wheres="$wheres mpi_rma-2"
for r in $(seq 1 "$repeats"); do
  for w in $wheres; do
    for m in vectors table tables; do run "$w" "$m" "$r"; done
  done
done

python3 - "$out/rows" "$epochs" "$limit" <<'PY'
import re, statistics, sys
med = lambda xs: statistics.median(xs)
rows, epochs, limit = {}, int(sys.argv[2]), sys.argv[3]
for line in open(sys.argv[1]):
    where, mode, rest = line.split(" ", 2)
    final, tables = rest.split(" | ")
    f = dict(kv.split("=", 1) for kv in final.split()[1:])
    members = 2 if where.endswith("-2") else 4
    m = re.search(r"reads waited \(([0-9.]+) s\)", tables)
    wait = float(m.group(1)) / members / epochs if m else float("nan")
    mib = float(f["bytes"]) / 2**20 / members / epochs
    rows.setdefault((where, mode), []).append((float(f["seconds"]) / epochs, float(f["accuracy"]), wait, mib))
# Paired ratios: run r of a mode against run r of the baseline, which ran
# next to it, so that load that changes between repeats cancels.
paired = lambda where, mode, base: med(a[0] / b[0] for a, b in zip(rows[(where, mode)], rows[(where, base)]))
print(f"{limit} training samples, {epochs} epochs, bsp, medians of {len(next(iter(rows.values())))} runs")
print()
print("| where | params | s / epoch | vs vectors | vs one table | min-max s / epoch | accuracy "
      "| waited s / member / epoch | MiB sent / member / epoch |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for (where, mode), rs in rows.items():
    t = med(r[0] for r in rs)
    vs_one = f"{paired(where, mode, 'table'):.2f}" if mode == "tables" else "-"
    wait = f"{med(r[2] for r in rs):.3f}" if mode != "vectors" else "-"
    mib = f"{med(r[3] for r in rs):.1f}"
    print(f"| {where} | {mode} | {t:.3f} | {paired(where, mode, 'vectors'):.2f} | {vs_one} | {min(r[0] for r in rs):.3f}-"
          f"{max(r[0] for r in rs):.3f} | {med(r[1] for r in rs):.4f} | {wait} | {mib} |")
PY
