#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Measures dml-lasso's schedules (docs/model-parallel.md): data samples and
seconds until the objective is within --within (default 1 %) of the serial
coordinate-descent optimum, for each schedule, rank count, pipeline depth.

  scripts/model-parallel-bench.py --build build [--data FILE --lambda L]
      [--schedules smp,random,priority] [--ranks 1,2,4,8] [--depths 1]
      [--repeats 3] [--iterations N] [--extra '--tau 0.2'] [--plot OUT.png]

  scripts/model-parallel-bench.py --build build --static [--ranks 8] [--repeats 5]
      runs dml-smp-mf (the static rotation engine) with macro and micro
      synchronization, heaviest first on and off: median seconds (training,
      without the RMSE evaluation) and the final test RMSE; the repeats of
      the four configurations are interleaved.

Without --data it generates the set docs/model-parallel.md uses with
dml-gen-lasso. Prints one Markdown table row per configuration: the median
over --repeats runs (seeds 1..repeats) of samples, updates and seconds to
reach the target, or 'not reached' with the best objective seen. Run it on
an otherwise idle machine: seconds are wall time of in-process ranks.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

LINE = re.compile(r"^iteration (\d+) objective (\S+) updates (\d+) samples (\d+) seconds (\S+)$")


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out.stdout


def reference(lasso, data, lam):
    out = run([lasso, "--data", data, "--lambda", str(lam), "--reference"])
    m = re.search(r"reference: objective=(\S+)", out)
    return float(m.group(1))


def trajectory(lasso, data, lam, schedule, ranks, depth, seed, iterations, target, extra):
    cmd = [lasso, "--data", data, "--lambda", str(lam), "--schedule", schedule, "--ranks", str(ranks),
           "--depth", str(depth), "--seed", str(seed), "--iterations", str(iterations), "--target", repr(target)]
    cmd += extra
    rows = []
    for line in run(cmd).splitlines():
        m = LINE.match(line)
        if m:
            rows.append((int(m.group(1)), float(m.group(2)), int(m.group(3)), int(m.group(4)), float(m.group(5))))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--data")
    ap.add_argument("--lambda", dest="lam", type=float)
    ap.add_argument("--schedules", default="smp,priority,random")
    ap.add_argument("--ranks", default="1,2,4,8")
    ap.add_argument("--depths", default="1")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=20000)
    ap.add_argument("--within", type=float, default=0.01)
    ap.add_argument("--extra", default="", help="more dml-lasso arguments, one string")
    ap.add_argument("--static", action="store_true", help="measure the static engine (dml-smp-mf)")
    ap.add_argument("--plot", help="draw the objective against data samples (the largest rank count, "
                    "SMPFRAME Fig. 10) and the samples to the target against ranks (Fig. 4) into this PNG "
                    "(needs matplotlib: Debian's python3-matplotlib)")
    args = ap.parse_args()
    if args.static:
        return static(args)
    lasso = os.path.join(args.build, "examples", "lasso", "dml-lasso")
    data, lam = args.data, args.lam
    if data is None:
        data = os.path.join(args.build, "examples", "lasso", "bench.svm")
        gen = os.path.join(args.build, "examples", "lasso", "dml-gen-lasso")
        print(run([gen, "--rows", "4000", "--features", "1000", "--block", "100", "--rho", "0.9", "--density", "0.1",
                   "--support", "40", "--seed", "1", "--out", data]).strip())
        lam = 200.0 if lam is None else lam
    if lam is None:
        sys.exit("--lambda is required with --data")
    best = reference(lasso, data, lam)
    target = best * (1 + args.within)
    print(f"serial optimum {best:.6f}; target {target:.6f} ({100 * args.within:g} % above)")
    print("| schedule | ranks | depth | samples to target | updates | seconds | samples/s |")
    print("|---|---|---|---|---|---|---|")
    extra = args.extra.split()
    curves = {}  # (schedule, ranks, depth) -> [trajectory per seed]
    to_target = {}  # (schedule, ranks, depth) -> median samples, or None
    for schedule in args.schedules.split(","):
        for ranks in (int(r) for r in args.ranks.split(",")):
            for depth in (int(d) for d in args.depths.split(",")):
                reached, missed = [], []
                for seed in range(1, args.repeats + 1):
                    rows = trajectory(lasso, data, lam, schedule, ranks, depth, seed, args.iterations, target, extra)
                    curves.setdefault((schedule, ranks, depth), []).append(rows)
                    hit = next((r for r in rows if r[1] <= target), None)
                    if hit:
                        reached.append(hit)
                    else:
                        missed.append(min(r[1] for r in rows))
                if len(reached) * 2 > args.repeats:
                    samples = statistics.median(r[3] for r in reached)
                    updates = statistics.median(r[2] for r in reached)
                    seconds = statistics.median(r[4] for r in reached)
                    rate = statistics.median(r[3] / r[4] for r in reached if r[4] > 0)
                    note = f" ({len(missed)} of {args.repeats} missed)" if missed else ""
                    print(f"| {schedule} | {ranks} | {depth} | {samples:,.0f}{note} | {updates:,.0f} | "
                          f"{seconds:.3f} | {rate:,.0f} |")
                    to_target[(schedule, ranks, depth)] = samples
                else:
                    to_target[(schedule, ranks, depth)] = None
                    worst = f"{min(missed):.6g}" if missed else "?"
                    print(f"| {schedule} | {ranks} | {depth} | not reached in {args.iterations} iterations "
                          f"(best objective {worst}) | | | |")
                sys.stdout.flush()
    if args.plot:
        plot(args.plot, curves, to_target, best, args.within)


