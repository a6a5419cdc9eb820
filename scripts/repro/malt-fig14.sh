#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# MALT Fig. 14: training goes on when a rank dies mid-run. dml-logreg
# (softmax regression) on Fashion-MNIST, 10 in-process ranks over a Halton
# graph, bsp, 10 epochs; each repeat runs once undisturbed and once with
# member 3 killed halfway through the undisturbed run's training
# (--kill-after 3@S: the member stops at its next transport operation, as
# if its process had died). Medians over REPEATS pairs. Writes
# docs/reproductions/malt-fig14.md, malt-fig14.png and malt-fig14-loss.png.
#   scripts/repro/malt-fig14.sh
# Environment: REPEATS (3), RANKS (10), VICTIM (3), TARGET (0.835), EPOCHS (10).
# REPRO_REPORT_ONLY=1 rewrites the section and figures from the last runs
# (kept in build-repro/repro/NAME/) without training again.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
repeats=${REPEATS:-3}
ranks=${RANKS:-10}
victim=${VICTIM:-3}
target=${TARGET:-0.835}
epochs=${EPOCHS:-10}
repro_build dml-logreg
bin=$(repro_bin dml-logreg)
repro_workdir malt-fig14
out=$REPRO_OUT
args=(--ranks "$ranks" --topology halton --consistency bsp --epochs "$epochs")

# timed NAME ARGS...: runs the trainer, each output line prefixed with the
# seconds since it started (the clock of --kill-after).
timed() {
  local name=$1; shift
  local t0
  t0=$(date +%s.%N)
  "$bin" "${args[@]}" --csv "$out/$name.csv" "$@" 2>&1 |
    while IFS= read -r line; do
      printf '%.3f %s\n' "$(echo "$(date +%s.%N) - $t0" | bc)" "$line"
    done >"$out/$name.log"
}
command -v bc >/dev/null || {
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends bc >/dev/null
}

for r in $(seq 1 "$repeats"); do
  [[ ${REPRO_REPORT_ONLY:-0} == 1 ]] && break
  echo "malt-fig14: repeat $r/$repeats, undisturbed"
  timed "none-$r"
  # Halfway through the training: between the first report (epoch 0, after
  # loading) and the 'final:' line of the undisturbed run.
  at=$(awk '/ epoch +0 /{s=$1} /final:/{e=$1} END{printf "%.2f", s + (e - s) / 2}' "$out/none-$r.log")
  echo "malt-fig14: repeat $r/$repeats, member $victim killed ${at} s after the start"
  timed "kill-$r" --kill-after "$victim@$at"
  grep -q "final:" "$out/kill-$r.log" || { echo "malt-fig14: the run with the kill did not finish:" >&2; cat "$out/kill-$r.log" >&2; exit 1; }
done
[[ ${REPRO_REPORT_ONLY:-0} == 1 ]] || cut -d' ' -f1 /proc/loadavg >"$out/load.after"
read -r load_before <"$out/load.before"
read -r load_after <"$out/load.after"

python3 - "$out" "$REPRO_DOCS" "$repeats" "$ranks" "$victim" "$target" "$epochs" \
  "$load_before $load_after $(nproc)" <<'PY'
import csv, re, statistics, sys
out, docs, repeats, ranks, victim, target, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], float(sys.argv[6]), sys.argv[7]
load_before, load_after, cores = sys.argv[8].split()
inf = float("inf")
m = statistics.median

def run(name):
    rows = list(csv.DictReader(open(f"{out}/{name}.csv")))
    hit = next((x for x in rows if int(x["epoch"]) > 0 and float(x["accuracy"]) >= target), None)
    log = open(f"{out}/{name}.log").read()
    view = re.search(r"view 1: member (\d+) failed; (\d+) members go on \(detected after ([0-9.]+) s, "
                     r"recovered after ([0-9.]+) s\)\n[0-9.]+ epoch +(\d+)", log)
    return dict(rows=rows, to=float(hit["seconds"]) if hit else inf, acc=float(rows[-1]["accuracy"]),
                loss=float(rows[-1]["loss"]), secs=float(rows[-1]["seconds"]),
                bytes=float(rows[-1]["bytes"]),
                view=view.groups() if view else None)

