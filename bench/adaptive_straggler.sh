#!/bin/sh
# SPDX-License-Identifier: BSL-1.0
# The straggler experiment of docs/adaptive.md: dml-logreg on Fashion-MNIST
# with 8 in-process ranks under bsp, asp and adaptive: at the default
# --cb-size 256 (computing dominates) with one member 4x slower at every
# local step (--straggler 7@4) and with a member drawn anew at each step
# (--straggler random@4); at --cb-size 32 (exchanging dominates) without a
# straggler and with 7@4; plus bsp at 256 without a straggler. REPEATS runs
# of each. Prints one markdown row per configuration: the median final
# accuracy and its difference from bsp's in the same setting, the median
# seconds of the 10 epochs and to the target accuracy (the first epoch
# whose accuracy reaches TARGET), and the adaptive policy's switches in the
# last run.
#
# MODE seconds=T runs the experiment for a time instead (dml-logreg
# --seconds T --reports 10T, rows 0.1 s apart): members are not tied to equal work, so under
# asp, ssp and adaptive the fast ones may take more steps than the
# straggler. bsp, asp, ssp (--slack 2) and adaptive at the default
# --cb-size 256, with --straggler 7@4 and without, taking turns within each
# repeat. One row per configuration: the medians of the final accuracy,
# its difference from bsp's in the same setting, the seconds to TARGET (the
# first row reaching it), and the local steps of the fast
# members (their mean) and of member 7.
#
# CB_SIZE (seconds mode only, default 256) sets --cb-size: at 4096 computing
# dominates a step, so a straggler slows bsp down on this 2-core machine.
#
# PLOT=OUT.png (seconds mode) also draws the traces of the last repeat's
# runs with the straggler (scripts/plot.sh: training loss and test accuracy
# against seconds).
#
#   bench/adaptive_straggler.sh [BUILD_DIR] [REPEATS] [TARGET] [MODE] [CB_SIZE]   MODE: epochs (default) | seconds=T
set -eu
build=${1:-build}
repeats=${2:-3}
target=${3:-0.835}
mode=${4:-epochs}
cb=${5:-256}
bin="$build/examples/logreg/dml-logreg"
[ -x "$bin" ] || { echo "no $bin: cmake --build $build --target dml-logreg" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() {  # name consistency extra-arguments...: run number $r
  name=$1 consistency=$2
  shift 2
  "$bin" --ranks 8 --consistency "$consistency" --csv "$out/$name.$r.csv" "$@" >"$out/$name.$r.log" 2>"$out/$name.$r.err"
}

case $mode in
  epochs) ;;
  seconds=*)
    budget=${mode#seconds=}
    reports=$(awk -v t="$budget" 'BEGIN { r = int(t * 10 + 0.5); print (r < 2 ? 2 : r) }')  # 0.1 s apart
    for r in $(seq 1 "$repeats"); do
      for straggler in none 7@4; do
        for p in bsp asp ssp adaptive; do
          set -- --seconds "$budget" --reports "$reports" --cb-size "$cb"
          [ "$straggler" = none ] || set -- "$@" --straggler "$straggler"
          run "time_${straggler%@4}_$p" "$p" "$@"
        done
      done
    done
    python3 - "$out" "$repeats" "$target" "$budget" <<'PY'
import csv, statistics, sys
out, repeats, target, budget = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
def run(name, r):
    with open(f"{out}/{name}.{r}.csv") as f:
        rows = list(csv.DictReader(f))
    steps, switches = [], ""
    with open(f"{out}/{name}.{r}.log") as f:
        for line in f:
            if line.startswith("steps per member:"):
                steps = [int(x) for x in line.split(":")[1].split()]
            if line.startswith("adaptive:"):
                parts = line.strip().split("; ")
                switches = parts[0][len("adaptive: "):] + ("; first: " + "; ".join(parts[1:4]) if len(parts) > 1 else "")
    hit = [float(x["seconds"]) for x in rows if float(x["accuracy"]) >= target]
    return float(rows[-1]["accuracy"]), hit[0] if hit else float("inf"), statistics.mean(steps[:-1]), steps[-1], switches
def summary(name):
    rs = [run(name, r) for r in range(1, repeats + 1)]
    return [statistics.median(x[i] for x in rs) for i in range(4)] + [rs[-1][4]]
print(f"| straggler | consistency | accuracy (median) | vs bsp | seconds to {target} | local steps, members 0-6 / member 7 | switches (last run) |")
print("|---|---|---|---|---|---|---|")
for tag, label in (("none", "none"), ("7", "member 7, 4x")):
    base = summary(f"time_{tag}_bsp")[0]
    for p in ("bsp", "asp", "ssp", "adaptive"):
        a, t, fast, slow, sw = summary(f"time_{tag}_{p}")
        print(f"| {label} | {p} | {a:.4f} | {a - base:+.4f} | {t:.2f} | {fast:.0f} / {slow:.0f} | {sw} |")
PY
    if [ -n "${PLOT:-}" ]; then
      mkdir "$out/plot"
      for p in bsp asp ssp adaptive; do cp "$out/time_7_$p.$repeats.csv" "$out/plot/$p.csv"; done
      PLOT_METRIC_RANGE=${PLOT_METRIC_RANGE:-[0.78:0.86]} PLOT_LOSS_RANGE=${PLOT_LOSS_RANGE:-[0.35:0.6]} \
        "$(dirname "$0")/../scripts/plot.sh" "$PLOT" "$out/plot/bsp.csv" "$out/plot/asp.csv" "$out/plot/ssp.csv" \
        "$out/plot/adaptive.csv" >&2
    fi
    exit 0 ;;
  *) echo "MODE: epochs or seconds=T, not '$mode'" >&2; exit 2 ;;
