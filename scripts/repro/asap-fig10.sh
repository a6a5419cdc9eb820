#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# ASAP Fig. 10: NOTIFY-ACK against BSP (and ASYNC) over the root expander
# at 25 members, here with a straggler: dml-logreg on Fashion-MNIST, 25
# in-process ranks, --topology root_expander, notify_ack, bsp and asp,
# without a straggler, with member 12 four times slower at every local step
# (--straggler 12@4) and with a member drawn anew at each step
# (--straggler random@4); REPEATS runs of each, interleaved.
# Writes docs/reproductions/asap-fig10.md and asap-fig10.png.
#   scripts/repro/asap-fig10.sh [REPEATS]   (default 3)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
repeats=${1:-3}

repro_build dml-logreg
logreg=$(repro_bin dml-logreg)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export DML_ADVICE=0

common=(--ranks 25 --topology root_expander --epochs 12)
stragglers=(none 12@4 random@4)
policies=(notify_ack bsp asp)
total=$((repeats * ${#stragglers[@]} * ${#policies[@]}))
i=0
# The configurations take turns within each repeat, so that a change in
# the machine's load hits all of them alike.
for r in $(seq 1 "$repeats"); do
  for s in "${stragglers[@]}"; do
    for p in "${policies[@]}"; do
      i=$((i + 1))
      extra=()
      [[ $s != none ]] && extra=(--straggler "$s")
      echo "repro: [$i/$total] dml-logreg ${common[*]} --consistency $p ${extra[*]}"
      "$logreg" "${common[@]}" --consistency "$p" "${extra[@]}" --csv "$work/${s/@/x}_$p.$r.csv" >"$work/log" ||
        { cat "$work/log" >&2; exit 1; }
      grep '^final:' "$work/log"
    done
  done
done

table=$(python3 - "$work" "$repeats" <<'PY'
import csv, statistics, sys
work, repeats = sys.argv[1], int(sys.argv[2])
speedups = []
short = {"none": "without a straggler", "12x4": "with member 12 slow", "randomx4": "with a random straggler"}
def runs(name):
    return [list(csv.DictReader(open(f"{work}/{name}.{r}.csv"))) for r in range(1, repeats + 1)]
print("| straggler | policy | seconds, 12 epochs (median) | (min - max) | vs bsp | final accuracy (median) | final objective (median) |")
print("|---|---|---:|---:|---:|---:|---:|")
for s, label in (("none", "none"), ("12x4", "member 12, 4x"), ("randomx4", "random member, 4x")):
    base = statistics.median(float(r[-1]["seconds"]) for r in runs(f"{s}_bsp"))
    for p in ("notify_ack", "bsp", "asp"):
        rs = runs(f"{s}_{p}")
        secs = [float(r[-1]["seconds"]) for r in rs]
        med = statistics.median(secs)
        acc = statistics.median(float(r[-1]["accuracy"]) for r in rs)
        loss = statistics.median(float(r[-1]["loss"]) for r in rs)
        print(f"| {label} | `{p}` | {med:.2f} | {min(secs):.2f} - {max(secs):.2f} | {base / med:.2f}x | {acc:.4f} | {loss:.4f} |")
        if p == "notify_ack":
            speedups.append((short[s], base / med))
        if s == "12x4":  # the figure shows each policy's median run
            order = sorted(range(len(secs)), key=lambda k: secs[k])
            open(f"{work}/median_{p}.txt", "w").write(str(order[len(order) // 2] + 1))
faster = [f"{l}: {x:.2f}x" for l, x in speedups if x > 1]
slower = [f"{l}: {x:.2f}x" for l, x in speedups if x <= 1]
with open(f"{work}/verdict.txt", "w") as v:
    if not faster:
        v.write("In the runs recorded here notify_ack was nowhere faster than bsp (its speed-up "
                + "; ".join(slower) + ").")
    else:
        v.write("In the runs recorded here notify_ack was faster than bsp " + "; ".join(faster)
                + (", and not " + "; ".join(slower) if slower else "") + ".")
PY
)
verdict=$(cat "$work/verdict.txt")
echo "$table"

m_na=$(cat "$work/median_notify_ack.txt") m_bsp=$(cat "$work/median_bsp.txt") m_asp=$(cat "$work/median_asp.txt")
REPRO_KEY="bottom right" REPRO_YRANGE="[0.74:0.85]" repro_plot "$REPRO_DOCS/asap-fig10.png" \
  "dml-logreg, 25 ranks, root_expander, member 12 4x slower (median runs)" "seconds" "test accuracy" - \
  "$work/12x4_notify_ack.$m_na.csv:2:4:notify_ack" "$work/12x4_bsp.$m_bsp.csv:2:4:bsp" \
  "$work/12x4_asp.$m_asp.csv:2:4:asp"

cat >"$REPRO_DOCS/asap-fig10.md" <<EOF
## ASAP Fig. 10: NOTIFY-ACK against BSP over the root expander, with a straggler

**The paper.** SVM on webspam, 25 processes over the root expander:
NOTIFY-ACK converges about 3x faster than BSP, and ASYNC does not converge
to the final value (§6.2, Fig. 10). The paper gives two reasons: BSP
reduces with fewer updates when it tears (asap-fig8), and its barrier
blocks every worker, while under NOTIFY-ACK a worker waits only for its own
in- and out-neighbours.

**Command.** \`scripts/repro/asap-fig10.sh\` (about 2-3 minutes with the
build; an argument sets the repeats, default 3). It runs \`dml-logreg
${common[*]} --consistency notify_ack|bsp|asp\` (softmax regression on
Fashion-MNIST, 25 in-process ranks) without a straggler, with
\`--straggler 12@4\` (member 12 sleeps three times its step's own time after
every local step) and with \`--straggler random@4\` (a member drawn anew at
every step), each $repeats times, the configurations taking turns.

**Ours** ($repeats runs each; 2 cores shared with other work while
measured, so the times are rough):

$table

![test accuracy against time with member 12 slow, each policy's median run](asap-fig10.png)

**Reading.** dml's bsp and notify_ack compute the same thing: both combine
exactly the current round of every in-neighbour, so their accuracy and
objective after each epoch are identical to the last digit and only time
can differ. That makes this a cleaner comparison than the paper's, where
BSP also lost updates to torn reads. $verdict We do not see the paper's 3x,
and on a machine shared with other work the spread between repeats (the
min - max column) can be as large as the differences. Reasons that belong
to this setting: a constant straggler
bounds every member under notify_ack too (a sender may be at most one round
ahead of each receiver, and the root expander connects everyone within 8
hops), so the slack can at best absorb short delays such as the random
straggler's; 25 threads on 2 cores mostly wait for a core rather than for
each other, and a straggler's sleep hands its core to the others; the
in-process barrier wakes its waiters at once through a condition variable,
while notify_ack's waits poll (spin, yield, then sleep 20-200 µs), which
on an oversubscribed machine likely costs more than the barrier it saves
(an explanation we have not measured separately). asp runs freely and its
objective differs from the exact policies'; at this scale it still
converges, unlike the paper's ASYNC, because the model is small (7850
floats), the shards are drawn from one distribution and the members
advance at similar speeds.
EOF
echo "repro: wrote docs/reproductions/asap-fig10.md"
