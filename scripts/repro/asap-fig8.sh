#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# ASAP Fig. 8: how many inputs each reduce combines under NOTIFY-ACK, BSP
# and ASYNC, 8 members over the complete graph (in-degree 7). Runs
# bench_inputs_per_reduce (dml's notify_ack, bsp and asp, and the
# barrier-only BSP the paper measured, a test-only policy in
# test/support/weak_bsp.hpp) and plots the distribution.
# Writes docs/reproductions/asap-fig8.md and asap-fig8.png.
#   scripts/repro/asap-fig8.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

repro_build bench_inputs_per_reduce
bench=$(repro_bin bench_inputs_per_reduce)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export DML_ADVICE=0

common=(--ranks 8 --floats 47236 --rounds 300)
# name | extra arguments: back-to-back exchanges (the paper's micro-benchmark),
# random compute and delays (three seeds), long compute without delays
settings=(
  "micro|--work-us 0 --delay-us 0 --seed 1"
  "jitter, seed 1|--work-us 200 --delay-us 50 --seed 1"
  "jitter, seed 2|--work-us 200 --delay-us 50 --seed 2"
  "jitter, seed 3|--work-us 200 --delay-us 50 --seed 3"
  "long steps|--work-us 2000 --delay-us 0 --seed 1"
)
i=0
for entry in "${settings[@]}"; do
  IFS='|' read -r name extra <<<"$entry"
  i=$((i + 1))
  echo "repro: [$i/${#settings[@]}] bench_inputs_per_reduce ${common[*]} $extra (about 15 s)"
  # shellcheck disable=SC2086
  "$bench" "${common[@]}" $extra --csv "$work/dist$i.csv" | tee "$work/out$i.txt" | grep '^| [a-z]'
  echo "$name|$extra" >"$work/name$i.txt"
done

