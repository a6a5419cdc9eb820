#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Runs dml-mf (a parameter table) and dml-mf-hogwild (a sparse distributed
# vector with the replace gather) on the same generated ratings at 1, 2 and
# 4 in-process ranks, each RUNS times (default 3), and prints a Markdown
# table with the median training seconds and the test RMSE of each (the
# first run's; at more than one rank it varies in the last digits). Extra
# arguments go to both trainers (the data options of dml-mf-hogwild are
# fixed: 300 x 300, rank 5, density 0.5; only --noise, --epochs, --lr and
# --seed are common).
#   scripts/compare-mf.sh BUILD_DIR [RUNS] [-- ARGS...]
# docs/tables.md quotes its output.
set -euo pipefail
if (($# < 1)); then
  echo "usage: scripts/compare-mf.sh BUILD_DIR [RUNS] [-- ARGS...]" >&2
  exit 2
fi
build="$1"; shift
runs=3
if (($# > 0)) && [[ $1 != -- ]]; then runs="$1"; shift; fi
if (($# > 0)) && [[ $1 == -- ]]; then shift; fi
table="$build/examples/mf/dml-mf"
vector="$build/examples/mf_hogwild/dml-mf-hogwild"
for exe in "$table" "$vector"; do
  [[ -x $exe ]] || { echo "compare-mf.sh: no $exe (cmake --build $build --target dml-mf dml-mf-hogwild)" >&2; exit 2; }
done
# "seconds rmse" of one run's final line
measure() {
  "$@" | sed -n 's/^final: rmse=\([0-9.]*\) .*seconds=\([0-9.]*\).*/\2 \1/p' | tail -1
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "| ranks | dml-mf seconds | dml-mf test rmse | dml-mf-hogwild seconds | dml-mf-hogwild test rmse |"
echo "|---|---|---|---|---|"
for ranks in 1 2 4; do
  t_secs=() ; v_secs=() ; t_rmse="" ; v_rmse=""
  for ((i = 0; i < runs; ++i)); do
    read -r s r < <(measure "$table" --ranks "$ranks" "$@")
    t_secs+=("$s"); [[ -z $t_rmse ]] && t_rmse="$r"
    read -r s r < <(measure "$vector" --ranks "$ranks" "$@" 2>/dev/null)
    v_secs+=("$s"); [[ -z $v_rmse ]] && v_rmse="$r"
  done
  printf '| %s | %s | %s | %s | %s |\n' "$ranks" "$(printf '%s\n' "${t_secs[@]}" | median)" "$t_rmse" \
    "$(printf '%s\n' "${v_secs[@]}" | median)" "$v_rmse"
done
