#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Kills one rank of a running MPI trainer from outside, the way a crash or an
# operator's kill -9 would, and checks that the survivors finish.
#
#   kill_driver.sh <victim rank> <after epoch> <max loss> <time limit s> -- <mpiexec command...>
#
# Starts the command (it must use mpiexec --enable-recovery), waits until
# rank 0 has printed the line of <after epoch>, sends SIGKILL to the process
# whose OMPI_COMM_WORLD_RANK is <victim rank>, and waits for the job. Passes
# when the job exits 0 within the time limit, its output has the trainer's
# 'final: loss=' line with a loss <= <max loss>, and the victim was really
# killed mid-run: the trainer reports the view change that removed it.
set -uo pipefail
victim=$1 after=$2 max_loss=$3 limit=$4
shift 4
[[ ${1:-} == -- ]] && shift

out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1 &
job=$!
start=$SECONDS

fail() {
  echo "kill_driver: $*"
  echo "---- output of the job ----"
  cat "$out"
  kill -9 "$job" 2>/dev/null
  pkill -9 -P "$job" 2>/dev/null
  exit 1
}

# The victim: a process of this job (mpiexec's child on one node) whose
# environment names its rank.
find_victim() {
  local pid
  for pid in $(pgrep -P "$job"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$victim"; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}

printf -v mark 'epoch %3d ' "$after"
until grep -q "^$mark" "$out"; do
  kill -0 "$job" 2>/dev/null || fail "the job ended before rank 0 reached epoch $after"
  ((SECONDS - start < limit)) || fail "no epoch $after line within $limit s"
  sleep 0.01
done
pid=$(find_victim) || fail "no process with OMPI_COMM_WORLD_RANK=$victim"
kill -9 "$pid" || fail "could not kill rank $victim (pid $pid)"
echo "kill_driver: SIGKILL to rank $victim (pid $pid) after epoch $after, $((SECONDS - start)) s into the run"

while kill -0 "$job" 2>/dev/null; do
  ((SECONDS - start < limit)) || fail "the survivors did not finish within $limit s"
  sleep 0.1
done
wait "$job"
rc=$?
cat "$out"
((rc == 0)) || fail "the job exited with status $rc"
line=$(grep -m1 '^final: loss=' "$out") || fail "no 'final: loss=' line"
loss=${line#final: loss=}
loss=${loss%% *}
awk -v l="$loss" -v m="$max_loss" 'BEGIN { exit !(l + 0 <= m + 0) }' || fail "final loss $loss is above $max_loss"
grep -q "^view [0-9]*: member $victim removed" "$out" ||
  fail "no view change removed rank $victim (did the run end before the kill landed?)"
echo "kill_driver: survivors finished with loss $loss <= $max_loss"
