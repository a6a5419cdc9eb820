#!/usr/bin/python3
# SPDX-License-Identifier: BSL-1.0
# dml-svm-sgd against liblinear on generated sparse, text-like data: for
# each set, examples/gen_sparse writes a binary LIBSVM train/test pair
# (hashed Zipf "documents" labelled by a planted linear model, label noise
# 0.05), then both train on it:
#
#   liblinear-train -s 3 -c C -B 1 TRAIN MODEL; liblinear-predict TEST MODEL OUT
#   dml-svm-sgd --ranks R --data TRAIN --test TEST [--cb-size N]   for each R of --ranks
#
# -s 3 is the L2-regularized hinge-loss SVM solved in the dual; with
# C = 1/(lambda n) it minimizes lambda/2 |w'|^2 + mean hinge, dml-svm-sgd's
# objective (except that liblinear regularizes the bias too; see
# bench/liblinear.py). dml-svm-sgd's default on LIBSVM files is lambda = 1/n,
# so C = 1, liblinear's own default.
#
#     /usr/bin/python3 bench/sparse_liblinear.py                       # the table in docs/trainers.md
#     /usr/bin/python3 bench/sparse_liblinear.py --sets 18:300:20000 --ranks 1,2
#
# Columns: test accuracy; seconds: for liblinear the wall time of
# liblinear-train (reading the text file included), for dml-svm-sgd the
# trainer's own 'seconds' (training only: loading, the eta0 choice and the
# per-epoch evaluation are not counted) and the wall time of the whole
# command (everything included) in brackets; peak resident memory of the
# process (all in-process ranks together); bytes the dml vectors sent.
# Plain Python (no numpy); needs liblinear-tools and a build with
# dml-gen-sparse and dml-svm-sgd (--build, default ./build).
#
# Exit codes: 0 ok, 1 a tool failed, 2 bad arguments, 3 a tool is missing.
import argparse
import os
import re
import selectors
import subprocess
import sys
import time

PROG = "sparse_liblinear.py"
TRAIN = "/usr/bin/liblinear-train"
PREDICT = "/usr/bin/liblinear-predict"
DEFAULT_SETS = "18:2621:5000,20:300:40000,24:300:40000"


class Failure(Exception):
    pass


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit code 2
        raise UsageError(message)


def parse_sets(text):
    sets = []
    for item in text.split(","):
        parts = item.split(":")
        try:
            bits, nnz, rows = (int(p, 10) for p in parts)
        except ValueError:
            raise UsageError(f"--sets needs BITS:NONZEROS:ROWS items, got '{item}'")
        if not (4 <= bits <= 26 and nnz >= 1 and rows >= 1):
            raise UsageError(f"--sets item '{item}': bits 4..26, nonzeros and rows >= 1")
        sets.append((bits, nnz, rows))
    return sets


