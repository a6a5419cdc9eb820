# SPDX-License-Identifier: BSL-1.0
# Sourced by the scripts/repro/*.sh reproductions (not run on its own; its
# name does not end in .sh, so scripts/reproduce.sh skips it): installs
# missing Debian packages, configures build-repro/ once (Release, the
# project's default options) and builds only the targets asked for.
#   source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
#   repro_build dml-logreg dml-svm-sgd
#   repro_plot OUT.png TITLE XLABEL YLABEL CSV:XCOL:YCOL:LABEL...
#   (REPRO_PLOT_EXTRA: more gnuplot commands, e.g. 'set logscale x 2')
set -euo pipefail
REPRO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
REPRO_BUILD="$REPRO_ROOT/build-repro"
REPRO_DOCS="$REPRO_ROOT/docs/reproductions"
REPRO_JOBS="${DML_JOBS:-$(nproc)}"
mkdir -p "$REPRO_DOCS"

# repro_build TARGET...: configures build-repro/ when it has no cache yet,
# then builds the targets.
repro_build() {
  bash "$REPRO_ROOT/scripts/setup-debian.sh" >/dev/null
  if [[ ! -f $REPRO_BUILD/CMakeCache.txt ]]; then
    echo "repro: configuring $REPRO_BUILD (Release)"
    cmake -S "$REPRO_ROOT" -B "$REPRO_BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  echo "repro: building $*"
  cmake --build "$REPRO_BUILD" -j "$REPRO_JOBS" --target "$@" | grep -v '^\[' || true
  local t
  for t in "$@"; do
    [[ -n $(find "$REPRO_BUILD" -name "$t" -type f -perm -u+x -print -quit) ]] ||
      { echo "repro: building $t failed" >&2; exit 1; }
  done
}

# repro_gnuplot: makes sure gnuplot is there (Debian's gnuplot-nox).
repro_gnuplot() {
  command -v gnuplot >/dev/null && return
  local sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "repro: installing gnuplot-nox"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null ||
    { $sudo apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null; }
}

# repro_plot OUT.png TITLE XLABEL YLABEL SERIES...: one 640x400 panel of
# lines with points; each SERIES is CSV:XCOLUMN:YCOLUMN:LABEL (columns by
# number, CSV files with a header line).
repro_plot() {
  local out="$1" title="$2" xlabel="$3" ylabel="$4"
  shift 4
  repro_gnuplot
  local plots="" s file x y label
  for s in "$@"; do
    IFS=: read -r file x y label <<<"$s"
    [[ -r $file ]] || { echo "repro_plot: cannot read '$file'" >&2; exit 2; }
    plots+="'$file' using $x:$y with linespoints title '$label', "
  done
  gnuplot <<GP
set datafile separator ','
set terminal pngcairo size 640,400 noenhanced font ',10'
set output '$out'
set title '$title'
set xlabel '$xlabel'
set ylabel '$ylabel'
set grid
set key bottom right
${REPRO_PLOT_EXTRA:-}
plot ${plots%, }
GP
  echo "repro: wrote ${out#"$REPRO_ROOT"/}"
}
