#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Compares dml-mf (a parameter table, data parallel) with dml-smp-mf (the
static rotation engine, model parallel) on the same rating files at the same
number of in-process ranks (docs/model-parallel.md quotes its output).

  scripts/compare-mf.py --build build [--ranks 4] [--epochs 20] [--seeds 1,2,3,4,5]
      [--power-law 0,0.5,1] [--data "--users 1000 --items 1000 --density 0.1"]
      [--at 1,2,5,10,20] [--reach 0.12] [--extra-mf ARGS] [--extra-smp ARGS]

For each --power-law value, dml-mf --write-ratings generates the ratings once
(data seed 1; a planted rank-5 truth, noise 0.1, 90% train / 10% test, with
--power-law A > 0 user and item i rated with weight (i+1)^-A). Both trainers
then read the same FILE and FILE.test with each training seed of --seeds
(another initialization; for dml-mf also another shuffle), the same rank 5,
lr 0.05 / sqrt(epoch) and reg 0.01; an epoch of dml-smp-mf is one rotation.
Both print 'epoch E S s train rmse X test rmse Y' lines, seconds of training
without the evaluation, which this script reads. Prints Markdown tables,
medians over the seeds: test RMSE after the epochs of --at with the seconds
they took, and the seconds and epochs until the test RMSE first reaches
--reach.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

EPOCH = re.compile(r"^epoch +(\d+) +([0-9.]+) s  train rmse ([0-9.]+)  test rmse ([0-9.]+)")


def run(command):
    out = subprocess.run(command, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(command)}: exit {out.returncode}\n{out.stderr}")
    rows = {}
    for line in out.stdout.splitlines():
        m = EPOCH.match(line)
        if m:
            rows[int(m.group(1))] = (float(m.group(2)), float(m.group(4)))
    final = [line for line in out.stdout.splitlines() if line.startswith("final:")]
    return rows, final[-1] if final else ""


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", required=True)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--seeds", default="1,2,3,4,5")
    p.add_argument("--power-law", default="0,0.5,1", help="comma-separated exponents; 0: uniform")
    p.add_argument("--data", default="--users 1000 --items 1000 --density 0.1",
                   help="dml-mf's generator options (besides --power-law)")
    p.add_argument("--at", default="1,2,5,10,20")
    p.add_argument("--reach", type=float, default=0.12)
    p.add_argument("--extra-mf", default="", help="more arguments for dml-mf")
    p.add_argument("--extra-smp", default="", help="more arguments for dml-smp-mf")
    a = p.parse_args()
    mf = os.path.join(a.build, "examples/mf/dml-mf")
    smp = os.path.join(a.build, "examples/smp_mf/dml-smp-mf")
    for exe in (mf, smp):
        if not os.access(exe, os.X_OK):
            sys.exit(f"compare-mf.py: no {exe} (cmake --build {a.build} --target dml-mf dml-smp-mf)")
    at = [int(x) for x in a.at.split(",") if int(x) <= a.epochs]
    seeds = [int(x) for x in a.seeds.split(",")]
    common = ["--ranks", str(a.ranks), "--rank", "5", "--lr", "0.05", "--reg", "0.01"]
    trainers = {
        "dml-mf (table, bsp)": lambda f, s: [mf, *common, "--epochs", str(a.epochs), "--seed", str(s),
                                             "--ratings", f, "--test-ratings", f + ".test", *a.extra_mf.split()],
        "dml-smp-mf (static rotation, macro sync)": lambda f, s: [
            smp, *common, "--lr-decay", "--rotations", str(a.epochs), "--seed", str(s), "--ratings", f,
            "--test-ratings", f + ".test", *a.extra_smp.split()],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for law in a.power_law.split(","):
            path = os.path.join(tmp, f"ratings-{law}.txt")
            gen = [mf, "--ranks", "1", "--epochs", "1", "--rank", "5", "--seed", "1", "--power-law", law,
                   *a.data.split(), "--write-ratings", path]
            _, final = run(gen)
            with open(path) as f:
                train = sum(1 for line in f if not line.startswith("#"))
            with open(path + ".test") as f:
                test = sum(1 for line in f if not line.startswith("#"))
            print(f"\n### power law {law}: {' '.join(a.data.split())}, {train} training / {test} test ratings\n")
            results = {name: [] for name in trainers}
            for seed in seeds:  # the trainers alternate, so a change of load hits both
                for name, command in trainers.items():
                    rows, final = run(command(path, seed))
                    print(f"{name} power law {law} seed {seed}: {final}", file=sys.stderr)
                    results[name].append(rows)
            print("| trainer | " + " | ".join(f"after {i}" for i in at) + " |")
            print("|---|" + "---|" * len(at))
            for name, runs in results.items():
                cells = []
                for i in at:
                    rmse = statistics.median(r[i][1] for r in runs)
                    s = statistics.median(r[i][0] for r in runs)
                    cells.append(f"{rmse:.4f} ({s:.3f} s)")
                print(f"| {name} | " + " | ".join(cells) + " |")
            print()
            print(f"| trainer | seconds to test RMSE {a.reach} (median; per seed) | epochs (per seed) "
                  f"| test RMSE after {a.epochs} (per seed) |")
            print("|---|---|---|---|")
            for name, runs in results.items():
                reached = [next(((e, r[e][0]) for e in sorted(r) if r[e][1] <= a.reach), None) for r in runs]
                secs = [x[1] for x in reached if x]
                its = ", ".join(str(x[0]) if x else "not reached" for x in reached)
                per = ", ".join(f"{x[1]:.3f}" if x else "-" for x in reached)
                med = f"{statistics.median(secs):.3f}" if len(secs) == len(runs) else "not reached by every seed"
                last = ", ".join(f"{r[a.epochs][1]:.4f}" for r in runs)
                print(f"| {name} | {med} ({per}) | {its} | {last} |")


if __name__ == "__main__":
    main()
