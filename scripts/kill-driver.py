#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Kills one member of a training run at a uniformly random moment and
checks what the others do.

Each run picks a victim rank and a moment uniformly in [0, T], T the wall
time of an undisturbed run measured first (so start-up, data loading,
vector construction, training, evaluation and shut-down are all hit), and
kills the victim then:
  inproc  the trainer gets --kill-after VICTIM@SECONDS (the member stops at
          its next transport operation, as if its process had died);
  mpi     the run is started under mpirun --enable-recovery and the
          victim's process gets SIGKILL from outside.
Every run must end in one of these ways:
  survived  every survivor exits 0 and the run prints its 'final:' line
            with a quality within --tolerance of the undisturbed run (below
            it for an accuracy, above it for an rmse or loss);
  error     every survivor that did not finish exits non-zero within
            2x the heartbeat timeout of the kill (plus --slack), and some
            message names the dead member;
  error-at-start-up  killed inside MPI_Init or the start-up collectives
            before any heartbeat exists: the survivors exit non-zero after
            DML_STARTUP_TIMEOUT_MS (--startup-timeout-ms; max(4x heartbeat,
            10 s) after MPI_Init) and say so, without a name.
Under mpi, a run whose processes have all ended but whose mpirun has not
exited LAUNCHER_GRACE seconds later (Open MPI 4.1's mpirun does that now and
then after a process was killed during its PMIx wire-up, in the first
~0.1 s) is ended by the driver and judged by its processes' statuses; the
summary counts such runs separately.
Anything else is a failure: a hang (no end within the limit), exit status 0
without a complete result (a lie: no 'final:' line, or one whose seconds,
epochs, iterations, rounds, updates or bytes are 0 when the undisturbed
run's are not, i.e. printed from a record nobody filled), or an error that
does not name the dead member; with --not-below-undisturbed KEY, also a
survived run whose final KEY= count is below the undisturbed run's (less
--count-slack of it); with --must-survive, also an error exit (for
in-process trainers, which recover from any death). --quality KEY judges
the final line's KEY= instead of its first value (dml-pagerank's change).
Open MPI 4.1's mpirun returns 0 under --enable-recovery whatever its
processes return, so each rank runs under a small shell wrapper that records
its own exit status.

  scripts/kill-driver.py --trainer build/examples/logreg/dml-logreg \\
      --mode mpi --transport mpi_rma --ranks 6 --runs 20 -- \\
      --topology halton --consistency notify_ack --epochs 8

