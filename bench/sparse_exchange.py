#!/usr/bin/python3
# SPDX-License-Identifier: BSL-1.0
# Dense model exchange against sparse deltas (dml::delta_vector) in
# dml-svm-sgd on generated sparse data: bytes per step, time per step and
# peak resident memory, at 2^20 and 2^24 features and 8 in-process ranks.
#
#     /usr/bin/python3 bench/sparse_exchange.py            # the table in docs/trainers.md
#     /usr/bin/python3 bench/sparse_exchange.py --sets 20:300:40000:256 --ranks 4
#
# A set BITS:NNZ:ROWS:CB[:HOW] is written by examples/gen_sparse (2^BITS
# features, about NNZ nonzeros per row, ROWS training rows) and trained for
# --epochs with --cb-size CB both ways, or only HOW (dense or deltas: a
# dense exchange every 64 samples at 2^24 features would move 3.8 GB a step). A step is one exchange: CB samples per rank
# between two. "bytes/step" is what all members sent in one step together
# (the trainer's bytes column over the steps); "ms/step" the trainer's own
# training seconds over the steps (loading and evaluation excluded); "peak
# RSS" of the whole process (all ranks together, the data set included).
# Plain Python; needs a build with dml-gen-sparse and dml-svm-sgd
# (--build, default ./build). Exit codes: 0 ok, 1 a tool failed, 2 bad
# arguments.
import argparse
import os
import re
import subprocess
import sys
import tempfile

FINAL = re.compile(r"^final: accuracy=([0-9.]+) loss=([0-9.]+) seconds=([0-9.]+) bytes=([0-9]+)", re.M)
RSS = re.compile(r"Maximum resident set size \(kbytes\): ([0-9]+)")


def main():
    p = argparse.ArgumentParser(description="Dense model exchange against sparse deltas in dml-svm-sgd.")
    p.add_argument("--build", default="build")
    p.add_argument("--sets", default="20:300:40000:256,24:300:100000:4096,24:300:100000:64:deltas",
                   help="comma-separated BITS:NNZ:ROWS:CB[:HOW] (default: %(default)s)")
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--workdir", default=None, help="where the data files go (default: a temporary folder)")
    a = p.parse_args()
    gen = os.path.join(a.build, "examples/gen_sparse/dml-gen-sparse")
    svm = os.path.join(a.build, "examples/svm_sgd/dml-svm-sgd")
    for tool in (gen, svm):
        if not os.access(tool, os.X_OK):
            print(f"sparse_exchange.py: {tool} is missing: build the examples first", file=sys.stderr)
            return 2
    workdir = a.workdir or tempfile.mkdtemp(prefix="dml-sparse-exchange-")
    print("| features | nnz/row | cb-size | exchange | bytes/step | ms/step | peak RSS | accuracy |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|")
    for spec in a.sets.split(","):
        fields = spec.split(":")
        only = fields.pop() if len(fields) == 5 else None
        try:
            bits, nnz, rows, cb = (int(x) for x in fields)
        except ValueError:
            only = "bad"
        if only not in (None, "dense", "deltas"):
            print(f"sparse_exchange.py: bad set '{spec}' (BITS:NNZ:ROWS:CB[:dense|deltas])", file=sys.stderr)
            return 2
        prefix = os.path.join(workdir, f"s{bits}-{nnz}-{rows}")
        if not os.path.exists(prefix + ".train"):
            subprocess.run([gen, "--out", prefix, "--bits", str(bits), "--nnz", str(nnz), "--rows", str(rows)],
                           check=True, stdout=subprocess.DEVNULL)
        steps = a.epochs * (rows // a.ranks // cb)
        for how in [only] if only else ["dense", "deltas"]:
            cmd = ["/usr/bin/time", "-v", svm, "--ranks", str(a.ranks), "--data", prefix + ".train", "--test",
                   prefix + ".test", "--epochs", str(a.epochs), "--cb-size", str(cb), "--exchange", how]
            r = subprocess.run(cmd, capture_output=True, text=True)
            final, rss = FINAL.search(r.stdout), RSS.search(r.stderr)
            if r.returncode != 0 or not final or not rss:
                print(f"sparse_exchange.py: {' '.join(cmd)} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}",
                      file=sys.stderr)
                return 1
            acc, seconds, sent = float(final.group(1)), float(final.group(3)), int(final.group(4))
            print(f"| 2^{bits} | {nnz} | {cb} | {how} | {sent / steps / 1e6:.2f} MB | "
                  f"{1e3 * seconds / steps:.1f} | {int(rss.group(1)) / 2**20:.2f} GiB | {acc:.4f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
