#!/usr/bin/python3
# SPDX-License-Identifier: BSL-1.0
# The single-machine baseline for the time-to-accuracy benchmark (issue #7):
# Debian's liblinear-tools on dml-svm-sgd's task (Fashion-MNIST class 0, +1,
# vs class 6, -1, pixels scaled into [0, 1]), and optionally on dml-logreg's
# (all ten classes).
#
#     /usr/bin/python3 bench/liblinear.py --csv liblinear.csv                 # svm
#     /usr/bin/python3 bench/liblinear.py --model both --csv liblinear.csv    # svm and logreg rows
#
# What it measures: seconds = wall time of the `liblinear-train` command
# alone, which includes liblinear reading the LIBSVM text file (the dml
# trainers load their data before the clock starts); loss on the training
# set and accuracy on the test set (from `liblinear-predict`) of the learned
# model. CSV: model,solver,seconds,loss,accuracy, one row per run.
#
# svm: `liblinear-train -s 3 -c C -B 1` (L2-regularized hinge-loss SVC,
# solved in the dual, default tolerance -e 0.1), which minimizes
#     1/2 |w'|^2 + C sum_i max(0, 1 - y_i w'.[x_i; 1]),   w' = [w; b].
# Divided by C n this is lambda/2 |w'|^2 + mean hinge with lambda = 1/(C n),
# so C = 1 / (lambda n) (lambda 1e-3, n = 12000 training samples: C = 1/12)
# gives dml-svm-sgd's objective -- except that liblinear regularizes the bias
# too. The loss column is dml-svm-sgd's: lambda/2 |w|^2 with the bias left
# out, plus the mean hinge, computed from the model file.
#
# logreg (optional): `liblinear-train -s 0 -c 1 -B 1`, L2-regularized
# logistic regression, one-vs-rest over the ten classes (dml-logreg is an
# unregularized softmax; C = 1 is liblinear's default, a weak regularizer at
# n = 60000). Its loss column is the mean cross-entropy of liblinear's own
# probability estimate (the ten sigmoids, normalized to sum to 1).
#
# The final line, like the dml trainers': final: accuracy=... loss=...
# seconds=... epochs=... model=..., epochs being liblinear's iteration count
# (dual coordinate descent passes for svm; Newton iterations summed over the
# ten one-vs-rest problems for logreg).
#
# Exit codes: 0 ok, 1 data or liblinear error, 2 bad arguments (one line on
# stderr), 3 liblinear-tools or numpy missing.
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

try:  # numpy comes with Debian's python3-numpy; checked in main()
    import numpy as np
except ImportError:
    np = None

from fashion_mnist import DEFAULT_DATA, DataError, pixels  # bench/fashion_mnist.py

PROG = "liblinear.py"
TRAIN = "/usr/bin/liblinear-train"
PREDICT = "/usr/bin/liblinear-predict"
LAMBDA = 1e-3            # dml-svm-sgd's default --lambda
POSITIVE, NEGATIVE = 0, 6  # dml-svm-sgd's default classes


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit code 2
        raise UsageError(message)


def _whole(text):
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"needs a whole number >= 1, got '{text}'")
    return value


def parse_args(argv):
    p = _Parser(prog=PROG, description="liblinear-tools baseline for dml-svm-sgd (and dml-logreg).")
    p.add_argument("--model", choices=["svm", "logreg", "both"], default="svm",
                   help="svm (default), logreg, or both (svm first)")
    p.add_argument("--csv", help="write model,solver,seconds,loss,accuracy rows here")
    p.add_argument("--workdir", help="keep the LIBSVM and model files here (default: a temporary directory)")
    p.add_argument("--limit", type=_whole, help="use only the first N training samples (before the class filter)")
    p.add_argument("--data-dir", default=DEFAULT_DATA, help=f"Fashion-MNIST IDX files, default {DEFAULT_DATA}")
    args = p.parse_args(argv)
    for name in ("csv", "workdir"):
        if getattr(args, name) is not None and not getattr(args, name):
            raise UsageError(f"--{name} needs a name")
    return args


# ---------------------------------------------------------------- data