none = [run(f"none-{r}") for r in range(1, repeats + 1)]
kill = [run(f"kill-{r}") for r in range(1, repeats + 1)]
if any(k["view"] is None for k in kill):
    raise SystemExit("malt-fig14: a run with the kill printed no view change")
fmt = lambda x: "not reached" if x == inf else f"{x:.2f}"
def row(label, rs):
    secs = [r['secs'] for r in rs]
    return (f"| {label} | {fmt(m(r['to'] for r in rs))} | {m(r['acc'] for r in rs):.4f} | "
            f"{m(r['loss'] for r in rs):.4f} | {m(secs):.2f} ({min(secs):.2f}-{max(secs):.2f}) | "
            f"{m(r['bytes'] for r in rs) / 1e6:.0f} |")
table = "\n".join([
    f"| run | seconds to {target} | final accuracy | final loss | seconds, {epochs} epochs (min-max) | MB sent |",
    "|---|---:|---:|---:|---:|---:|",
    row(f"{ranks} ranks, undisturbed", none),
    row(f"member {victim} killed halfway, {ranks - 1} go on", kill)])
det = [k["view"][2] for k in kill]  # as the trainer prints them (two decimals)
rec = [k["view"][3] for k in kill]
ep = [int(k["view"][4]) for k in kill]
acc_diff = m(k["acc"] for k in kill) - m(n["acc"] for n in none)
time_ratio = m(k["secs"] for k in kill) / m(n["secs"] for n in none)
print(table)
# The training loss in the epoch whose report first shows the new view and
# the two after it, against the undisturbed run's in the same epochs: the
# largest ratio.
bumps = []
for k, n in zip(kill, none):
    e = int(k["view"][4])
    last = min(e + 2, len(k["rows"]) - 1)
    bumps.append((e, max(float(k["rows"][i]["loss"]) / float(n["rows"][i]["loss"]) for i in range(e, last + 1))))
risen = [(e, q) for e, q in bumps if q > 1.05]
if risen:
    bump_sentence = (" Right after the failure the training loss of the averaged model rose in "
                     + ", ".join(f"the run that lost the member in epoch {e} (up to {q:.2f}x the undisturbed loss)" for e, q in risen)
                     + ": the survivors lose one average and take new shards, and the loss came back down within a "
                       "few epochs"
                     + (f"; in the other {len(bumps) - len(risen)} run(s) it rose by less than 5 %." if len(risen) < len(bumps) else "."))
else:
    bump_sentence = (" The failure left no visible mark on the training loss (at most "
                     f"{max(q for _, q in bumps):.2f}x the undisturbed loss in the epoch of the failure and the two after it).")
if acc_diff >= -0.005:
    acc_sentence = (f"the run ends at the undisturbed run's accuracy or above it (median difference "
                    f"{acc_diff:+.4f}; the accuracy moves by up to a point from one epoch to the next, so a "
                    f"difference of that size is noise, not a gain from the failure).")
else:
    acc_sentence = (f"the run ends {-acc_diff:.4f} below the undisturbed run's accuracy (median): the dead "
                    f"member's samples of the epoch of its death are lost, and the survivors' models lose "
                    f"one average.")
if time_ratio < 1.1:
    time_sentence = (f": on {cores} shared cores, {ranks - 1} threads do the work of {ranks} about as fast, "
                     f"since the cores, not the members, limit them, so losing a member costs no throughput.")
else:
    time_sentence = (f", longer, as in MALT's figure, but not for MALT's reason: {ranks - 1} threads on {cores} "
                     f"cores do the work of {ranks} about as fast (the cores limit them, not the members), and "
                     f"on this machine, shared with other work, the same undisturbed run's time varies by as "
                     f"much between repeats (the ranges in the table).")
