#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Compares dml-lda (a parameter table, data parallel) with dml-smp-lda (the
static rotation engine, model parallel) on the same generated corpus at the
same number of in-process ranks (docs/model-parallel.md quotes its output).

  scripts/compare-lda.py --build build [--ranks 4] [--iterations 50]
      [--seeds 1,2,3] [--at 1,2,5,10,20,50] [--reach -5.6] [--extra ARGS]

Every run writes --csv rows (iteration, seconds, loglik). Prints two Markdown
tables, medians over the seeds (each seed is another corpus and another
sampling): log p(w, z) per token after the iterations of --at, with the
seconds they took; and the seconds until the log-likelihood first reaches
--reach. Seconds are wall time of sampling and exchanging, without the
log-likelihood computation, as both trainers count them.
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile


def run(binary, args, path):
    out = subprocess.run([binary] + args + ["--csv", path], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{binary} {' '.join(args)}: exit {out.returncode}\n{out.stderr}")
    with open(path) as f:
        rows = [(int(r["iteration"]), float(r["seconds"]), float(r["loglik"])) for r in csv.DictReader(f)]
    final = [line for line in out.stdout.splitlines() if line.startswith("final:")]
    return rows, final[-1] if final else ""


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", required=True)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--at", default="1,2,5,10,20,50")
    p.add_argument("--reach", type=float, default=-5.6)
    p.add_argument("--extra", default="", help="more arguments for both trainers (the corpus options)")
    a = p.parse_args()
    at = [int(x) for x in a.at.split(",") if int(x) <= a.iterations]
    seeds = [int(x) for x in a.seeds.split(",")]
    trainers = {
        "dml-lda (table, bsp)": os.path.join(a.build, "examples/lda/dml-lda"),
        "dml-smp-lda (static rotation, macro sync)": os.path.join(a.build, "examples/smp_lda/dml-smp-lda"),
    }
    results = {name: [] for name in trainers}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:  # the trainers alternate, so a change of load hits both
            for name, binary in trainers.items():
                args = ["--ranks", str(a.ranks), "--iterations", str(a.iterations), "--seed", str(seed)]
                args += a.extra.split()
                rows, final = run(binary, args, os.path.join(tmp, "run.csv"))
                print(f"{name} seed {seed}: {final}", file=sys.stderr)
                results[name].append(rows)
    print("| trainer | " + " | ".join(f"after {i}" for i in at) + " |")
    print("|---|" + "---|" * len(at))
    for name, runs in results.items():
        cells = []
        for i in at:
            ll = statistics.median(r[i][2] for r in runs)
            s = statistics.median(r[i][1] for r in runs)
            cells.append(f"{ll:.3f} ({s:.2f} s)")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    print(f"| trainer | seconds to log-likelihood {a.reach} (median; per seed) | iterations (per seed) |")
    print("|---|---|---|")
    for name, runs in results.items():
        reached = [next(((it, s) for it, s, ll in r if ll >= a.reach), None) for r in runs]
        secs = [x[1] for x in reached if x]
        its = ", ".join(str(x[0]) if x else "not reached" for x in reached)
        per = ", ".join(f"{x[1]:.2f}" if x else "-" for x in reached)
        med = f"{statistics.median(secs):.2f}" if len(secs) == len(runs) else "not reached by every seed"
        print(f"| {name} | {med} ({per}) | {its} |")


if __name__ == "__main__":
    main()
