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
#   scripts/repro/asap-fig5-7.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/asap.bash"

asap_build dml-svm-sgd dml-gen-sparse
svm=$(asap_bin dml-svm-sgd)
gen=$(asap_bin dml-gen-sparse)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export DML_ADVICE=0

# 2^16 features (a dense model of 256 KiB per exchange), 25000 training
# rows of 100 nonzeros: 1000 per rank at 25 ranks.
data=(--bits 16 --nnz 100 --rows 25000 --seed 1)
echo "repro: dml-gen-sparse ${data[*]}"
"$gen" "${data[@]}" --out "$work/data" | tail -1 | tee "$work/gen.txt"
planted=$(sed -n 's/.*test accuracy \([0-9.]*\).*/\1/p' "$work/gen.txt")

common=(--consistency notify_ack --cb-size 64 --data "$work/data.train" --test "$work/data.test")
run() {  # name ranks epochs topology
  echo "repro: dml-svm-sgd --ranks $2 --topology $4 --epochs $3 ${common[*]//$work\//}"
  "$svm" --ranks "$2" --topology "$4" --epochs "$3" "${common[@]}" --csv "$work/$1.csv" | grep '^final:'
}
run r25_all 25 10 all
run r25_root_expander 25 10 root_expander
run r25_ring 25 10 ring
run r4_all 4 8 all
run r4_root_expander 4 8 root_expander
run r1 1 8 all

# Tables: per run, the first epoch whose objective is within 2 % of the
# best final objective among the runs of that size, its time and the MB
# each member had sent by then.
summary() {  # ranks names...
  python3 - "$work" "$@" <<'PY'
import csv, sys
work, ranks, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
runs = {n: list(csv.DictReader(open(f"{work}/{n}.csv"))) for n in names}
best = min(float(r[-1]["loss"]) for r in runs.values())
target = best * 1.02
first = {}
print(f"Target: objective <= {target:.4f} (2 % above the best final objective, {best:.4f}).\n")
print("| run | epochs | final objective | final accuracy | seconds | MB sent per member | epochs to target | seconds to target | MB per member to target |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for n, rows in runs.items():
    size = int(n[1:].split("_")[0])
    last = rows[-1]
    hit = next((r for r in rows if float(r["loss"]) <= target), None)
    mb = lambda r: float(r["bytes"]) / size / 1e6
    topo = n.split("_", 1)[1] if "_" in n else "single rank"
    label = f"{size} ranks, `{topo}`" if size > 1 else "1 rank"
    if hit:
        first[n] = float(hit["seconds"])
        tail = f"{hit['epoch']} | {float(hit['seconds']):.2f} | {mb(hit):.1f}"
    else:
        tail = "not reached | - | -"
    print(f"| {label} | {last['epoch']} | {float(last['loss']):.4f} | {float(last['accuracy']):.4f} | "
          f"{float(last['seconds']):.2f} | {mb(last):.1f} | {tail} |")
PY
}
table25=$(summary 25 r25_all r25_root_expander r25_ring)
table4=$(summary 4 r4_all r4_root_expander r1)
echo "$table25"
echo "$table4"

ASAP_KEY="top right" asap_plot "$ASAP_DOCS/asap-fig5-7-time.png" "SVM-SGD, 25 ranks, notify_ack: objective against time" \
  "seconds" "objective (lambda/2 |w|^2 + mean hinge)" - \
  "$work/r25_all.csv:2:3:all" "$work/r25_root_expander.csv:2:3:root_expander" "$work/r25_ring.csv:2:3:ring (chain, one)"
ASAP_KEY="top right" asap_plot "$ASAP_DOCS/asap-fig5-7-bytes.png" "SVM-SGD, 25 ranks, notify_ack: objective against bytes" \
  "MB sent per member" "objective (lambda/2 |w|^2 + mean hinge)" logx \
  "$work/r25_all.csv:(\$5/25e6):3:all" "$work/r25_root_expander.csv:(\$5/25e6):3:root_expander" \
  "$work/r25_ring.csv:(\$5/25e6):3:ring (chain, one)"
ASAP_KEY="top right" asap_plot "$ASAP_DOCS/asap-fig5-7-4ranks.png" "SVM-SGD, 4 ranks (Fig. 5): objective against time" \
  "seconds" "objective (lambda/2 |w|^2 + mean hinge)" - \
  "$work/r4_all.csv:2:3:4 ranks, all" "$work/r4_root_expander.csv:2:3:4 ranks, root_expander" \
  "$work/r1.csv:2:3:1 rank"

cat >"$ASAP_DOCS/asap-fig5-7.md" <<EOF
## ASAP Figs. 5 and 7: root expander against all-reduce and a chain

**The paper.** SVM-SGD with model averaging. Fig. 5: RCV1 on 4 machines,
the root expander (out-degree 2) converges "marginally faster" than
all-reduce, sending 56 MB per machine against 84 MB to reach the target.
Fig. 7: webspam (a dense model of about 11 M floats) on 25 processes,
root expander (printed gap 0.2), a one-neighbour chain (gap "around 0.008")
and all-reduce: both sparse graphs beat all-reduce in time, and the chain,
though cheaper per epoch, needs more epochs and sends more in total, 50433
MB per node against the root expander's 44351 (§6.1).

**Command.** \`scripts/repro/asap-fig5-7.sh\` (about 2 minutes with the
build). Data: \`dml-gen-sparse ${data[*]}\`, a text-like two-class set of
2^16 features with a planted linear model (it labels $planted of the test
rows correctly). Runs: \`dml-svm-sgd --consistency notify_ack --cb-size 64
--ranks R --topology T\` (in-process ranks; the model is the whole dense
vector of 65537 floats at each exchange, 15 exchanges per epoch at 25
ranks). The paper's chain of §6.1 sends to one machine and has the gap of a
one-way ring (asap-fig2), so it runs as \`--topology ring\`. The objective
(λ/2 |w|² + mean hinge loss on the training set) and accuracy are those of
the ranks' averaged model, evaluated once per epoch outside the timed part.

**Ours, 25 ranks (Fig. 7)** (2 cores shared with other work while
measured; one run each):

$table25

![objective against time, 25 ranks](asap-fig5-7-time.png)
![objective against bytes, 25 ranks](asap-fig5-7-bytes.png)

**Ours, 4 ranks (Fig. 5)**:

$table4

![objective against time, 4 ranks](asap-fig5-7-4ranks.png)

**Reading.** What reproduces: at 25 ranks the sparse graphs reach the
target several times sooner than all-reduce, and with about a twelfth of
its bytes, because each exchange moves 2 updates per member (the ring: 1)
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
  predicts would need a per-replica measure, which the trainer does not
  print.
- *The speed-up over one machine* (Fig. 5's y axis). Here one rank is far
  faster than 4: a step touches 100 nonzeros while an exchange copies the
  whole 256 KiB model, and all ranks share 2 cores. The paper's machines
  each had their own cores and network; in-process ranks on 2 cores can
  show how graphs compare with each other, not a speed-up over one rank.
EOF
echo "repro: wrote docs/reproductions/asap-fig5-7.md"