def write_libsvm(path, pixels, labels):
    """LIBSVM lines 'label index:value ...' of the nonzero pixels, values the
    float32 pixel / 255 that dml uses, printed so that they read back exactly."""
    scaled = [f"{v:.9g}" for v in (np.arange(256, dtype=np.float32) / np.float32(255)).tolist()]
    with open(path, "w") as f:
        for row, label in zip(pixels, labels.tolist()):
            nz = np.flatnonzero(row)
            f.write(f"{label} " + " ".join(f"{j + 1}:{scaled[v]}" for j, v in zip(nz.tolist(), row[nz].tolist()))
                    + "\n")


def read_model(path, features):
    """(labels, bias, w) of a liblinear model file, w being (features + 1) x
    nr_w with the bias weights last. liblinear stores only the weights up to
    the highest feature index its training file used; the rest are 0."""
    header = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line == "w":
                break
            key, _, value = line.partition(" ")
            header[key] = value
        w = np.loadtxt(f, ndmin=2)
    labels = [int(v) for v in header["label"].split()]
    bias, used = float(header.get("bias", -1)), int(header.get("nr_feature", -1))
    if bias != 1 or not 0 < used <= features or w.shape != (used + 1, len(labels) if len(labels) > 2 else 1):
        raise DataError(f"{path}: unexpected model (bias {bias}, {used} features, weights {w.shape})")
    full = np.zeros((features + 1, w.shape[1]))
    full[:used] = w[:used]
    full[-1] = w[used]
    return labels, bias, full


# ---------------------------------------------------------------- runs

def run(cmd, what):
    try:
        done = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise DataError(f"cannot run {cmd[0]} ({e.strerror})")
    if done.returncode != 0:
        raise DataError(f"{what} failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()}")
    return done.stdout


def train_and_test(model, workdir, solver_args, train_file, test_file, test_labels):
    """Runs liblinear-train (timed) and liblinear-predict; returns
    (seconds, iterations, model file, test accuracy)."""
    model_file = os.path.join(workdir, f"{model}.model")
    start = time.perf_counter()
    out = run([TRAIN, *solver_args, train_file, model_file], "liblinear-train")
    seconds = time.perf_counter() - start
    # -s 3 prints "optimization finished, #iter = N"; -s 0 one "iter N ..." line per Newton step.
    found = re.findall(r"#iter = (\d+)", out)
    iterations = sum(int(v) for v in found) if found else len(re.findall(r"^iter\s+\d+", out, re.M))
    predictions = os.path.join(workdir, f"{model}.predictions")
    run([PREDICT, test_file, model_file, predictions], "liblinear-predict")
    predicted = np.loadtxt(predictions, ndmin=1)
    if len(predicted) != len(test_labels):
        raise DataError(f"{predictions}: {len(predicted)} predictions for {len(test_labels)} test samples")
    accuracy = float(np.mean(predicted == test_labels))
    return seconds, iterations, model_file, accuracy


def svm_run(workdir, x, y, xt, yt):
    keep, keept = (y == POSITIVE) | (y == NEGATIVE), (yt == POSITIVE) | (yt == NEGATIVE)
    x, xt = x[keep], xt[keept]
    y = np.where(y[keep] == POSITIVE, 1, -1)
    yt = np.where(yt[keept] == POSITIVE, 1, -1)
    n = len(y)
    if n == 0:
        raise DataError("no training samples of classes 0 and 6 (see --limit)")
    c = 1.0 / (LAMBDA * n)
    train_file, test_file = os.path.join(workdir, "svm.train"), os.path.join(workdir, "svm.test")
    write_libsvm(train_file, x, y)
    write_libsvm(test_file, xt, yt)
    solver = f"-s 3 -c {c:.10g} -B 1"
    print(f"liblinear svm: class {POSITIVE} vs {NEGATIVE}, {n} training / {len(yt)} test samples, "
          f"lambda {LAMBDA}: liblinear-train {solver}", flush=True)
    seconds, iterations, model_file, accuracy = train_and_test("svm", workdir, solver.split(), train_file,
                                                               test_file, yt)
    labels, bias, w = read_model(model_file, x.shape[1])
    w = w[:, 0] * (1 if labels[0] == 1 else -1)  # liblinear's w scores its first label
    xf = x.astype(np.float64) / 255
    margin = y * (xf @ w[:-1] + w[-1] * bias)
    hinge = np.maximum(0.0, 1.0 - margin).mean()
    loss = 0.5 * LAMBDA * float(w[:-1] @ w[:-1]) + hinge
    own = 0.5 * LAMBDA * float(w @ w) + hinge  # liblinear's objective / (C n): the bias regularized
    check = float(np.mean((yt * ((xt.astype(np.float64) / 255) @ w[:-1] + w[-1])) > 0))
    print(f"  objective with the bias regularized (liblinear's, / C n): {own:.5f}; "
          f"test accuracy recomputed from the model: {check:.4f}", flush=True)
    return "svm", solver, seconds, loss, accuracy, iterations