# One markdown table of every setting, the paper comparison, and the
# distributions to plot (inputs,notify_ack,bsp,weak_bsp,asp; % of gathers).
python3 - "$work" "$i" <<'PY'
import csv, sys
work, count = sys.argv[1], int(sys.argv[2])
rows = {}
with open(f"{work}/all.md", "w") as md:
    md.write("| setting | policy | reduces with all 7 | with >= 5 | torn reads | skipped | older-round inputs |\n")
    md.write("|---|---|---:|---:|---:|---:|---:|\n")
    for i in range(1, count + 1):
        name, extra = open(f"{work}/name{i}.txt").read().strip().split("|")
        for line in open(f"{work}/out{i}.txt"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 7 or not cells[0][0].isalpha() or cells[0] == "policy":
                continue
            policy, gathers, all7, five, torn, skipped, older = cells
            rows[(i, policy)] = (all7, five)
            md.write(f"| {name} (`{extra}`) | `{policy}` | {all7} | {five} | {torn} | {skipped} | {older} |\n")
        dist = list(csv.DictReader(open(f"{work}/dist{i}.csv")))
        policies = list(dict.fromkeys(r["policy"] for r in dist))
        share = {(r["policy"], int(r["inputs"])): r["share"] for r in dist}
        with open(f"{work}/bars{i}.csv", "w") as out:
            out.write("inputs," + ",".join(policies) + "\n")
            for k in sorted({int(r["inputs"]) for r in dist}):
                out.write(f"{k}," + ",".join(share[(p, k)] for p in policies) + "\n")
with open(f"{work}/paper.md", "w") as md:
    md.write("| policy | paper: all 7 | paper: >= 5 | ours, micro: all 7 | >= 5 | ours, jitter (seeds 1-3): all 7 | >= 5 |\n")
    md.write("|---|---:|---:|---:|---:|---:|---:|\n")
    paper = {"notify_ack": ("100 %", "100 %"), "weak_bsp": ("-", "77 %"), "bsp": ("-", "-"), "asp": ("-", "39 %")}
    label = {"notify_ack": "NOTIFY-ACK (`notify_ack`)", "weak_bsp": "BSP as the paper built it (`weak_bsp`)",
             "bsp": "dml's `bsp` (flush, barrier, exact gather)", "asp": "ASYNC (`asp`)"}
    for p in ("notify_ack", "weak_bsp", "bsp", "asp"):
        jit = [rows[(i, p)] for i in (2, 3, 4)]
        md.write(f"| {label[p]} | {paper[p][0]} | {paper[p][1]} | {rows[(1, p)][0]} | {rows[(1, p)][1]} | "
                 f"{' / '.join(j[0] for j in jit)} | {' / '.join(j[1] for j in jit)} |\n")
PY
table=$(cat "$work/all.md")
paper=$(cat "$work/paper.md")

repro_gnuplot
plot_bars() {  # bars.csv out.png title
  gnuplot <<GP
set datafile separator ','
set terminal pngcairo size 640,400 noenhanced font ',10'
set output '$2'
set title '$3' font ',9'
set xlabel 'inputs combined by one gather (in-degree 7)'
set ylabel '% of gathers'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set yrange [0:105]
set grid y
set key top left
plot '$1' using 2:xtic(1) title 'notify_ack', '' using 3 title 'bsp (dml)', \
     '' using 4 title 'weak_bsp (ASAP BSP, test-only)', '' using 5 title 'asp'
GP
  echo "repro: wrote ${2#"$REPRO_ROOT"/}"
}
plot_bars "$work/bars1.csv" "$REPRO_DOCS/asap-fig8.png" "inputs per reduce, 8 members, back-to-back exchanges (micro)"
plot_bars "$work/bars2.csv" "$REPRO_DOCS/asap-fig8-jitter.png" \
  "inputs per reduce, 8 members, compute 0-400 us and delays up to 50 us (jitter, seed 1)"

cat >"$REPRO_DOCS/asap-fig8.md" <<EOF
## ASAP Fig. 8: inputs per reduce under NOTIFY-ACK, BSP and ASYNC

**The paper.** 8 machines over the complete graph (each reduce has 7
in-neighbours), SVM on RCV1, a micro-benchmark. NOTIFY-ACK reduces with all
7 inputs 100 % of the time; BSP, a barrier after the sends and no further
synchronization, "has substantial torn reads" and reduces with 5 or more
inputs 77 % of the time; ASYNC does so 39 % of the time (§6.2, Fig. 8).
Torn or incomplete updates are detected by header and footer version
numbers and left out.

**Command.** \`scripts/repro/asap-fig8.sh\` (about 1.5 minutes with the
build). It runs \`bench_inputs_per_reduce ${common[*]}\` in five
settings: 8 in-process ranks exchanging a vector of 47236 floats (RCV1's
width) over the complete graph, 300 rounds per rank; *micro*: exchanges
back to back; *jitter*: each rank "computes" a uniformly random 0-400 µs
between exchanges and the transport sleeps up to 50 µs before every
operation (three seeds); *long steps*: 0-4 ms of computing, no delays. The
counts are dml's own vector statistics (\`inputs_combined\`,
\`torn_reads\`, \`stale_skipped\`) summed over the ranks; "older-round
inputs" is the share of combined updates from an earlier round than the
gatherer's (mixed versions). \`weak_bsp\` is the paper's BSP: it enters the
barrier without waiting for its writes to land and gathers whatever is
complete. dml's in-process puts complete before they return, so it models
the late arrival by writing after the barrier; it is defined in
\`test/support/weak_bsp.hpp\`, not in the library. \`ctest -R torn_reads\`
asserts the contrast on every build (dml's bsp: every gather exact, no torn
read; weak_bsp: updates missed).

**Ours** (2 cores shared with other work while measured):

$paper

All settings:

$table

![distribution of inputs per reduce, micro](asap-fig8.png)
![distribution of inputs per reduce, jitter](asap-fig8-jitter.png)

**Reading.** The qualitative result reproduces in every setting:
NOTIFY-ACK combines every in-neighbour's current update in every reduce;
the barrier-only BSP misses updates and combines some a round late, and
tears (torn slot reads) where a read overlaps a write, which with long
steps hardly happens; dml's \`bsp\`, which flushes its writes before its
barrier and then takes exactly the current round, neither tears nor misses.
The paper's BSP failure belongs to that protocol, not to BSP as such. The
percentages are another matter: they depend on how long a write is in
flight against the time between two exchanges, and here a write is a
memory copy between threads on 2 shared cores, the delays are ours to
choose, and asp's shares vary from run to run (compare the three seeds;
between runs of the whole script we saw its full reduces at jitter range
from under 20 % to over 70 %). With back-to-back exchanges the torn BSP's share of reduces with 5
or more inputs comes out near the paper's 77 %, but asp's far below its
39 % (most asp gathers find nothing new: a neighbour has not written since
the last one); with random compute times both are higher than the paper's.
We do not claim the paper's numbers, only its order: NOTIFY-ACK (and dml's
bsp) exact, then the torn BSP, with asp below it in full reduces except
with long steps, where the two tie (with 5 or more inputs they come close
except in the micro setting).
EOF
echo "repro: wrote docs/reproductions/asap-fig8.md"
