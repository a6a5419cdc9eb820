# SPDX-License-Identifier: BSL-1.0
# Sourced by the scripts/repro/*.sh reproductions (not run on its own; its
# name does not end in .sh, so scripts/reproduce.sh skips it): installs
# missing Debian packages, configures build-repro/ once (Release, the
# project's default options) and builds only the targets asked for.
#   source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
#   repro_build dml-logreg dml-svm-sgd
#   repro_plot OUT.png TITLE XLABEL YLABEL [logx|logy|logxy|-] CSV:XCOL:YCOL:LABEL[:STYLE]...
set -euo pipefail
REPRO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
REPRO_BUILD="$REPRO_ROOT/build-repro"
REPRO_DOCS="$REPRO_ROOT/docs/reproductions"
REPRO_JOBS="${DML_JOBS:-$(nproc)}"
mkdir -p "$REPRO_DOCS"

# repro_build TARGET...: configures build-repro/ (on every call, a few
# seconds, so a target added since the last configuration is known), then
# builds the targets and nothing else.
repro_build() {
  bash "$REPRO_ROOT/scripts/setup-debian.sh" >/dev/null
  [[ -f $REPRO_BUILD/CMakeCache.txt ]] || echo "repro: configuring ${REPRO_BUILD#"$REPRO_ROOT"/} (Release)"
  cmake -S "$REPRO_ROOT" -B "$REPRO_BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  echo "repro: building $*"
  # A failed build stops the script: an executable left from an earlier
  # build would otherwise be measured as if it were the current code.
  if ! cmake --build "$REPRO_BUILD" -j "$REPRO_JOBS" --target "$@" >"$REPRO_BUILD/build.log" 2>&1; then
    tail -n 40 "$REPRO_BUILD/build.log" >&2
    echo "repro: building $* failed (log: ${REPRO_BUILD#"$REPRO_ROOT"/}/build.log)" >&2
    exit 1
  fi
}

# repro_bin TARGET: the path of a built executable (empty if not built).
# (Not a copy that a consumer test installed under consumer/.)
repro_bin() {
  find "$REPRO_BUILD" -path "$REPRO_BUILD/consumer" -prune -o -name "$1" -type f -perm -u+x -print -quit
}

# repro_workdir NAME: sets REPRO_OUT to build-repro/repro/NAME for a
# script's CSVs and logs. A measuring run empties it and records the load
# average; with REPRO_REPORT_ONLY=1 the last runs are kept (the script only
# rewrites its section and figures from them) and must exist.
repro_workdir() {
  REPRO_OUT="$REPRO_BUILD/repro/$1"
  if [[ ${REPRO_REPORT_ONLY:-0} == 1 ]]; then
    [[ -f $REPRO_OUT/load.before ]] ||
      { echo "$1: no earlier runs in $REPRO_OUT: run without REPRO_REPORT_ONLY" >&2; exit 1; }
  else
    rm -rf "$REPRO_OUT"
    mkdir -p "$REPRO_OUT"
    cut -d' ' -f1 /proc/loadavg >"$REPRO_OUT/load.before"
  fi
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

# repro_plot OUT.png TITLE XLABEL YLABEL [SCALE] SERIES...: one 640x400
# panel. SCALE (optional) is logx, logy, logxy or - (linear). Each SERIES is
# CSV:XCOLUMN:YCOLUMN:LABEL[:STYLE], columns by number in a CSV with a header
# line, STYLE a gnuplot style (default linespoints). REPRO_KEY places the
# legend (default bottom right), REPRO_YRANGE sets the y range ([lo:hi]),
# REPRO_PLOT_EXTRA adds gnuplot commands.
repro_plot() {
  local out="$1" title="$2" xlabel="$3" ylabel="$4" logs=""
  shift 4
  case "${1:-}" in
    logx) logs="set logscale x"; shift ;;
    logy) logs="set logscale y"; shift ;;
    logxy) logs="set logscale xy"; shift ;;
    -) shift ;;
  esac
  repro_gnuplot
  local plots="" s file x y label style
  for s in "$@"; do
    IFS=: read -r file x y label style <<<"$s"
    [[ -r $file ]] || { echo "repro_plot: cannot read '$file'" >&2; exit 2; }
    plots+="'$file' using $x:$y with ${style:-linespoints} title '$label', "
  done
  gnuplot <<GP
set datafile separator ','
set key autotitle columnhead
set terminal pngcairo size 640,400 noenhanced font ',10'
set output '$out'
set title '$title'
set xlabel '$xlabel'
set ylabel '$ylabel'
set grid
set key ${REPRO_KEY:-bottom right}
${REPRO_YRANGE:+set yrange $REPRO_YRANGE}
$logs
${REPRO_PLOT_EXTRA:-}
plot ${plots%, }
GP
  echo "repro: wrote ${out#"$REPRO_ROOT"/}"
}
