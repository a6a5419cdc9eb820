#!/usr/bin/python3
# SPDX-License-Identifier: BSL-1.0
# The PyTorch baseline for the time-to-accuracy benchmark (issue #7): the
# models of dml-logreg and dml-svm-sgd, on the same Fashion-MNIST data,
# shards, sample order, batch size and step-size schedule, trained with
# torch.nn.parallel.DistributedDataParallel (gloo backend, CPU only) in
# --ranks processes on this machine.
#
#     /usr/bin/python3 bench/torch_ddp.py --model logreg --ranks 4 --csv logreg-ddp-4.csv
#     /usr/bin/python3 bench/torch_ddp.py --model svm --ranks 4 --csv svm-ddp-4.csv
#
# What it measures, per epoch: seconds = cumulative wall time of training only
# (rank 0's clock, between barriers, so until every rank finished the epoch;
# evaluation and the per-epoch shuffle are outside it), loss on the training
# set and accuracy on the test set of the model after the epoch, plus an
# epoch-0 row for the zero model. CSV (rank 0): epoch,seconds,loss,accuracy.
#
# Each process runs with torch.set_num_threads(1): R processes on a machine
# with fewer than R cores would otherwise also fight over intra-op threads.
#
# How it differs from the dml trainers, on purpose: DDP averages gradients
# after every step (every minibatch of 32 for logreg, every sample for svm),
# the dml trainers average models after every --cb-size examples per rank;
# and dml-svm-sgd projects the averaged model into |w| <= 1/sqrt(lambda),
# which plain DDP has no place for. Everything else follows the trainers:
#  - the shuffle is dml::data's (SplitMix64 Fisher-Yates), the shard strided,
#    the epoch reshuffle seeded with seed + 1000003 * epoch + rank, so with
#    the same --seed each rank visits the same samples in the same order;
#  - samples per rank and epoch are (n // R // C) * C, C being the trainer's
#    default --cb-size (256 logreg, 64 svm): the trainers drop the rest too;
#  - logreg: softmax regression 784 -> 10 with bias, zero init, SGD on the
#    mean cross-entropy of minibatches of 32, lr 0.2 / sqrt(epoch), 10 epochs;
#    loss = mean cross-entropy on the training set;
#  - svm: class 0 (+1) vs class 6 (-1), 784 -> 1 with bias, zero init, one
#    sample per step, eta_t = 1 / (lambda (t + t0)), t0 = 1 / (lambda eta0),
#    lambda 1e-3, eta0 1e-3, t counted per rank, 20 epochs. Bottou's update
#    w = (1 - eta lambda) w + eta y x [y (w.x + b) < 1] is SGD at lr eta on
#    relu(1 - y (w.x + b)) with weight_decay lambda on w; b has its own
#    parameter group with lr 0.01 eta and no weight decay. loss = lambda/2
#    |w|^2 (bias excluded) + mean hinge on the training set.
# At --ranks 1 the logreg run reproduces dml-logreg --ranks 1 to the printed
# digits (same samples in the same order, float32); svm agrees to about 5
# digits until a rounding flips one hinge decision.
#
# Batch-1 DDP is slow: one allreduce per sample per rank, measured 2 ms per
# step at 2 ranks and 30 ms at 8 on a loaded 2-core VM, so svm at 8 ranks
# takes about 45 s per epoch; --epochs N shortens a run, e.g.
#     /usr/bin/python3 bench/torch_ddp.py --model svm --ranks 8 --epochs 3 --csv svm-ddp-8.csv
#
# Exit codes: 0 ok, 1 data or runtime error, 2 bad arguments (one line on
# stderr), 3 PyTorch not importable (run it with Debian's /usr/bin/python3).
import argparse
import math
import os
import socket
import sys
import time

try:  # numpy and torch come with Debian's python3-torch; checked in main()
    import numpy as np
except ImportError:
    np = None

from fashion_mnist import DEFAULT_DATA, DataError, pixels  # bench/fashion_mnist.py

PROG = "torch_ddp.py"

# What each model takes from its dml trainer's defaults.
MODELS = {
    "logreg": {"epochs": 10, "cb_size": 256, "batch": 32, "lr": 0.2},
    "svm": {"epochs": 20, "cb_size": 64, "batch": 1, "eta0": 1e-3, "lambda": 1e-3,
            "positive": 0, "negative": 6},
}


class UsageError(Exception):
    pass


# ---------------------------------------------------------------- arguments

class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit code 2
        raise UsageError(message)


def _whole(minimum):
    def parse(text):
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"needs a whole number >= {minimum}, got '{text}'")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"needs a whole number >= {minimum}, got '{text}'")
        return value
    return parse


