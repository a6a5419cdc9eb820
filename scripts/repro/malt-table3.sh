#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# MALT Table 3 (developer effort): lines changed to make a serial trainer
# data parallel. Counts them with diff between examples/porting/serial.cpp
# and its port examples/porting/parallel.cpp (docs/porting.md), all lines
# and code only, split into the training code and main() (command line and
# starting the members). Builds nothing; writes docs/reproductions/malt-table3.md.
#   scripts/repro/malt-table3.sh
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
cd "$REPRO_ROOT"
echo "malt-table3: diff examples/porting/serial.cpp examples/porting/parallel.cpp"
python3 - "$REPRO_DOCS/malt-table3.md" <<'PY'
import re, subprocess, sys, tempfile, os

serial, parallel = "examples/porting/serial.cpp", "examples/porting/parallel.cpp"

def is_code(line):
    s = line.strip()
    return bool(s) and not s.startswith("//")

def counts(a_lines, b_lines):
    """Runs diff on two line lists; returns (old lines changed or removed,
    new lines, new lines inside main()) and the old/new line numbers diff
    reported."""
    with tempfile.TemporaryDirectory() as d:
        pa, pb = os.path.join(d, "a"), os.path.join(d, "b")
        open(pa, "w").write("".join(a_lines))
        open(pb, "w").write("".join(b_lines))
        out = subprocess.run(["diff", pa, pb], capture_output=True, text=True)
        if out.returncode > 1:
            raise SystemExit("malt-table3: diff failed: " + out.stderr)
    main_b = next(i for i, l in enumerate(b_lines, 1) if l.startswith("int main("))
    main_a = next(i for i, l in enumerate(a_lines, 1) if l.startswith("int main("))
    old = new = new_main = old_main = 0
    for h in re.finditer(r"^(\d+)(?:,(\d+))?([acd])(\d+)(?:,(\d+))?$", out.stdout, re.M):
        a1, a2, op, b1, b2 = h.groups()
        a1, b1 = int(a1), int(b1)
        a2 = int(a2) if a2 else a1
        b2 = int(b2) if b2 else b1
        if op in "cd":
            old += a2 - a1 + 1
            old_main += sum(1 for i in range(a1, a2 + 1) if i >= main_a)
        if op in "ca":
            new += b2 - b1 + 1
            new_main += sum(1 for i in range(b1, b2 + 1) if i >= main_b)
    return old, new, old_main, new_main

a = open(serial).readlines()
b = open(parallel).readlines()
all_old, all_new, all_old_main, all_new_main = counts(a, b)
ca = [l for l in a if is_code(l)]
cb = [l for l in b if is_code(l)]
code_old, code_new, code_old_main, code_new_main = counts(ca, cb)

with open(sys.argv[1], "w") as f:
    w = f.write
    w("## MALT Table 3: lines changed to make a serial trainer data parallel\n\n")
    w("**Paper.** MALT's Table 3 counts the lines its authors modified and added to make three serial "
      "applications data parallel: SVM (RCV1) 105 modified and 107 added, matrix factorization (Netflix) "
      "76 and 82, the SSI neural network (KDD2012) 82 and 130; §6.3 sums this up as 87 lines moved and "
      "106 added on average, about 15 % of each application's code (the text speaks of four applications; "
      "the table lists three).\n\n")
    w("**Command.** `scripts/repro/malt-table3.sh` (no build; a second). It runs `diff` between "
      "[`examples/porting/serial.cpp`](../../examples/porting/serial.cpp), a serial SVM trainer written "
      "the way classic single-file SGD codes are (own reader, scaled weights, step-size search, own timer), "
      "and its port [`examples/porting/parallel.cpp`](../../examples/porting/parallel.cpp), which "
      "[porting.md](../porting.md) walks through change by change. \"Modified\" counts the serial file's "
      "lines that the port changes or removes, \"added\" the port's lines that are not in the serial "
      "file; \"code only\" is the same diff after dropping blank and comment-only lines.\n\n")
    w("| application | lines | LOC modified | LOC added | of which in `main()` (modified / added) | size before → after |\n")
    w("|---|---|---:|---:|---:|---|\n")
    w("| MALT SVM (RCV1) | paper | 105 | 107 | – | – |\n")
    w("| MALT matrix factorization (Netflix) | paper | 76 | 82 | – | – |\n")
    w("| MALT SSI (KDD2012) | paper | 82 | 130 | – | – |\n")
    w(f"| dml `porting-serial` → `porting-parallel` (SVM) | all | {all_old} | {all_new} | "
      f"{all_old_main} / {all_new_main} | {len(a)} → {len(b)} |\n")
    w(f"| dml `porting-serial` → `porting-parallel` (SVM) | code only | {code_old} | {code_new} | "
      f"{code_old_main} / {code_new_main} | {len(ca)} → {len(cb)} |\n\n")
    share = 100.0 * code_new / len(cb)
    w(f"**Reading.** Porting the serial SVM to dml touches {all_old} of its {len(a)} lines and adds {all_new} "
      f"({code_old} and {code_new} counting code only), against MALT's 105 and 107 for its SVM. The added "
      f"code is {share:.0f} % of the port's {len(cb)} code lines, against MALT's \"about 15 %\": the share is "
      f"higher because the serial trainer here is a 200-line program, while MALT's applications were "
      f"existing packages of hundreds to thousands of lines, and a fixed cost (starting members, a shard, "
      f"one vector, an exchange) weighs more in a small file. {all_new_main} of the {all_new} added lines "
      f"are in `main()`: the command-line options for members, transport and exchange period, and the two "
      f"ways of starting members (threads or MPI processes); the training loop itself gains the shard, "
      f"the broadcast of the step size, the vector and the scatter/gather block. What the count does not "
      f"show: MALT modified existing programs (SVM-SGD, Hogwild, RAPID) of other sizes and styles, while this "
      f"is one small program written for the guide, so the comparison is of orders of magnitude, not of "
      f"APIs line for line; the reference trainers "
      f"in `examples/` (`dml-logreg`, `dml-svm-sgd`) mark their own changes in their first comment "
      f"(about 30 lines) but have no serial twin to diff against.\n")
print(f"malt-table3: modified {all_old}, added {all_new} (code only {code_old}, {code_new}); "
      f"wrote {os.path.relpath(sys.argv[1])}")
PY
