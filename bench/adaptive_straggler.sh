#!/bin/sh
# SPDX-License-Identifier: BSL-1.0
# The straggler experiment of docs/adaptive.md: dml-logreg on Fashion-MNIST
# with 8 in-process ranks, under bsp, asp and adaptive, with one member 4x
# slower at every local step (--straggler 7@4) and with a member drawn anew
# at each step 4x slower (--straggler random@4), plus bsp without a
# straggler; REPEATS runs of each. Prints one markdown row per
# configuration: the median final accuracy, its loss against bsp under the
# same straggler, the median seconds of the 10 epochs and to the target
# accuracy (the first epoch whose accuracy reaches TARGET), and the
# adaptive policy's switches of the last run.
#
#   bench/adaptive_straggler.sh [BUILD_DIR] [REPEATS] [TARGET]
set -eu
build=${1:-build}
repeats=${2:-3}
target=${3:-0.835}
bin="$build/examples/logreg/dml-logreg"
[ -x "$bin" ] || { echo "no $bin: cmake --build $build --target dml-logreg" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() {  # name consistency straggler
  for r in $(seq 1 "$repeats"); do
    if [ -n "$3" ]; then
      "$bin" --ranks 8 --consistency "$2" --straggler "$3" --csv "$out/$1.$r.csv" >"$out/$1.$r.log"
    else
      "$bin" --ranks 8 --consistency "$2" --csv "$out/$1.$r.csv" >"$out/$1.$r.log"
    fi
  done
}

run none_bsp bsp ""
for s in 7@4 random@4; do
  tag=$(echo "$s" | tr '@' '_')
  for p in bsp asp adaptive; do run "${tag}_$p" "$p" "$s"; done
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
print(f"| straggler | consistency | accuracy (median) | loss vs bsp | seconds, 10 epochs | seconds to {target} | switches (last run) |")
print("|---|---|---|---|---|---|---|")
a, s, t = summary("none_bsp")
print(f"| none | bsp | {a:.4f} | | {s:.2f} | {t:.2f} | |")
for tag, label in (("7_4", "member 7, 4x"), ("random_4", "random member, 4x")):
    base = summary(f"{tag}_bsp")[0]
    for p in ("bsp", "asp", "adaptive"):
        a, s, t = summary(f"{tag}_{p}")
        print(f"| {label} | {p} | {a:.4f} | {base - a:+.4f} | {s:.2f} | {t:.2f} | {switches(tag + '_' + p) if p == 'adaptive' else ''} |")
PY