def parse_args(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = _Parser(prog=PROG, description="dml-svm-sgd against liblinear-train -s 3 on generated sparse data.")
    p.add_argument("--build", default=os.path.join(root, "build"), help="the CMake build directory")
    p.add_argument("--workdir", help="where the data and models go (default BUILD/bench-sparse)")
    p.add_argument("--sets", default=DEFAULT_SETS,
                   help=f"BITS:NONZEROS:ROWS,... (2^BITS features, nonzeros per row, training rows), "
                        f"default {DEFAULT_SETS}")
    p.add_argument("--ranks", default="1,4", help="in-process rank counts for dml-svm-sgd, default 1,4")
    p.add_argument("--cb-size", default="", help="BITS:N,...: dml-svm-sgd's --cb-size for a width "
                                                 "(default: the trainer's 64 everywhere)")
    p.add_argument("--csv", help="also write the rows here")
    args = p.parse_args(argv)
    args.sets = parse_sets(args.sets)
    try:
        args.ranks = [int(r, 10) for r in args.ranks.split(",")]
        args.cb_size = dict((int(b, 10), int(n, 10)) for b, n in
                            (item.split(":") for item in args.cb_size.split(",") if item))
    except ValueError:
        raise UsageError("--ranks needs R,R,... and --cb-size BITS:N,...")
    if not args.workdir:
        args.workdir = os.path.join(args.build, "bench-sparse")
    return args


def run_measured(cmd):
    """Runs cmd; returns (stdout, wall seconds, peak resident MB of that
    process, from wait4: getrusage(RUSAGE_CHILDREN) would give the largest
    of all children so far)."""
    start = time.perf_counter()
    try:
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        raise Failure(f"cannot run {cmd[0]} ({e.strerror})")
    out_chunks, err_chunks = [], []
    # Read both pipes to the end before reaping, so the child never blocks.
    sel = selectors.DefaultSelector()
    sel.register(child.stdout, selectors.EVENT_READ, out_chunks)
    sel.register(child.stderr, selectors.EVENT_READ, err_chunks)
    open_pipes = 2
    while open_pipes:
        for key, _ in sel.select():
            data = os.read(key.fileobj.fileno(), 1 << 16)
            if not data:
                sel.unregister(key.fileobj)
                open_pipes -= 1
            else:
                key.data.append(data)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    out = b"".join(out_chunks).decode(errors="replace")
    err = b"".join(err_chunks).decode(errors="replace")
    if child.returncode != 0:
        raise Failure(f"{os.path.basename(cmd[0])} failed (exit {child.returncode}): {(err or out).strip()}")
    return out, seconds, usage.ru_maxrss / 1024.0  # Linux: kilobytes


def main(argv):
    try:
        args = parse_args(argv)
    except UsageError as e:
        print(f"{PROG}: {e} (see --help)", file=sys.stderr)
        return 2
    gen = os.path.join(args.build, "examples", "gen_sparse", "dml-gen-sparse")
    svm = os.path.join(args.build, "examples", "svm_sgd", "dml-svm-sgd")
    for tool, hint in ((TRAIN, "apt-get install liblinear-tools"), (PREDICT, "apt-get install liblinear-tools"),
                       (gen, "cmake --build BUILD --target dml-gen-sparse"),
                       (svm, "cmake --build BUILD --target dml-svm-sgd")):
        if not os.access(tool, os.X_OK):
            print(f"{PROG}: {tool} is missing ({hint})", file=sys.stderr)
            return 3
    os.makedirs(args.workdir, exist_ok=True)
    csv = open(args.csv, "w") if args.csv else None
    if csv:
        csv.write("bits,nonzeros,rows,program,ranks,accuracy,seconds,wall_seconds,peak_mb,bytes\n")
    try:
        print("| data (train / test rows) | program | test accuracy | seconds (wall) | peak memory | bytes sent |")
        print("|---|---|---|---|---|---|")
        for bits, nnz, rows in args.sets:
            prefix = os.path.join(args.workdir, f"sparse-{bits}-{nnz}-{rows}")
            out, _, _ = run_measured([gen, "--bits", str(bits), "--nnz", str(nnz), "--rows", str(rows),
                                      "--out", prefix])
            planted = re.search(r"planted model: test accuracy ([0-9.]+)", out).group(1)
            nonzeros = re.search(r"([0-9.]+) nonzeros per row", out).group(1)
            train, test = prefix + ".train", prefix + ".test"
            name = f"2^{bits} features, {nonzeros} nonzeros per row ({rows} / {rows // 4} rows)"

            def emit(program, ranks, accuracy, seconds, wall, peak, sent):
                shown = f"{seconds:.1f} ({wall:.1f})" if seconds is not None else f"{wall:.1f}"
                print(f"| {name} | {program} | {accuracy:.4f} | {shown} | {peak:.0f} MB | {sent} |", flush=True)
                if csv:
                    csv.write(f"{bits},{nonzeros},{rows},{program.split()[0]},{ranks},{accuracy:.6f},"
                              f"{'' if seconds is None else f'{seconds:.3f}'},{wall:.3f},{peak:.0f},"
                              f"{sent if sent != '-' else ''}\n")
                    csv.flush()

            print(f"| {name} | planted model (1 - noise = 0.95) | {float(planted):.4f} | - | - | - |", flush=True)
            model = prefix + ".model"
            _, wall, peak = run_measured([TRAIN, "-s", "3", "-c", "1", "-B", "1", "-q", train, model])
            out, _, _ = run_measured([PREDICT, test, model, prefix + ".predictions"])
            accuracy = float(re.search(r"Accuracy = ([0-9.]+)%", out).group(1)) / 100
            emit("liblinear-train -s 3 -c 1 -B 1", 1, accuracy, None, wall, peak, "-")
            for ranks in args.ranks:
                cmd = [svm, "--ranks", str(ranks), "--data", train, "--test", test]
                if bits in args.cb_size:
                    cmd += ["--cb-size", str(args.cb_size[bits])]
                out, wall, peak = run_measured(cmd)
                final = re.search(r"final: accuracy=([0-9.]+) loss=[0-9.]+ seconds=([0-9.]+) bytes=([0-9]+)", out)
                label = f"dml-svm-sgd --ranks {ranks}" + (f" --cb-size {args.cb_size[bits]}" if bits in args.cb_size
                                                          else "")
                emit(label, ranks, float(final.group(1)), float(final.group(2)), wall, peak,
                     f"{int(final.group(3)) / 1e9:.1f} GB")
    except Failure as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    finally:
        if csv:
            csv.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