def parse_args(argv):
    p = _Parser(prog=PROG, description="PyTorch DDP (gloo, CPU) baseline for dml-logreg / dml-svm-sgd.")
    p.add_argument("--model", choices=sorted(MODELS), required=True)
    p.add_argument("--ranks", type=_whole(1), default=1, help="processes (default 1)")
    p.add_argument("--epochs", type=_whole(1), help="default: the trainer's (logreg 10, svm 20)")
    p.add_argument("--csv", help="write epoch,seconds,loss,accuracy rows here")
    p.add_argument("--seed", type=_whole(0), default=1, help="shuffle seed, default 1 (as dml)")
    p.add_argument("--limit", type=_whole(1), help="use only the first N training samples")
    p.add_argument("--data-dir", default=DEFAULT_DATA, help=f"Fashion-MNIST IDX files, default {DEFAULT_DATA}")
    args = p.parse_args(argv)
    if args.ranks > 256:
        raise UsageError(f"--ranks {args.ranks} is too many (at most 256)")
    if args.csv is not None and not args.csv:
        raise UsageError("--csv needs a file name")
    if args.epochs is None:
        args.epochs = MODELS[args.model]["epochs"]
    return args


# ---------------------------------------------------------------- data


def fashion_mnist(data_dir, part, limit=None):
    """(x, y): x float32 n x 784 in [0, 1], y int64 labels 0..9."""
    x, y = pixels(data_dir, part, limit)
    return x.astype(np.float32) / np.float32(255), y


def binary_task(x, y, positive, negative):
    """The rows of the two classes, labels +1 / -1 (as dml-svm-sgd)."""
    keep = (y == positive) | (y == negative)
    return x[keep], np.where(y[keep] == positive, 1.0, -1.0).astype(np.float32)