def logreg_run(workdir, x, y, xt, yt):
    train_file, test_file = os.path.join(workdir, "logreg.train"), os.path.join(workdir, "logreg.test")
    write_libsvm(train_file, x, y)
    write_libsvm(test_file, xt, yt)
    solver = "-s 0 -c 1 -B 1"
    print(f"liblinear logreg: 10 classes one-vs-rest, {len(y)} training / {len(yt)} test samples: "
          f"liblinear-train {solver}", flush=True)
    seconds, iterations, model_file, accuracy = train_and_test("logreg", workdir, solver.split(), train_file,
                                                               test_file, yt)
    labels, bias, w = read_model(model_file, x.shape[1])
    # Column k scores class labels[k]; liblinear's probability: sigmoids, normalized.
    decision = (x.astype(np.float64) / 255) @ w[:-1] + w[-1]
    p = 1.0 / (1.0 + np.exp(-decision))
    p /= p.sum(axis=1, keepdims=True)
    column = {label: k for k, label in enumerate(labels)}
    mine = p[np.arange(len(y)), [column.get(int(v), -1) for v in y]]
    loss = float(-np.log(np.maximum(mine, 1e-30)).mean())
    scores = (xt.astype(np.float64) / 255) @ w[:-1] + w[-1]
    check = float(np.mean(np.asarray(labels)[np.argmax(scores, axis=1)] == yt))
    print(f"  test accuracy recomputed from the model: {check:.4f}", flush=True)
    return "logreg", solver, seconds, loss, accuracy, iterations


def main(argv):
    try:
        args = parse_args(argv)
    except UsageError as e:
        print(f"{PROG}: {e} (see --help)", file=sys.stderr)
        return 2
    if np is None:
        print(f"{PROG}: numpy is not importable by {sys.executable}; run it with Debian's "
              f"/usr/bin/python3 bench/liblinear.py", file=sys.stderr)
        return 3
    for tool in (TRAIN, PREDICT):
        if not os.access(tool, os.X_OK):
            print(f"{PROG}: {tool} is missing (apt-get install liblinear-tools)", file=sys.stderr)
            return 3
    try:
        x, y = pixels(args.data_dir, "train", args.limit)
        xt, yt = pixels(args.data_dir, "t10k")
        out = None
        if args.csv:
            try:
                out = open(args.csv, "w")
            except OSError as e:
                raise DataError(f"cannot write {args.csv} ({e.strerror})")
            out.write("model,solver,seconds,loss,accuracy\n")
            out.flush()
        if args.workdir:
            os.makedirs(args.workdir, exist_ok=True)
            workdir, cleanup = args.workdir, None
        else:
            workdir = cleanup = tempfile.mkdtemp(prefix="dml-liblinear-")
        try:
            runs = {"svm": [svm_run], "logreg": [logreg_run], "both": [svm_run, logreg_run]}[args.model]
            for fn in runs:
                model, solver, seconds, loss, accuracy, iterations = fn(workdir, x, y, xt, yt)
                print(f"final: accuracy={accuracy:.4f} loss={loss:.5f} seconds={seconds:.3f} "
                      f"epochs={iterations} model={model}", flush=True)
                if out:
                    out.write(f"{model},{solver},{seconds:.4f},{loss:.6f},{accuracy:.6f}\n")
                    out.flush()
        finally:
            if cleanup:
                shutil.rmtree(cleanup, ignore_errors=True)
            if out:
                out.close()
    except DataError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
