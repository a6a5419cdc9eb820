#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Staleness against training samples (GeePS, Cui's thesis Fig. 4.13, at
small scale): dml-mlp with one table per layer (--params tables) on
Fashion-MNIST under bsp (slack 0) and ssp with slack 1 and 3, evaluated
every --evaluate-every minibatch steps. For each run: the training samples
all ranks together used until the test accuracy first reached --target.
The slacks take turns within each seed, so that a change in the machine's
load hits them alike.

    bench/mlp_slack.py [--build DIR | --bin PATH] [--ranks 4] [--seeds 3]
                       [--epochs 3] [--every 40] [--target 0.85]
                       [--slacks 0,1,3] [--plot OUT.png] [--csv OUT.csv]
    bench/mlp_slack.py --quick --bin PATH      # ctest's smoke run

Prints a Markdown table: per slack the median samples to the target (and
the fewest and most over the seeds), the median of each seed's ratio to
slack 0's samples, the same for the first point where the mean of --window
consecutive evaluations reaches the target, the final accuracy, seconds
per epoch, how many of the members' clocks had a read wait for the slack
bound, and how many clocks the rows read lagged behind a bsp read on
average (dml-mlp's 'tables:' line). A run that never reaches
the target shows "not reached" (and counts as such in the ratios). --csv
writes every evaluation (slack, seed, samples, accuracy); --plot draws
accuracy against samples (needs matplotlib: Debian's python3-matplotlib).
Exits 1 when a run fails.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

STEP = re.compile(r"^step +(\d+)  epoch +(\d+) +([0-9.]+) s  loss [0-9.]+  accuracy ([0-9.]+)  (\d+) samples$", re.M)
EPOCH = re.compile(r"^epoch +(\d+) +([0-9.]+) s  loss [0-9.]+  accuracy ([0-9.]+) ", re.M)
HEADER = re.compile(r"cb-size (\d+),")
TABLES = re.compile(r"^tables: \d+, ([0-9]+) clocks, [0-9]+ fetches, ([0-9]+) reads waited .*, rows read ([0-9.]+) "
                    r"clocks behind$", re.M)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build", help="build directory holding examples/mlp/dml-mlp")
    p.add_argument("--bin", help="the dml-mlp executable (instead of --build)")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--every", type=int, default=40, help="minibatch steps between evaluations")
    p.add_argument("--target", type=float, default=0.85, help="test accuracy to reach")
    p.add_argument("--window", type=int, default=5,
                   help="also report when the mean of this many consecutive evaluations reaches the target")
    p.add_argument("--slacks", default="0,1,3", help="comma-separated; 0 is bsp, 'asp' no bound")
    p.add_argument("--limit", type=int, default=0, help="training samples (0: all 60000)")
    p.add_argument("--quick", action="store_true", help="smoke run: 1000 samples, 1 epoch, 1 seed, 2000 test samples")
    p.add_argument("--csv", help="write every evaluation to this file")
    p.add_argument("--plot", help="draw accuracy against samples into this PNG")
    a = p.parse_args()
    a.bin = a.bin or os.path.join(a.build, "examples/mlp/dml-mlp")
    if not os.access(a.bin, os.X_OK):
        p.error(f"no executable {a.bin} (cmake --build {a.build} --target dml-mlp)")
    try:
        a.slacks = [s if s == "asp" else int(s) for s in a.slacks.split(",")]
    except ValueError:
        p.error(f"--slacks: not a list of whole numbers or 'asp': {a.slacks}")
    if not a.slacks or any(s != "asp" and not 0 <= s <= 1000 for s in a.slacks):
        p.error("--slacks: each in 0 .. 1000, or asp")
    if min(a.ranks, a.seeds, a.epochs, a.every, a.window) < 1:
        p.error("--ranks, --seeds, --epochs, --every and --window must be at least 1")
    if a.quick:
        a.limit, a.epochs, a.seeds, a.every = 1000, 1, 1, 3
    return a


def run(a, slack, seed):
    """One training run: its evaluations [(samples, accuracy)], seconds per
    epoch, clocks and reads that waited."""
    policy = (["--consistency", "bsp"] if slack == 0 else ["--consistency", "asp"] if slack == "asp" else
              ["--consistency", "ssp", "--slack", str(slack)])
    cmd = [a.bin, "--params", "tables", "--ranks", str(a.ranks), "--epochs", str(a.epochs), "--seed", str(seed),
           "--evaluate-every", str(a.every)] + policy
    if a.limit:
        cmd += ["--limit", str(a.limit)]
    if a.quick:
        cmd += ["--test-limit", "2000"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"mlp_slack.py: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    out = r.stdout
    cb = int(HEADER.search(out).group(1))
    points = [(int(m.group(5)), float(m.group(4))) for m in STEP.finditer(out)]
    epochs = [(int(m.group(1)), float(m.group(2)), float(m.group(3))) for m in EPOCH.finditer(out)]
    # An epoch line's samples: the steps of an epoch times ranks x cb-size
    # (every member makes the same number of steps).
    steps_per_epoch = (a.limit or 60000) // a.ranks // cb
    points += [(e * steps_per_epoch * cb * a.ranks, acc) for e, _, acc in epochs if e > 0]
    points.sort()
    last = epochs[-1]
    t = TABLES.search(out)
    return {"points": points, "seconds_per_epoch": last[1] / max(last[0], 1), "final": last[2],
            "clocks": int(t.group(1)), "waited": int(t.group(2)), "behind": float(t.group(3)),
            "command": " ".join(cmd)}


def reached(points, target, window=1):
    """Samples at the first evaluation where the mean accuracy of the last
    `window` evaluations is at least `target` (window 1: the first
    evaluation that reaches it; a wider window is less at the mercy of one
    lucky evaluation: the test accuracy swings by about 0.01 between
    neighbouring evaluations)."""
    for i in range(window - 1, len(points)):
        if statistics.fmean(acc for _, acc in points[i - window + 1:i + 1]) >= target:
            return points[i][0]
    return None


def main():
    a = parse_args()
    runs = {s: [] for s in a.slacks}
    for seed in range(1, a.seeds + 1):
        for s in a.slacks:
            runs[s].append(run(a, s, seed))
            print(f"# seed {seed} slack {s}: samples to {a.target}: {reached(runs[s][-1]['points'], a.target)}, "
                  f"final {runs[s][-1]['final']:.4f}", file=sys.stderr, flush=True)
    base = a.slacks[0]
    med = statistics.median
    print(f"dml-mlp --params tables, {a.ranks} in-process ranks, {a.limit or 60000} training samples, "
          f"{a.epochs} epochs, evaluated every {a.every} steps, {a.seeds} seeds; samples to test accuracy "
          f"{a.target}")
    print()
    print(f"| slack | samples to {a.target} (median) | fewest-most | vs slack {base} | mean of {a.window} "
          f"evaluations to {a.target} | vs slack {base} | final accuracy | s / epoch | waits per clock "
          "| clocks behind |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in a.slacks:
        smooth = [reached(r["points"], a.target, a.window) for r in runs[s]]
        smooth_ok = [g for g in smooth if g is not None]
        smooth_text = (f"{med(smooth_ok):.0f}" if len(smooth_ok) == len(smooth) else
                       "not reached" if not smooth_ok else f"{med(smooth_ok):.0f} ({len(smooth) - len(smooth_ok)} not reached)")
        smooth_ratios = [x / y for x, y in zip(smooth, [reached(b["points"], a.target, a.window) for b in runs[base]])
                         if x is not None and y is not None]
        smooth_ratio = f"{med(smooth_ratios):.2f}" if smooth_ratios else "-"
        got = [reached(r["points"], a.target) for r in runs[s]]
        ok = [g for g in got if g is not None]
        miss = len(got) - len(ok)
        sample_text = f"{med(ok):.0f}" if ok and not miss else ("not reached" if not ok else f"{med(ok):.0f} ({miss} not reached)")
        span = f"{min(ok)}-{max(ok)}" if ok else "-"
        ratios = []
        for r, b in zip(runs[s], runs[base]):
            x, y = reached(r["points"], a.target), reached(b["points"], a.target)
            if x is not None and y is not None:
                ratios.append(x / y)
        ratio = f"{med(ratios):.2f}" if ratios else "-"
        waited = med(r["waited"] / r["clocks"] for r in runs[s]) if all(r["clocks"] for r in runs[s]) else 0
        print(f"| {s} | {sample_text} | {span} | {ratio} | {smooth_text} | {smooth_ratio} "
              f"| {med(r['final'] for r in runs[s]):.4f} "
              f"| {med(r['seconds_per_epoch'] for r in runs[s]):.2f} | {waited:.2f} "
              f"| {med(r['behind'] for r in runs[s]):.3f} |")
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("slack,seed,samples,accuracy\n")
            for s in a.slacks:
                for seed, r in enumerate(runs[s], 1):
                    for samples, acc in r["points"]:
                        f.write(f"{s},{seed},{samples},{acc:.4f}\n")
    if a.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("mlp_slack.py: no matplotlib (Debian: python3-matplotlib); no plot", file=sys.stderr)
            return 0
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for i, s in enumerate(a.slacks):
            for seed, r in enumerate(runs[s], 1):
                xs, ys = zip(*r["points"])
                ax.plot([x / 1000 for x in xs], ys, color=f"C{i}", alpha=0.8, linewidth=1,
                        label=("bsp (slack 0)" if s == 0 else "asp (no bound)" if s == "asp" else
                               f"ssp, slack {s}") if seed == 1 else None)
        ax.axhline(a.target, color="grey", linestyle=":", linewidth=1)
        ax.set_ylim(max(0.0, a.target - 0.15), min(1.0, a.target + 0.05))
        ax.set_xlabel("training samples, all ranks (thousands)")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"dml-mlp, a table per layer, {a.ranks} in-process ranks ({a.seeds} seeds each)")
        ax.legend(loc="lower right")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(a.plot, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
