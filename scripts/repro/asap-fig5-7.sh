#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# ASAP Figs. 5 and 7: stochastic reduce over a root expander against
# all-reduce (and, Fig. 7, a chain): dml-svm-sgd (Bottou's SVM-SGD, as in
# the paper) under notify_ack on generated sparse text-like data, at 4
# ranks (Fig. 5, with a single rank for the speed-up) and 25 ranks (Fig. 7:
# all, root_expander, and ring, the one-way "chain (one)" of §6.1, whose
# spectral gap is the paper's "around 0.008"). Objective against time and
# against bytes sent per member.
# Writes docs/reproductions/asap-fig5-7.md and asap-fig5-7-*.png.
#   scripts/repro/asap-fig5-7.sh [REPEATS]   (default 3)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"

repro_build dml-svm-sgd dml-gen-sparse
svm=$(repro_bin dml-svm-sgd)
gen=$(repro_bin dml-gen-sparse)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export DML_ADVICE=0
repeats=${1:-3}

# 2^16 features (a dense model of 256 KiB per exchange), 25000 training
# rows of 100 nonzeros: 1000 per rank at 25 ranks.
data=(--bits 16 --nnz 100 --rows 25000 --seed 1)
echo "repro: dml-gen-sparse ${data[*]}"
"$gen" "${data[@]}" --out "$work/data" | tail -1 | tee "$work/gen.txt"
planted=$(sed -n 's/.*test accuracy \([0-9.]*\).*/\1/p' "$work/gen.txt")

common=(--consistency notify_ack --cb-size 64 --data "$work/data.train" --test "$work/data.test")
run() {  # name ranks epochs topology
  echo "repro: [$r/$repeats] dml-svm-sgd --ranks $2 --topology $4 --epochs $3 ${common[*]//$work\//}"
  "$svm" --ranks "$2" --topology "$4" --epochs "$3" "${common[@]}" --csv "$work/$1.$r.csv" | grep '^final:'
}
# The configurations take turns within each repeat, so that a change in
# the machine's load hits all of them alike.
for r in $(seq 1 "$repeats"); do
  run r25_all 25 10 all
  run r25_root_expander 25 10 root_expander
  run r25_ring 25 10 ring
  run r4_all 4 8 all
  run r4_root_expander 4 8 root_expander
  run r1 1 8 all
done