Prints one line per run and a summary table (--table FILE also writes it as
Markdown); exits 1 when any run failed.
"""
import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

FINAL = re.compile(r"^final: (\w+)=(-?[0-9.]+)", re.M)
# A final line whose counters are zero was printed from a record nobody
# filled (a member that took over the report without the result): its
# quality is made up, however good it looks (an rmse of 0 is "better").
EMPTY_FINAL = re.compile(r"^final: .*\b(?:seconds=0\.0+|(?:epochs|iterations|rounds|updates|bytes)=0)(?:\s|$)",
                         re.M)
# Final values for which lower is better (dml-mf prints rmse=...); the
# tolerance then bounds how far above the undisturbed run a survivor may end.
LOWER_IS_BETTER = {"rmse", "loss", "mse", "error", "objective", "change"}
# Seconds mpirun may outlive the last of its processes before the driver
# ends it (see Run.go); the run is then judged by the processes' statuses.
LAUNCHER_GRACE = 10.0


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trainer", required=True, help="path of a dml reference trainer")
    p.add_argument("--mode", choices=["inproc", "mpi"], default="inproc")
    p.add_argument("--transport", choices=["mpi_rma", "mpi"], default="mpi_rma",
                   help="MPI transport (--mode mpi)")
    p.add_argument("--ranks", type=int, default=6)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--heartbeat-ms", type=int, default=1000,
                   help="DML_HEARTBEAT_TIMEOUT_MS for the runs")
    p.add_argument("--startup-timeout-ms", type=int, default=15000,
                   help="DML_STARTUP_TIMEOUT_MS for the runs: the bound on MPI_Init, where a dead "
                        "member cannot be named yet")
    p.add_argument("--slack", type=float, default=3.0,
                   help="seconds allowed on top of 2x the heartbeat timeout "
                        "(process exit, MPI teardown)")
    p.add_argument("--tolerance", type=float, default=0.03,
                   help="how far below the undisturbed quality a survived run may end (above, for "
                        "an rmse or loss)")
    p.add_argument("--hang-factor", type=float, default=3.0,
                   help="a run longer than this times T plus 30 s is a hang")
    p.add_argument("--within", type=float, default=None, metavar="SECONDS",
                   help="kill in the first SECONDS of the run instead of anywhere in it "
                   "(to stress start-up)")
    p.add_argument("--within-share", type=float, default=None, metavar="F",
                   help="kill in the first F (0 < F <= 1) of the undisturbed run's time: a window "
                   "that scales with the machine's speed; a run whose view change comes after epoch "
                   "F x the undisturbed run's last one (the machine sped up) must still survive, "
                   "but its quality is not judged and the moment is drawn again, earlier")
    p.add_argument("--last", type=float, default=None, metavar="SECONDS",
                   help="kill in the last SECONDS of the run instead of anywhere in it "
                   "(to stress the last report, the final line and shut-down)")
    p.add_argument("--kill-at-line", default=None, metavar="REGEX",
                   help="(--mode mpi) kill when the run prints a line matching REGEX instead of at "
                   "a random moment, e.g. '^epoch +8 ' for right after the last report")
    p.add_argument("--victim", type=int, default=None, metavar="RANK",
                   help="always kill this member (default: a random one per run; 0 is the "
                   "reporting member)")
    p.add_argument("--not-below-undisturbed", action="append", default=[], metavar="KEY",
                   help="a survived run's final KEY=N must be at least the undisturbed run's, less "
                   "--count-slack of it: a count of work that a failure adds to but for what the dead "
                   "member did after its last report, e.g. dml-smp-mf's updates (work redone after a "
                   "failure counts again); repeatable")
    p.add_argument("--count-slack", type=float, default=0.0, metavar="SHARE",
                   help="the share of the undisturbed count a survived run may lack "
                   "(--not-below-undisturbed), e.g. what a member did after its last report")
    p.add_argument("--quality", default=None, metavar="KEY",
                   help="judge the final line's KEY= instead of its first value (lower is better for "
                   + ", ".join(sorted(LOWER_IS_BETTER)) + "), e.g. dml-pagerank's change")
    p.add_argument("--must-survive", action="store_true",
                   help="an error exit is a failure too, however quickly it names the dead member (for "
                   "in-process trainers that recover from any death)")
    p.add_argument("--mpirun", default="mpirun")
    p.add_argument("--table", help="also write the summary as Markdown to this file")
    p.add_argument("--save-output", metavar="DIR",
                   help="write each run's whole output (and, under mpi, each rank's exit status) "
                   "to DIR/run-<N>.txt")
    p.add_argument("args", nargs=argparse.REMAINDER, help="-- then the trainer's own options")
    a = p.parse_args()
    if a.args and a.args[0] == "--":
        a.args = a.args[1:]
    if a.ranks < 2 or a.runs < 1:
        p.error("--ranks must be at least 2 and --runs at least 1")
    if sum(x is not None for x in (a.within, a.within_share, a.last)) > 1:
        p.error("--within, --within-share and --last exclude each other")
    if a.within_share is not None and not 0 < a.within_share <= 1:
        p.error("--within-share must be in (0, 1]")
    if a.kill_at_line is not None:
        if a.mode != "mpi":
            p.error("--kill-at-line needs --mode mpi (in-process kills come at their next transport operation)")
        try:
            a.kill_at_line = re.compile(a.kill_at_line)
        except re.error as e:
            p.error(f"--kill-at-line: {e}")
    if a.victim is not None and not 0 <= a.victim < a.ranks:
        p.error(f"--victim {a.victim}: there are only {a.ranks} ranks")
    if not os.access(a.trainer, os.X_OK):
        p.error(f"--trainer {a.trainer} is not an executable")
    if a.mode == "mpi" and not any(os.access(os.path.join(d, a.mpirun), os.X_OK)
                                   for d in os.environ.get("PATH", "").split(os.pathsep)):
        p.error(f"{a.mpirun} not found")
    return a


class Run:
    """One trainer run, optionally with one member killed at `kill_at` s."""

    def __init__(self, a, victim=None, kill_at=None):
        self.a, self.victim, self.kill_at = a, victim, kill_at
        self.status_dir = tempfile.mkdtemp(prefix="dml-kill-")
        self.killed_at = None  # seconds after start when the kill happened
        self.missed = False    # the run ended before the kill moment

    def command(self):
        a = self.a
        if a.mode == "inproc":
            cmd = [a.trainer, "--ranks", str(a.ranks)] + a.args
            if self.victim is not None:
                # The trainers take a positive time: a draw that rounds to
                # 0.000 is the earliest they accept, 1 ms.
                cmd += ["--kill-after", f"{self.victim}@{max(self.kill_at, 0.001):.3f}"]
            return cmd
        wrapper = ('"$@"; rc=$?; echo $rc > "$DML_KILL_STATUS/rank.'
                   '${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-x}}"; exit $rc')
        return [a.mpirun, "--oversubscribe", "--enable-recovery", "-np", str(a.ranks),
                "-x", "DML_KILL_STATUS", "-x", "DML_HEARTBEAT_TIMEOUT_MS", "-x", "DML_STARTUP_TIMEOUT_MS",
                "sh", "-c", wrapper, "sh", a.trainer, "--transport", a.transport] + a.args

    def mpi_victim_pid(self, proc_pid):
        """The trainer process of rank `victim` (a descendant of mpirun)."""
        name = os.path.basename(self.a.trainer)[:15]
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/comm") as f:
                    if f.read().strip() != name:
                        continue
                with open(f"/proc/{entry}/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            if f"OMPI_COMM_WORLD_RANK={self.victim}".encode() in env and \
                    f"DML_KILL_STATUS={self.status_dir}".encode() in env:
                return int(entry)
        return None

    def go(self, limit):
        env = dict(os.environ, DML_KILL_STATUS=self.status_dir,
                   DML_HEARTBEAT_TIMEOUT_MS=str(self.a.heartbeat_ms),
                   DML_STARTUP_TIMEOUT_MS=str(self.a.startup_timeout_ms),
                   OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        start = time.monotonic()
        proc = subprocess.Popen(self.command(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True, text=True, errors="replace")
        pattern = self.a.kill_at_line if self.victim is not None else None
        if self.victim is not None and self.a.mode == "mpi" and pattern is None:
            threading.Thread(target=self._kill_mpi, args=(proc, start), daemon=True).start()
        elif self.victim is not None and pattern is None:
            self.killed_at = self.kill_at
        lines = []

        def read():  # and with --kill-at-line, kill when the line appears
            for line in proc.stdout:
                lines.append(line)
                if pattern is not None and self.killed_at is None and pattern.search(line):
                    self._kill_victim(proc, start)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        self.hung = False
        self.launcher_stuck = None  # seconds mpirun outlived its last process
        ranks_ended = None  # when every rank's wrapper had written its status
        while True:
            try:
                proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if self.a.mode == "mpi" and ranks_ended is None and \
                    len([f for f in os.listdir(self.status_dir) if f.startswith("rank.")]) >= self.a.ranks:
                ranks_ended = now
            # Open MPI 4.1's mpirun sometimes never exits after a process
            # was killed during its PMIx wire-up (the first ~0.1 s), although
            # every process has ended: that is the launcher's hang, not a
            # dml one. End it and judge the run by the processes' statuses.
            if ranks_ended is not None and now - ranks_ended > LAUNCHER_GRACE:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                self.launcher_stuck = now - ranks_ended
                break
            if now - start > limit:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                self.hung = True
                break
        reader.join()
        if pattern is not None and self.killed_at is None:
            self.missed = True  # the line never came
        self.seconds = time.monotonic() - start
        if self.launcher_stuck is not None:
            self.seconds = ranks_ended - start
        self.output = "".join(lines)
        self.rc = proc.returncode
        self.rank_status = {}
        for f in os.listdir(self.status_dir):
            with open(os.path.join(self.status_dir, f)) as fh:
                text = fh.read().strip()
            if f.startswith("rank.") and text.lstrip("-").isdigit():
                self.rank_status[int(f[5:])] = int(text)
        for f in os.listdir(self.status_dir):
            os.unlink(os.path.join(self.status_dir, f))
        os.rmdir(self.status_dir)
        return self

    def _kill_mpi(self, proc, start):
        while time.monotonic() - start < self.kill_at:
            if proc.poll() is not None:
                self.missed = True
                return
            time.sleep(0.005)
        self._kill_victim(proc, start)

    def _kill_victim(self, proc, start):
        pid = None
        while pid is None and proc.poll() is None:
            pid = self.mpi_victim_pid(proc.pid)  # not started yet: wait for it
            if pid is None:
                time.sleep(0.01)
        if pid is None:
            self.missed = True
            return
        try:
            os.kill(pid, signal.SIGKILL)
            self.killed_at = time.monotonic() - start
        except ProcessLookupError:
            self.missed = True

    def quality(self):
        """The final line's first value, or its --quality KEY's."""
        m = FINAL.findall(self.output)
        if not m:
            return None
        if self.a.quality is None:
            return float(m[-1][1])
        v = re.search(rf"\b{re.escape(self.a.quality)}=(-?[0-9.]+(?:[eE][-+]?[0-9]+)?)(?:\s|$)",
                      last_final_line(self.output))
        return float(v.group(1)) if v else None

    def lower_is_better(self):
        """Whether the quality is an error (rmse, loss, change), not an accuracy."""
        if self.a.quality is not None:
            return self.a.quality in LOWER_IS_BETTER
        m = FINAL.findall(self.output)
        return bool(m) and m[-1][0] in LOWER_IS_BETTER


def qfmt(a, q):
    """A quality for the log: 4 decimals, or 4 digits for a --quality KEY
    (dml-pagerank's change is 1e-15 when converged)."""
    return f"{q:.4f}" if a.quality is None else f"{q:.3e}"


def last_final_line(output):
    """The last 'final:' line of a run's output, or ''."""
    lines = [l for l in output.splitlines() if l.startswith("final: ")]
    return lines[-1] if lines else ""


def final_count(output, key):
    """The number after KEY= on the last 'final:' line, or None."""
    m = re.search(rf"\b{re.escape(key)}=([0-9]+)\b", last_final_line(output))
    return int(m.group(1)) if m else None


EPOCH_LINE = re.compile(r"^(?:epoch|iteration|round) +([0-9]+) ")


def epoch_of_view_change(output):
    """(last epoch line before the first view-change line, last epoch line of
    the run): what the trainer had reached when the survivors noticed the
    kill. None for the first when no view changed (or no epoch lines).
    Iterations and rounds count as epochs."""
    seen, at_view = None, None
    for line in output.splitlines():
        m = EPOCH_LINE.match(line)
        if m:
            seen = int(m.group(1))
        elif line.startswith("view ") and at_view is None:
            at_view = seen if seen is not None else 0
    return at_view, seen


def classify(a, run, reference, reference_output="", judge_quality=True):
    """(outcome, detail): outcome is survived, error, no-kill or a failure.
    Without `judge_quality` a survived run's quality is not compared (a kill
    that landed outside --within-share's window, see main)."""
    if run.hung:
        return "HANG", f"no end within {run.seconds:.1f} s"
    if a.mode == "mpi":
        survivors = {r: s for r, s in run.rank_status.items() if r != run.victim}
        missing = [r for r in range(a.ranks) if r != run.victim and r not in run.rank_status]
        if missing:
            return "LIE", f"ranks {missing} left no exit status"
        statuses = list(survivors.values())
    else:
        statuses = [run.rc]
    q = run.quality()
    if run.killed_at is None or run.missed:
        ok = all(s == 0 for s in statuses) and q is not None
        return ("no-kill" if ok else "FAILED"), "run ended before the kill" + ("" if ok else f"; rc {statuses}")
    if all(s == 0 for s in statuses):
        if q is None:
            if a.quality is not None and FINAL.search(run.output):
                return "LIE", f"exit status 0 with a final line whose {a.quality}= is missing or not a number"
            return "LIE", "exit status 0 without a final line"
        empty = EMPTY_FINAL.search(run.output)
        if empty and not EMPTY_FINAL.search(reference_output):
            return "LIE", f"exit status 0 with a final line of zeros: {empty.group(0).strip()!r}"
        if judge_quality and run.lower_is_better() and q > reference + a.tolerance:
            return "LIE", f"exit status 0 with {qfmt(a, q)} > {qfmt(a, reference + a.tolerance)} (lower is better)"
        if judge_quality and not run.lower_is_better() and q < reference - a.tolerance:
            return "LIE", f"exit status 0 with quality {qfmt(a, q)} < {qfmt(a, reference - a.tolerance)}"
        detail = f"quality {qfmt(a, q)}"
        for key in a.not_below_undisturbed:
            got, undisturbed = final_count(run.output, key), final_count(reference_output, key)
            if undisturbed is None:
                return "FAILED", f"the undisturbed run's final line has no {key}="
            least = undisturbed - int(a.count_slack * undisturbed)
            if got is None or got < least:
                return "LIE", (f"exit status 0 with {key}={got}, below {least} (the undisturbed run's "
                               f"{undisturbed} less {a.count_slack:g} of it)")
            detail += f", {key} {got} >= {least}"
        finals = len(FINAL.findall(run.output))
        if finals > 1:
            detail += f" ({finals} final lines: the reporter died after printing one)"
        lines = run.output.splitlines()
        last_epoch = max((i for i, l in enumerate(lines) if l.startswith(("epoch ", "iteration "))), default=-1)
        if any(l.startswith("view ") for l in lines[last_epoch + 1:]):
            detail += " (a survivor reported after the last epoch line)"
        return "survived", detail
    bound = 2 * a.heartbeat_ms / 1000 + a.slack
    after = run.seconds - run.killed_at
    named = re.search(rf"member {run.victim}\b", run.output) is not None
    if not named and "(start-up) did not return" in run.output:
        # Killed inside MPI_Init or the start-up collectives right after it:
        # no heartbeat exists yet, so the survivors can only give up after
        # the start-up bound, without a name.
        bound = max(a.startup_timeout_ms / 1000, 4 * a.heartbeat_ms / 1000, 10) + a.slack
        if after > bound:
            return "SLOW", f"start-up error {after:.1f} s after the kill (bound {bound:.1f} s)"
        return "error-at-start-up", f"exit {sorted(set(s for s in statuses if s))} {after:.1f} s after the kill"
    if not named:
        return "UNNAMED", f"exit {sorted(set(statuses))} without naming member {run.victim}"
    if after > bound:
        return "SLOW", f"error {after:.1f} s after the kill (bound {bound:.1f} s)"
    return "error", f"exit {sorted(set(s for s in statuses if s))} {after:.1f} s after the kill, names member {run.victim}"


def main():
    a = parse_args()
    rng = random.Random(a.seed)
    print(f"kill-driver: {a.trainer} {' '.join(a.args)} | mode {a.mode}"
          f"{' (' + a.transport + ')' if a.mode == 'mpi' else ''}, {a.ranks} ranks, {a.runs} runs",
          flush=True)
    ref = Run(a).go(limit=600)
    reference = ref.quality()
    if ref.hung or reference is None or (a.mode == "inproc" and ref.rc != 0):
        print("kill-driver: the undisturbed run failed:\n" + ref.output[-2000:])
        return 1
    total = ref.seconds
    print(f"undisturbed: {total:.2f} s, quality {qfmt(a, reference)}", flush=True)
    limit = a.hang_factor * total + 30 + a.startup_timeout_ms / 1000
    _, ref_last_epoch = epoch_of_view_change(ref.output)
    counts, worst_after = {}, 0.0
    failures = 0
    for i in range(a.runs):
        victim = rng.randrange(a.ranks)
        if a.victim is not None:
            victim = a.victim
        if a.last is not None:
            at = rng.uniform(max(0.0, total - a.last), total)
        elif a.within_share is not None:
            at = rng.uniform(0, a.within_share * total)
        else:
            at = rng.uniform(0, min(total, a.within) if a.within else total)
        run = Run(a, victim, at).go(limit)
        outcome, detail = classify(a, run, reference, ref.output)
        # --within-share draws a moment by the clock, but means a share of
        # the training: on a loaded machine the undisturbed run can take
        # several times as long as a later one, and a kill then lands after
        # the window, where losing a member's updates is expected to cost
        # quality (docs/tables.md). Such a run is still held to its exit
        # status and final line; only its quality is not judged, and the
        # moment is drawn again, earlier.
        redraws = 0
        while a.within_share is not None and outcome != "survived" and redraws < 8:
            at_view, _ = epoch_of_view_change(run.output)
            if at_view is None or not ref_last_epoch or at_view <= a.within_share * ref_last_epoch:
                break
            late, late_detail = classify(a, run, reference, ref.output, judge_quality=False)
            if late != "survived":
                break
            print(f"run {i + 1:3d}: kill member {victim} at {run.killed_at:.2f} s was noticed after epoch "
                  f"{at_view} of {ref_last_epoch}, past the window (the first {a.within_share:g}): "
                  f"{late_detail}, not judged; drawn again", flush=True)
            redraws += 1
            at = rng.uniform(0, at)
            run = Run(a, victim, at).go(limit)
            outcome, detail = classify(a, run, reference, ref.output)
        if a.must_survive and outcome.startswith("error"):
            outcome, detail = "NOT-SURVIVED", f"{outcome} under --must-survive: {detail}"
        if run.launcher_stuck is not None:
            detail += (f" (every process had ended, mpirun had not {run.launcher_stuck:.0f} s later:"
                       " ended by the driver)")
            counts["mpirun stuck after its processes ended"] = counts.get(
                "mpirun stuck after its processes ended", 0) + 1
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome.startswith("error"):
            worst_after = max(worst_after, run.seconds - run.killed_at)
        if outcome.isupper() or outcome == "FAILED":
            failures += 1
            # Enough lines for the first of several processes' reports (a
            # sanitizer's, a backtrace), which CI's log must show: a failure
            # under load may not come back when rerun by hand.
            tail = "\n    ".join(run.output.strip().splitlines()[-80:])
            detail += "\n    " + tail
        when = f"{run.killed_at:.2f}" if run.killed_at is not None else f"({at:.2f})"
        if a.save_output:
            os.makedirs(a.save_output, exist_ok=True)
            with open(os.path.join(a.save_output, f"run-{i + 1}.txt"), "w") as f:
                f.write(f"kill member {victim} at {when} s: {outcome}: {detail}\n")
                if a.mode == "mpi":
                    f.write(f"exit status by rank: {dict(sorted(run.rank_status.items()))}\n")
                f.write(run.output)
        print(f"run {i + 1:3d}: kill member {victim} at {when} s: {outcome}: {detail}", flush=True)
    rows = [("runs", a.runs)] + sorted(counts.items())
    table = "| outcome | runs |\n|---|---|\n" + "".join(f"| {k} | {v} |\n" for k, v in rows)
    if "error" in counts:
        table += f"\nslowest error exit: {worst_after:.2f} s after the kill\n"
    print(table)
    if a.table:
        with open(a.table, "w") as f:
            f.write(table)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