esac

# cb-size 256 (the default): computing dominates; cb-size 32: exchanging
# does. The configurations take turns within each repeat, so that a change
# in the machine's load hits all of them alike.
for r in $(seq 1 "$repeats"); do
  run none_256_bsp bsp
  for p in bsp asp adaptive; do
    run "7_256_$p" "$p" --straggler 7@4
    run "random_256_$p" "$p" --straggler random@4
    run "none_32_$p" "$p" --cb-size 32
    run "7_32_$p" "$p" --cb-size 32 --straggler 7@4
  done
done

python3 - "$out" "$repeats" "$target" <<'PY'
import csv, statistics, sys, glob, os
out, repeats, target = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def runs(name):
    rows = []
    for r in range(1, repeats + 1):
        with open(f"{out}/{name}.{r}.csv") as f:
            rows.append(list(csv.DictReader(f)))
    return rows
def summary(name):
    rs = runs(name)
    acc = statistics.median(float(r[-1]["accuracy"]) for r in rs)
    secs = statistics.median(float(r[-1]["seconds"]) for r in rs)
    to_target = []
    for r in rs:
        hit = [float(x["seconds"]) for x in r if float(x["accuracy"]) >= target]
        to_target.append(hit[0] if hit else float("inf"))
    return acc, secs, statistics.median(to_target)
def switches(name):
    with open(f"{out}/{name}.{repeats}.log") as f:
        for line in f:
            if line.startswith("adaptive:"):
                parts = line.strip().split("; ")
                return parts[0][len("adaptive: "):] + ("; first: " + "; ".join(parts[1:4]) if len(parts) > 1 else "")
    return ""
print(f"| straggler | cb-size | consistency | accuracy (median) | vs bsp | seconds, 10 epochs | seconds to {target} | switches (last run) |")
print("|---|---|---|---|---|---|---|---|")
a, s, t = summary("none_256_bsp")
print(f"| none | 256 | bsp | {a:.4f} | | {s:.2f} | {t:.2f} | |")
for tag, label, cb in (("7_256", "member 7, 4x", 256), ("random_256", "random member, 4x", 256),
                       ("none_32", "none", 32), ("7_32", "member 7, 4x", 32)):
    base = summary(f"{tag}_bsp")[0]
    for p in ("bsp", "asp", "adaptive"):
        a, s, t = summary(f"{tag}_{p}")
        sw = switches(tag + "_" + p) if p == "adaptive" else ""
        print(f"| {label} | {cb} | {p} | {a:.4f} | {a - base:+.4f} | {s:.2f} | {t:.2f} | {sw} |")
PY
