# SPDX-License-Identifier: BSL-1.0
# Sourced by the scripts/repro/asap-*.sh reproductions (its name does not
# end in .sh, so it is never run as a reproduction itself): installs what is
# missing, configures build-repro/ (Release, the project's default options),
# builds only the targets asked for, and plots CSV columns.
#   source "$(dirname "${BASH_SOURCE[0]}")/asap.bash"
#   asap_build dml-topology dml-svm-sgd
#   asap_plot OUT.png TITLE XLABEL YLABEL [logx|logy|logxy|-] CSV:X:Y:LABEL[:STYLE]...
set -euo pipefail
ASAP_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ASAP_BUILD="$ASAP_ROOT/build-repro"
ASAP_DOCS="$ASAP_ROOT/docs/reproductions"
ASAP_JOBS="${DML_JOBS:-$(nproc)}"
mkdir -p "$ASAP_DOCS"

# asap_build TARGET...: configures build-repro/ when it has no cache yet,
# then builds the targets (and nothing else).
asap_build() {
  bash "$ASAP_ROOT/scripts/setup-debian.sh" >/dev/null
  # Configured on every call (a few seconds): a target added since the
  # last configuration is then known to the build.
  [[ -f $ASAP_BUILD/CMakeCache.txt ]] || echo "repro: configuring ${ASAP_BUILD#"$ASAP_ROOT"/} (Release)"
  cmake -S "$ASAP_ROOT" -B "$ASAP_BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  echo "repro: building $*"
  cmake --build "$ASAP_BUILD" -j "$ASAP_JOBS" --target "$@" | grep -v '^\[' || true
  local t
  for t in "$@"; do
    [[ -n $(find "$ASAP_BUILD" -name "$t" -type f -perm -u+x -print -quit) ]] ||
      { echo "repro: building $t failed" >&2; exit 1; }
  done
}

# asap_bin TARGET: the path of a built executable.
asap_bin() { find "$ASAP_BUILD" -name "$1" -type f -perm -u+x -print -quit; }

# asap_gnuplot: makes sure gnuplot is there (Debian's gnuplot-nox), as
# scripts/plot.sh does.
asap_gnuplot() {
  command -v gnuplot >/dev/null && return
  local sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "repro: installing gnuplot-nox"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null ||
    { $sudo apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null; }
}

# asap_plot OUT.png TITLE XLABEL YLABEL SCALE SERIES...: one 640x400 panel.
# SCALE is logx, logy, logxy or - (linear). Each SERIES is
# CSV:XCOLUMN:YCOLUMN:LABEL[:STYLE], columns by number in a CSV with a header
# line, STYLE a gnuplot style (default linespoints). ASAP_KEY places the
# legend (default: top right), ASAP_YRANGE sets the y range ([lo:hi]).
asap_plot() {
  local out="$1" title="$2" xlabel="$3" ylabel="$4" scale="$5"
  shift 5
  asap_gnuplot
  local plots="" s file x y label style
  for s in "$@"; do
    IFS=: read -r file x y label style <<<"$s"
    [[ -r $file ]] || { echo "asap_plot: cannot read '$file'" >&2; exit 2; }
    plots+="'$file' using $x:$y with ${style:-linespoints} title '$label', "
  done
  local logs=""
  case "$scale" in
    logx) logs="set logscale x" ;;
    logy) logs="set logscale y" ;;
    logxy) logs="set logscale xy" ;;
  esac
  gnuplot <<GP
set datafile separator ','
set key autotitle columnhead
set terminal pngcairo size 640,400 noenhanced font ',10'
set output '$out'
set title '$title'
set xlabel '$xlabel'
set ylabel '$ylabel'
set grid
set key ${ASAP_KEY:-top right}
${ASAP_YRANGE:+set yrange $ASAP_YRANGE}
$logs
plot ${plots%, }
GP
  echo "repro: wrote ${out#"$ASAP_ROOT"/}"
}