# ---------------------------------------------------------------- dml::data's shuffle

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def _splitmix64(seed, count):
    """The first `count` outputs of dml::data::splitmix64(seed), vectorized."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed & MASK) + np.arange(1, count + 1, dtype=np.uint64) * np.uint64(GAMMA)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _shuffle_slow(items, seed):
    state = seed & MASK

    def draw():
        nonlocal state
        state = (state + GAMMA) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    for i in range(len(items), 1, -1):
        limit = MASK - MASK % i
        x = draw()
        while x >= limit:
            x = draw()
        j = x % i
        items[i - 1], items[j] = items[j], items[i - 1]


def shuffle(items, seed):
    """dml::data::shuffle: Fisher-Yates with uniform_below() over SplitMix64,
    in place on a list; the same order as the C++ for the same seed."""
    n = len(items)
    if n < 2:
        return
    bounds = np.arange(n, 1, -1, dtype=np.uint64)
    draws = _splitmix64(seed, n - 1)
    if np.any(draws >= np.uint64(MASK) - np.uint64(MASK) % bounds):
        _shuffle_slow(items, seed)  # a rejection (p ~ n / 2^64): redo it exactly
        return
    picks = (draws % bounds).tolist()
    for k, i in enumerate(range(n - 1, 0, -1)):  # i = the slot being filled
        j = picks[k]
        items[i], items[j] = items[j], items[i]


def permutation(n, seed):
    p = list(range(n))
    shuffle(p, seed)
    return p


# ---------------------------------------------------------------- training (one process per rank)

def _evaluate(torch, model, kind, train, test, lam):
    """(training loss, test accuracy) of the model, as the dml trainer reports them."""
    w = model.weight.detach()
    b = model.bias.detach()
    with torch.no_grad():
        if kind == "logreg":
            z = train[0] @ w.T + b
            logp = torch.log_softmax(z, dim=1)
            loss = -logp.gather(1, train[1].view(-1, 1)).double().mean().item()
            right = (torch.argmax(test[0] @ w.T + b, dim=1) == test[1]).double().mean().item()
        else:
            margin = (train[0] @ w.view(-1) + b) * train[1]
            loss = 0.5 * lam * w.double().pow(2).sum().item() + torch.relu(1 - margin).double().mean().item()
            right = (((test[0] @ w.view(-1) + b) * test[1]) > 0).double().mean().item()
    return loss, right


def _die_with_parent(parent):
    """A rank gets SIGTERM when the launching process dies (say, a harness's
    timeout kills it), instead of living on blocked in gloo (Linux prctl)."""
    try:
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it died before prctl
        os._exit(1)


def _worker(rank, parent, ranks, args, port, train, test):
    _die_with_parent(parent)
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=ranks)

    spec = MODELS[args.model]
    n, d = train[0].shape
    lam = spec.get("lambda", 0.0)
    model = torch.nn.Linear(d, 10 if args.model == "logreg" else 1)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    ddp = DDP(model)
    if args.model == "logreg":
        opt = torch.optim.SGD(ddp.parameters(), lr=spec["lr"])
    else:
        opt = torch.optim.SGD([{"params": [model.weight], "weight_decay": lam},
                               {"params": [model.bias], "weight_decay": 0.0}], lr=spec["eta0"])
        t0 = 1.0 / (lam * spec["eta0"])

    # This rank's samples, as in dml: a strided shard of one seeded permutation.
    order = permutation(n, args.seed)
    mine = order[rank::ranks]
    per_epoch = n // ranks // spec["cb_size"] * spec["cb_size"]
    batch = spec["batch"]
    x_train, y_train = train

    out = None
    if rank == 0 and args.csv:
        out = open(args.csv, "w")
        out.write("epoch,seconds,loss,accuracy\n")
        out.flush()

    seconds = 0.0
    last = None

    def report(epoch):
        nonlocal last
        loss, accuracy = _evaluate(torch, model, args.model, train, test, lam)
        last = (epoch, seconds, loss, accuracy)
        print(f"epoch {epoch:3d}  {seconds:8.3f} s  loss {loss:.5f}  accuracy {accuracy:.4f}", flush=True)
        if out:
            out.write(f"{epoch},{seconds:.4f},{loss:.6f},{accuracy:.6f}\n")
            out.flush()

    if rank == 0:
        report(0)
    t = 0  # samples this rank has stepped on (svm's step-size clock)
    for epoch in range(1, args.epochs + 1):
        shuffle(mine, (args.seed + 1000003 * epoch + rank) & MASK)
        epoch_order = torch.tensor(mine[:per_epoch], dtype=torch.long)
        dist.barrier()  # everyone is here: the others waited for rank 0's evaluation
        start = time.perf_counter()
        if args.model == "logreg":
            for group in opt.param_groups:
                group["lr"] = spec["lr"] / math.sqrt(epoch)
            for first in range(0, per_epoch, batch):
                rows = epoch_order[first:first + batch]
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(ddp(x_train[rows]), y_train[rows]).backward()
                opt.step()
        else:
            weights, bias = opt.param_groups
            for i in mine[:per_epoch]:
                eta = 1.0 / (lam * (t + t0))
                t += 1
                weights["lr"] = eta
                bias["lr"] = 0.01 * eta
                opt.zero_grad(set_to_none=True)
                score = ddp(x_train[i:i + 1]).view(())
                torch.relu(1.0 - y_train[i] * score).backward()
                opt.step()
        dist.barrier()  # until every rank finished the epoch
        seconds += time.perf_counter() - start
        if rank == 0:
            report(epoch)

    if rank == 0:
        epoch, secs, loss, accuracy = last
        print(f"final: accuracy={accuracy:.4f} loss={loss:.5f} seconds={secs:.3f} epochs={epoch}", flush=True)
        if out:
            out.close()
    dist.barrier()
    dist.destroy_process_group()


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv):
    try:
        args = parse_args(argv)
    except UsageError as e:
        print(f"{PROG}: {e} (see --help)", file=sys.stderr)
        return 2
    try:
        import numpy  # noqa: F401 (np is None without it)
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
    except ImportError as e:
        print(f"{PROG}: PyTorch/numpy are not importable by {sys.executable} ({e}); "
              f"run it with Debian's python3-torch: /usr/bin/python3 bench/torch_ddp.py", file=sys.stderr)
        return 3
    if not dist.is_available() or not dist.is_gloo_available():
        print(f"{PROG}: this PyTorch has no torch.distributed gloo backend", file=sys.stderr)
        return 3

    spec = MODELS[args.model]
    try:
        x, y = fashion_mnist(args.data_dir, "train", args.limit)
        xt, yt = fashion_mnist(args.data_dir, "t10k")
    except DataError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    if args.model == "svm":
        x, y = binary_task(x, y, spec["positive"], spec["negative"])
        xt, yt = binary_task(xt, yt, spec["positive"], spec["negative"])
    n = len(x)
    if n // args.ranks < spec["cb_size"]:
        print(f"{PROG}: {n} training samples are too few for {args.ranks} ranks "
              f"(dml's trainer needs {spec['cb_size']} per rank)", file=sys.stderr)
        return 2

    if args.model == "logreg":
        what = f"batch {spec['batch']}, lr {spec['lr']}/sqrt(epoch)"
    else:
        what = (f"class {spec['positive']} vs {spec['negative']}, batch 1, eta0 {spec['eta0']}, "
                f"lambda {spec['lambda']}")
    print(f"torch_ddp: {args.model}, {args.ranks} ranks (DDP, gloo, 1 thread each), {what}, "
          f"{n // args.ranks // spec['cb_size'] * spec['cb_size']} samples per rank per epoch, "
          f"{n} training / {len(xt)} test samples, torch {torch.__version__}", flush=True)

    if args.csv:  # fail here rather than in rank 0
        try:
            open(args.csv, "w").close()
        except OSError as e:
            print(f"{PROG}: cannot write {args.csv} ({e.strerror})", file=sys.stderr)
            return 1

    # Shared with the ranks through shared memory, not copied into each.
    train = (torch.from_numpy(x).share_memory_(), torch.from_numpy(y).share_memory_())
    test = (torch.from_numpy(xt).share_memory_(), torch.from_numpy(yt).share_memory_())
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # all ranks on this machine
    try:
        mp.spawn(_worker, args=(os.getpid(), args.ranks, args, _free_port(), train, test), nprocs=args.ranks,
                 join=True)
    except Exception as e:  # a rank failed: the message holds its traceback
        print(f"{PROG}: a rank failed: {str(e).strip() or repr(e)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