doc = f"""## MALT Fig. 14: a rank killed mid-run

**Paper.** Fig. 14 trains MALT-SVM on the PASCAL DNA set with 10 ranks on 8 machines, once without and
once with one process failing (faults injected by an external script, and programmer errors such as a
division by zero). The fault monitors detect the failure, the survivors rebuild their send and receive
lists and go on, and the model reaches the desired accuracy; the time to converge grows in proportion
to the ranks lost (§6.4; no numbers in the text).

**Command.** `scripts/repro/malt-fig14.sh` (about a minute here). `dml-logreg` on Fashion-MNIST, {ranks}
in-process ranks over a Halton graph, bsp, {epochs} epochs; each of {repeats} repeats runs undisturbed,
then with `--kill-after {victim}@S`, S halfway through the undisturbed run's training (member {victim}
stops at its next transport operation, as a killed process would). The survivors agree on a new view,
rebuild the Halton graph over {ranks - 1} members, and from the next epoch take over the dead member's
share of the samples ([fault-tolerance.md](../fault-tolerance.md)). Medians; {cores} cores shared with
other work (load average {load_before} before, {load_after} after). Under MPI the same is done to a
process from outside by `scripts/kill-driver.py --mode mpi` (not run here).

{table}

The failure was seen in epoch {', '.join(map(str, ep))} of the {repeats} runs; detected after
{', '.join(det)} s and recovered after {', '.join(rec)} s
(the view-change line the trainer prints).

![accuracy against time, with and without the kill](malt-fig14.png)
![training loss against time, with and without the kill](malt-fig14-loss.png)

**Reading.** As in MALT, training goes on over the survivors, no member hangs, and {acc_sentence}{bump_sentence} In-process, detection is
immediate (a dead thread is known at once, not after a heartbeat timeout) and recovery takes
milliseconds, while MALT's monitors needed a timeout and a health check ("of the order of seconds").
MALT's time to converge grew with the ranks lost; here the whole run took {time_ratio:.2f}x the
undisturbed run's time{time_sentence}
What the numbers do not show: a machine lost with its cores (which would slow the survivors as in
MALT), detection by heartbeat timeout (the MPI transports' case, measured in
[fault-tolerance.md](../fault-tolerance.md#measured-detection-and-recovery-times)), the samples the
dead member had not yet processed in the epoch of its death (lost for that epoch only), and larger
data.
"""
open(f"{docs}/malt-fig14.md", "w").write(doc)
# where the kill hit, in training seconds, for the plot: the report line after it
k = kill[-1]
print(f"malt-fig14: wrote {docs}/malt-fig14.md")
PY
# The epoch whose report first showed the smaller view, in the last repeat.
kill_epoch=$(awk '/view 1:/{getline; print $3; exit}' "$out/kill-$repeats.log")
mark=$(awk -F, -v e="$kill_epoch" 'NR > 1 && $1 == e - 1 {s0 = $2} NR > 1 && $1 == e {print (s0 + $2) / 2}' \
  "$out/kill-$repeats.csv")
extra="set key bottom right; set arrow from $mark, graph 0 to $mark, graph 1 nohead dt 2; set label 'member $victim killed (epoch $kill_epoch)' at $mark, graph 0.5 left offset 0.5,0"
REPRO_PLOT_EXTRA="$extra; set yrange [0.7:0.86]" \
  repro_plot "$REPRO_DOCS/malt-fig14.png" "$ranks ranks, halton, bsp (last repeat)" "seconds (training)" "test accuracy" \
  "$out/none-$repeats.csv:2:4:undisturbed" "$out/kill-$repeats.csv:2:4:member $victim killed"
REPRO_PLOT_EXTRA="$extra; set key top right; set yrange [0.35:0.95]" \
  repro_plot "$REPRO_DOCS/malt-fig14-loss.png" "$ranks ranks, halton, bsp (last repeat)" "seconds (training)" \
  "training loss of the averaged model" \
  "$out/none-$repeats.csv:2:3:undisturbed" "$out/kill-$repeats.csv:2:3:member $victim killed"