def plot(path, curves, to_target, best, within):
    """Left panels: objective above the optimum against data samples at the
    two largest rank counts, every seed a line (SMPFRAME Fig. 10); a
    schedule that diverges leaves through the top. Right: the median
    samples to the target against ranks, a schedule that did not get there
    drawn as a cross at the top (Fig. 4)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("model-parallel-bench.py: no matplotlib (Debian: python3-matplotlib); no plot", file=sys.stderr)
        return
    schedules = sorted({k[0] for k in curves}, key=lambda s: ["smp", "priority", "random"].index(s)
                       if s in ("smp", "priority", "random") else 9)
    ranks = sorted({k[1] for k in curves})
    depth = min(k[2] for k in curves)
    colour = {s: f"C{i}" for i, s in enumerate(schedules)}
    shown = ranks[-2:]
    fig, axes = plt.subplots(1, len(shown) + 1, figsize=(5.2 * (len(shown) + 1), 4.3))
    ceiling_rel = 1e3  # a diverging run is drawn up to here
    for left, r in zip(axes, shown):
        for s in schedules:
            for i, rows in enumerate(curves.get((s, r, depth), [])):
                xs = [row[3] / 1e6 for row in rows]
                ys = [min(max((row[1] - best) / best, 1e-7), ceiling_rel) for row in rows]
                left.plot(xs, ys, color=colour[s], linewidth=1, alpha=0.8, label=s if i == 0 else None)
        left.axhline(within, color="grey", linestyle=":", linewidth=1)
        left.set_yscale("log")
        left.set_ylim(1e-3, ceiling_rel)
        left.set_xlabel("data samples (millions)")
        left.set_ylabel("objective above the optimum (relative)")
        left.set_title(f"{r} ranks, depth {depth}: objective against samples")
        left.legend()
        left.grid(alpha=0.3)
    right = axes[-1]
    reached = [v for v in to_target.values() if v is not None]
    ceiling = 1.3 * max(reached) / 1e6 if reached else 1
    for s in schedules:
        xs, ys, xm = [], [], []
        for r in ranks:
            v = to_target.get((s, r, depth))
            (xs if v is not None else xm).append(r)
            if v is not None:
                ys.append(v / 1e6)
        right.plot(xs, ys, "o-", color=colour[s], label=s)
        if xm:
            right.plot(xm, [ceiling] * len(xm), "x", color=colour[s], markersize=10,
                       label=f"{s}: diverged or not reached")
    right.set_xscale("log", base=2)
    right.set_xticks(ranks)
    right.set_xticklabels([str(r) for r in ranks])
    right.set_ylim(0, ceiling * 1.08)
    right.set_xlabel("ranks")
    right.set_ylabel(f"data samples to {100 * within:g} % above the optimum (millions)")
    right.set_title("samples to the target (median of the seeds)")
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def static(args):
    mf = os.path.join(args.build, "examples", "smp_mf", "dml-smp-mf")
    print("| ranks | sync | dispatch | seconds (median) | min | max | final test RMSE |")
    print("|---|---|---|---|---|---|---|")
    configurations = (("macro", True), ("micro", True), ("macro", False), ("micro", False))
    for ranks in (int(r) for r in args.ranks.split(",")):
        seconds = {c: [] for c in configurations}
        rmse = {}
        # Round r runs every configuration once, the order rotated by r, so
        # a change of load hits all of them alike (one configuration's
        # repeats in a row once made a load burst look like a 2x slowdown).
        for r in range(args.repeats):
            for sync, heavy in configurations[r % 4:] + configurations[:r % 4]:
                cmd = [mf, "--ranks", str(ranks)] + (["--micro-sync"] if sync == "micro" else []) + \
                      ([] if heavy else ["--no-heaviest-first"]) + args.extra.split()
                m = re.search(r"final: rmse=(\S+) seconds=(\S+)", run(cmd))
                rmse[(sync, heavy)] = m.group(1)
                seconds[(sync, heavy)].append(float(m.group(2)))
        for sync, heavy in configurations:
            s = seconds[(sync, heavy)]
            print(f"| {ranks} | {sync} | {'heaviest first' if heavy else 'index order'} | "
                  f"{statistics.median(s):.3f} | {min(s):.3f} | {max(s):.3f} | {rmse[(sync, heavy)]} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
