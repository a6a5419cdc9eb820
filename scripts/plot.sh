#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Plots trainers' per-epoch CSV files (written with --csv) as one PNG with
# two panels: training loss and test accuracy (or RMSE) against wall time.
#   scripts/plot.sh OUT.png RUN.csv [RUN.csv ...]
# Each CSV's file name (without .csv) labels its curve. Installs gnuplot
# (Debian's gnuplot-nox) when it is missing. PLOT_LOSS_RANGE and
# PLOT_METRIC_RANGE (gnuplot ranges, e.g. [0.8:0.85]) zoom the panels.
set -euo pipefail
if (($# < 2)); then
  echo "usage: scripts/plot.sh OUT.png RUN.csv [RUN.csv ...]" >&2
  exit 2
fi
out="$1"; shift
for f in "$@"; do
  [[ -r $f ]] || { echo "plot.sh: cannot read '$f'" >&2; exit 2; }
  head -1 "$f" | grep -q '^epoch,seconds,loss,' || { echo "plot.sh: '$f' is not a trainer CSV (header: $(head -1 "$f"))" >&2; exit 2; }
done
if ! command -v gnuplot >/dev/null; then
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "plot.sh: installing gnuplot-nox"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null ||
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null; }
fi
metric=$(head -1 "$1" | cut -d, -f4)  # accuracy, or rmse for mf_hogwild
loss_plots="" metric_plots=""
for f in "$@"; do
  label=$(basename "$f" .csv)
  loss_plots+="'$f' using 2:3 with linespoints title '$label', "
  metric_plots+="'$f' using 2:4 with linespoints title '$label', "
done
gnuplot <<GP
set datafile separator ','
set key autotitle columnhead
set terminal pngcairo size 1200,500 noenhanced
set output '$out'
set multiplot layout 1,2
set xlabel 'seconds'
set grid
set title 'training loss'
set key top right
${PLOT_LOSS_RANGE:+set yrange $PLOT_LOSS_RANGE}
plot ${loss_plots%, }
set title 'test $metric'
set key bottom right
${PLOT_METRIC_RANGE:+set yrange $PLOT_METRIC_RANGE}
plot ${metric_plots%, }
unset multiplot
GP
echo "plot.sh: wrote $out"
