#!/bin/sh
# SPDX-License-Identifier: BSL-1.0
# IterStore's comparison (Cui's thesis §3.4.2-§3.4.3) at small scale, with
# bench_iterstore: time per iteration of PageRank, MF and LDA on a bsp
# dml::table with the four specializations all off, each on alone, all on
# (pattern from a virtual iteration, and from the first real iterations),
# and PageRank and MF on dml::parameter_server (two vectors over
# topology::star). 4 in-process ranks, then 4 MPI processes over mpi_rma
# when mpiexec is there. The configurations take turns within each repeat,
# so that a change in the machine's load hits them alike. Prints one
# markdown row per (transport, app, configuration): median milliseconds per
# timed iteration, its ratio to all-off, the fastest and slowest run, the
# median milliseconds before the timed iterations (recording, placement,
# the untimed iterations), member 0's table counters per timed iteration
# (rows fetched from owners, update messages sent, share of its reads of
# rows it owns; none for the parameter server) and the median result.
# Exits 1 if a configuration computed something else than the others
# (PageRank: L1 distance to the serial power iteration above 1e-9; MF:
# training RMSE more than 2 % from all-off's; LDA: counts that do not add
# up) -- the only thing --quick (ctest's smoke run) checks.
#
#   bench/iterstore.sh [--quick] [--no-mpi] [--repeats R] [--iterations K]
#                      [--bin PATH | --build DIR]
set -eu
quick=0 mpi=1 repeats=5 iterations=10 bin="" build=build
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --no-mpi) mpi=0 ;;
    --repeats) repeats=$2; shift ;;
    --iterations) iterations=$2; shift ;;
    --bin) bin=$2; shift ;;
    --build) build=$2; shift ;;
    *) echo "iterstore.sh: unknown argument '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$bin" ] || bin="$build/bench/bench_iterstore"
[ -x "$bin" ] || { echo "iterstore.sh: no $bin (cmake --build $build --target bench_iterstore)" >&2; exit 2; }
size=""
if [ "$quick" = 1 ]; then
  # A smoke run: a tenth of the sizes, one repeat, in-process only.
  size=--quick repeats=1 iterations=2 mpi=0
fi
if [ "$mpi" = 1 ] && ! command -v mpiexec >/dev/null 2>&1; then
  echo "iterstore.sh: no mpiexec, in-process ranks only" >&2
  mpi=0
fi
mpiexec_root=""
[ "$(id -u)" -eq 0 ] && mpiexec_root=--allow-run-as-root
out=$(mktemp)
trap 'rm -f "$out"' EXIT

run() {  # transport app config
  if [ "$1" = inproc ]; then
    "$bin" --ranks 4 --app "$2" --config "$3" --iterations "$iterations" $size >>"$out"
  else
    mpiexec --oversubscribe $mpiexec_root -n 4 "$bin" --transport mpi_rma --app "$2" --config "$3" \
      --iterations "$iterations" $size >>"$out"
  fi
}

transports=inproc
[ "$mpi" = 1 ] && transports="inproc mpi_rma"
for r in $(seq 1 "$repeats"); do
  for tr in $transports; do
    for app in pagerank mf lda; do
      configs="off place batch prefetch cache all all-real"
      [ "$app" = lda ] || configs="$configs ps"
      for c in $configs; do run "$tr" "$app" "$c"; done
    done
  done
done

python3 - "$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split())
    key = (f["transport"], f["app"], f["config"])
    rows.setdefault(key, []).append((float(f["per_iteration"]), float(f["setup"]), float(f["result"]),
                                     float(f["fetched"]), float(f["messages"]), float(f["own"])))
med = lambda xs: statistics.median(xs)
bad = []
print("| transport | app | configuration | ms per iteration | ratio to off | min-max ms | ms before "
      "| rows fetched | messages | own reads | result |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for key, rs in rows.items():
    tr, app, cfg = key
    off = rows[(tr, app, "off")]
    t, setup, result = med(r[0] for r in rs), med(r[1] for r in rs), med(r[2] for r in rs)
    lo, hi = min(r[0] for r in rs), max(r[0] for r in rs)
    fetched, messages, own = (med(r[i] for r in rs) for i in (3, 4, 5))
    counters = (f"{fetched:.0f} | {messages:.0f} | {100 * own:.0f} %" if own >= 0 else "- | - | -")
    print(f"| {tr} | {app} | {cfg} | {1e3 * t:.2f} | {t / med(r[0] for r in off):.2f} "
          f"| {1e3 * lo:.1f}-{1e3 * hi:.1f} | {1e3 * setup:.1f} | {counters} | {result:.4g} |")
    for r in rs:
        if app == "pagerank" and not r[2] < 1e-9:
            bad.append(f"{tr} pagerank {cfg}: L1 distance {r[2]:g} to the serial power iteration (above 1e-9)")
        if app == "mf":
            ref = med(o[2] for o in off)
            if not abs(r[2] - ref) <= 0.02 * ref:
                bad.append(f"{tr} mf {cfg}: training RMSE {r[2]:g}, all-off has {ref:g} (more than 2 % apart)")
        if app == "lda" and r[2] != 0:
            bad.append(f"{tr} lda {cfg}: the counts are off by {r[2]:g} (every update must arrive once)")
if bad:
    print("\nconfigurations that computed something else:", *bad, sep="\n", file=sys.stderr)
    sys.exit(1)
print("\nevery configuration computed the same result (PageRank exact to 1e-9, MF RMSE within 2 %, LDA counts exact)")
PY