# Tables: per configuration, the first epoch whose objective is within 2 %
# of the best final objective among the runs of that size, the seconds to
# it (median of the repeats; objective, epochs and bytes are the same in
# every repeat: notify_ack is exact) and the MB each member had sent by then.
summary() {  # ranks names...
  python3 - "$work" "$repeats" "$@" <<'PY'
import csv, statistics, sys
work, repeats, ranks, names = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
runs = {n: [list(csv.DictReader(open(f"{work}/{n}.{r}.csv"))) for r in range(1, repeats + 1)] for n in names}
best = min(float(rs[0][-1]["loss"]) for rs in runs.values())
target = best * 1.02
to_target = {}
print(f"Target: objective <= {target:.4f} (2 % above the best final objective, {best:.4f}).\n")
print(f"| run | epochs | final objective | final accuracy | seconds (median of {repeats}) | MB sent per member | epochs to target | seconds to target (median) | (min - max) | MB per member to target |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for n, rs in runs.items():
    size = int(n[1:].split("_")[0])
    last = rs[0][-1]
    mb = lambda r: float(r["bytes"]) / size / 1e6
    topo = n.split("_", 1)[1] if "_" in n else ""
    label = f"{size} ranks, `{topo}`" if size > 1 else "1 rank"
    secs = statistics.median(float(r[-1]["seconds"]) for r in rs)
    hits = [next((row for row in r if float(row["loss"]) <= target), None) for r in rs]
    if all(hits):
        t = [float(h["seconds"]) for h in hits]
        to_target[n] = statistics.median(t)
        tail = f"{hits[0]['epoch']} | {to_target[n]:.2f} | {min(t):.2f} - {max(t):.2f} | {mb(hits[0]):.1f}"
    else:
        tail = "not reached | - | - | -"
    print(f"| {label} | {last['epoch']} | {float(last['loss']):.4f} | {float(last['accuracy']):.4f} | "
          f"{secs:.2f} | {mb(last):.1f} | {tail} |")
if ranks == 25 and len(to_target) == 3:
    all_, root, ring = (to_target[f"r25_{t}"] for t in ("all", "root_expander", "ring"))
    with open(f"{work}/verdict25.txt", "w") as v:
        v.write(f"In the runs recorded here all-reduce took {all_ / root:.1f} times as long as the root "
                f"expander to reach the target and {all_ / ring:.1f} times as long as the ring (medians).")
PY
}
table25=$(summary 25 r25_all r25_root_expander r25_ring)
table4=$(summary 4 r4_all r4_root_expander r1)
verdict25=$(cat "$work/verdict25.txt")
echo "$table25"
echo "$table4"

REPRO_KEY="top right" repro_plot "$REPRO_DOCS/asap-fig5-7-time.png" "SVM-SGD, 25 ranks, notify_ack: objective against time" \
  "seconds" "objective (lambda/2 |w|^2 + mean hinge)" - \
  "$work/r25_all.1.csv:2:3:all" "$work/r25_root_expander.1.csv:2:3:root_expander" "$work/r25_ring.1.csv:2:3:ring (chain, one)"
REPRO_KEY="top right" repro_plot "$REPRO_DOCS/asap-fig5-7-bytes.png" "SVM-SGD, 25 ranks, notify_ack: objective against bytes" \
  "MB sent per member" "objective (lambda/2 |w|^2 + mean hinge)" logx \
  "$work/r25_all.1.csv:(\$5/25e6):3:all" "$work/r25_root_expander.1.csv:(\$5/25e6):3:root_expander" \
  "$work/r25_ring.1.csv:(\$5/25e6):3:ring (chain, one)"
REPRO_KEY="top right" repro_plot "$REPRO_DOCS/asap-fig5-7-4ranks.png" "SVM-SGD, 4 ranks (Fig. 5): objective against time" \
  "seconds" "objective (lambda/2 |w|^2 + mean hinge)" - \
  "$work/r4_all.1.csv:2:3:4 ranks, all" "$work/r4_root_expander.1.csv:2:3:4 ranks, root_expander" \
  "$work/r1.1.csv:2:3:1 rank"

cat >"$REPRO_DOCS/asap-fig5-7.md" <<EOF
## ASAP Figs. 5 and 7: root expander against all-reduce and a chain

**The paper.** SVM-SGD with model averaging. Fig. 5: RCV1 on 4 machines,
the root expander (out-degree 2) converges "marginally faster" than
all-reduce, sending 56 MB per machine against 84 MB to reach the target.
Fig. 7: webspam (a dense model of about 11 M floats) on 25 processes,
root expander (printed gap 0.2), a one-neighbour chain (gap "around 0.008")
and all-reduce: both sparse graphs beat all-reduce in time, and the chain,
though cheaper per epoch, needs more epochs and sends more in total, 50433
MB per node against the root expander's 44351 (§6.1).

**Command.** \`scripts/repro/asap-fig5-7.sh\` (2-4 minutes with the
build; an argument sets the repeats, default 3). Data: \`dml-gen-sparse
${data[*]}\`, a text-like two-class set of 2^16 features with a planted linear model (it labels $planted of the test
rows correctly). Runs: \`dml-svm-sgd --consistency notify_ack --cb-size 64
--ranks R --topology T\` (in-process ranks; the model is the whole dense
vector of 65537 floats at each exchange, 15 exchanges per epoch at 25
ranks). The paper's chain of §6.1 sends to one machine and has the gap of a
one-way ring (asap-fig2), so it runs as \`--topology ring\`. The objective
(λ/2 |w|² + mean hinge loss on the training set) and accuracy are those of
the ranks' averaged model, evaluated once per epoch outside the timed part.

**Ours, 25 ranks (Fig. 7)** (2 cores shared with other work while
measured, so the times are rough; $repeats runs each, the configurations
taking turns; the figures show the first):

$table25

![objective against time, 25 ranks](asap-fig5-7-time.png)
![objective against bytes, 25 ranks](asap-fig5-7-bytes.png)

**Ours, 4 ranks (Fig. 5)**:

$table4

![objective against time, 4 ranks](asap-fig5-7-4ranks.png)

**Reading.** What reproduces: at 25 ranks the sparse graphs reach the
target sooner than all-reduce, with a twelfth (root expander) and a
twenty-fourth (ring) of its bytes. $verdict25 They win because each exchange moves 2 updates per member (the ring: 1)
instead of 24, and the 25 threads share 2 cores, so all-reduce's copies
take the time the others spend training. At 4 ranks the root expander
sends exactly 2/3 of all-reduce's bytes (out-degree 2 against 3): the
paper's 56 MB against 84 MB is the same ratio, so that part of Fig. 5 is
arithmetic. The time difference at 4 ranks is small ("marginally faster" in
the paper) and changes sign between runs on this shared machine.

What does not reproduce:

- *The chain's extra epochs.* Our ring (the paper's chain) needs no more
  epochs than the root expander, so it sends less in total rather than
  more. The trainer reports the average of the replicas; averaging over a
  regular graph (every member hears from as many as it sends to) preserves
  that average, so the topology changes the reported curve only through how
  far the replicas drift apart between exchanges, and with shards drawn at
  random from one distribution and a convex objective they stay close. The
  paper's webspam model has 11 M floats trained on 10 K examples per
  process (§6.1 says 31.25 K, which is 250 K / 8, not / 25), where replicas
  drift far more, and its Fig. 7 does not say whether one replica or an
  average is plotted. The slower agreement the ring's spectral gap
  predicts is real on the same vectors (asap-fig2 measures it: the
  replicas' disagreement shrinks by about 0.99 per round over the ring
  against 0.86 over the root expander), but the averaged model hardly feels it
  here, and the trainer prints no per-replica measure.
- *The speed-up over one machine* (Fig. 5's y axis). Here one rank is far
  faster than 4: a step touches 100 nonzeros while an exchange copies the
  whole 256 KiB model, and all ranks share 2 cores. The paper's machines
  each had their own cores and network; in-process ranks on 2 cores can
  show how graphs compare with each other, not a speed-up over one rank.
EOF
echo "repro: wrote docs/reproductions/asap-fig5-7.md"
