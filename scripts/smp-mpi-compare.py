#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Compares the static-engine trainers on in-process ranks with the same
runs under mpiexec (docs/model-parallel.md, "Under MPI"):

  scripts/smp-mpi-compare.py --build build [--ranks 4] [--repeats 5]
      [--transport mpi_rma] [--mpiexec 'mpiexec --oversubscribe']

For dml-smp-mf (the default generated matrix, 50 rotations) and dml-smp-lda
(the default generated corpus, 50 sweeps), runs --ranks in-process ranks
and mpiexec -n RANKS --transport T, the repeats of the two interleaved, and
prints per trainer and mode: the median and every value of the 'final:'
line's seconds (training: dml-smp-mf leaves out the RMSE evaluation,
dml-smp-lda the log-likelihood), the median wall seconds of the whole
command (start-up, data generation, MPI start and shut-down included),
the final value (the same both ways, or the runs differ) and the load
average before and after.
"""
import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

FINAL = re.compile(r"\nfinal: (rmse|loglik)=(\S+) seconds=(\S+)")


def run(cmd):
    start = time.monotonic()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    wall = time.monotonic() - start
    m = FINAL.search(out.stdout)
    if not m:
        sys.exit("no 'final:' line from " + " ".join(cmd) + "\n" + out.stdout + out.stderr)
    return m.group(2), float(m.group(3)), wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--transport", default="mpi_rma", choices=["mpi_rma", "mpi"])
    ap.add_argument("--mpiexec", default="mpiexec --oversubscribe")
    a = ap.parse_args()
    trainers = {
        "dml-smp-mf": (os.path.join(a.build, "examples/smp_mf/dml-smp-mf"), ["--rotations", "50"]),
        "dml-smp-lda": (os.path.join(a.build, "examples/smp_lda/dml-smp-lda"), ["--iterations", "50"]),
    }
    modes = {
        "inproc": lambda exe, args: [exe, *args, "--ranks", str(a.ranks)],
        "mpiexec": lambda exe, args: [*shlex.split(a.mpiexec), "-n", str(a.ranks), exe, *args,
                                      "--transport", a.transport],
    }
    load_before = os.getloadavg()
    results = {(t, m): [] for t in trainers for m in modes}
    for _ in range(a.repeats):
        for t, (exe, args) in trainers.items():
            for m, command in modes.items():
                results[(t, m)].append(run(command(exe, args)))
    load_after = os.getloadavg()
    print(f"{a.ranks} ranks, {a.repeats} repeats interleaved, mpiexec with --transport {a.transport}; "
          f"load average (1, 5, 15 min) before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print("| trainer | ranks | training seconds: median (each) | wall seconds: median | final value |")
    print("|---|---|---|---|---|")
    for (t, m), rows in results.items():
        seconds = [r[1] for r in rows]
        walls = [r[2] for r in rows]
        finals = sorted({r[0] for r in rows})
        each = ", ".join(f"{s:.3f}" for s in seconds)
        print(f"| {t} | {m} | {statistics.median(seconds):.3f} ({each}) | {statistics.median(walls):.2f} | "
              f"{' / '.join(finals)} |")


if __name__ == "__main__":
    main()
