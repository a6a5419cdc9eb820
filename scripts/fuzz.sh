#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Builds dml's libFuzzer targets with clang++ (-fsanitize=fuzzer,address,undefined)
# and runs them under the limits every finding is judged by: 512 MB resident,
# no single allocation over 256 MB, 10 s per input.
#   scripts/fuzz.sh TARGET [SECONDS]   fuzz one target (libsvm, idx, checkpoint, bag_of_words, ratings, edges; default 300 s)
#   scripts/fuzz.sh all [SECONDS]      each target in turn
#   scripts/fuzz.sh --smoke SECONDS    every target for SECONDS each (ctest 'fuzz: libFuzzer ...');
#                                      exits 77 (skipped) when clang++ cannot build a fuzzer here
# Binaries, the growing corpus (corpus-TARGET/) and crash inputs (TARGET-crash-*)
# go to $DML_FUZZ_DIR (default build-fuzz/). The committed seeds and
# regressions in test/fuzz/corpus/TARGET are read, never written: copy a
# finding there (as regression-NAME) once it is fixed, and the plain build
# replays it under g++ in ctest ('fuzz: replay ...').
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${DML_FUZZ_DIR:-$root/build-fuzz}"
cxx="${DML_FUZZ_CXX:-clang++}"
targets=(libsvm idx checkpoint bag_of_words ratings edges)

smoke=0
if [[ ${1:-} == --smoke ]]; then
  smoke=1
  seconds="${2:?--smoke needs SECONDS}"
  chosen=("${targets[@]}")
elif [[ ${1:-} == all ]]; then
  seconds="${2:-300}"
  chosen=("${targets[@]}")
elif [[ " ${targets[*]} " == *" ${1:-none} "* ]]; then
  seconds="${2:-300}"
  chosen=("$1")
else
  sed -n '3,15p' "$0" >&2
  exit 2
fi

skip() {
  echo "fuzz.sh: skipped: $*"
  exit 77
}

# Eigen's headers: from pkg-config, else Debian's place.
eigen="$(pkg-config --cflags-only-I eigen3 2>/dev/null || true)"
[[ -n $eigen ]] || eigen="-I/usr/include/eigen3"
flags=(-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -I"$root/include" -I"$root/test/fuzz" $eigen)

mkdir -p "$out"
if ! command -v "$cxx" >/dev/null; then
  ((smoke)) && skip "no $cxx"
  echo "fuzz.sh: $cxx not found (Debian: clang and libclang-rt-14-dev)" >&2
  exit 1
fi
probe="$out/probe.cpp"
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$probe"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe" -o "$out/probe" 2>"$out/probe.log"; then
  ((smoke)) && skip "$cxx cannot link -fsanitize=fuzzer (Debian: libclang-rt-14-dev): $(head -c 300 "$out/probe.log")"
  cat "$out/probe.log" >&2
  exit 1
fi

# A target is rebuilt when its source or any dml header is newer than it.
build() {
  local t="$1" bin="$out/fuzz-$1"
  if [[ -x $bin ]] && [[ -z $(find "$root/include" "$root/test/fuzz" -name '*.[hc]pp' -newer "$bin" -print -quit) ]]; then
    return
  fi
  echo "fuzz.sh: building $bin"
  "$cxx" "${flags[@]}" "$root/test/fuzz/$t.cpp" -lz -o "$bin.tmp"
  mv "$bin.tmp" "$bin"
}

status=0
for t in "${chosen[@]}"; do
  build "$t"
  mkdir -p "$out/corpus-$t"
  echo "fuzz.sh: fuzzing $t for $seconds s"
  # detect_leaks: a leak is a finding too. The seeds and regressions are
  # read first; new inputs go to the first directory only.
  if ! ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" "$out/fuzz-$t" \
      -rss_limit_mb=512 -malloc_limit_mb=256 -timeout=10 -max_total_time="$seconds" \
      -print_final_stats=1 -artifact_prefix="$out/$t-" \
      "$out/corpus-$t" "$root/test/fuzz/corpus/$t" >"$out/$t.log" 2>&1; then
    echo "fuzz.sh: $t FOUND SOMETHING: see $out/$t.log and $out/$t-*" >&2
    grep -E 'ERROR|SUMMARY|fuzz check failed|Test unit written' "$out/$t.log" >&2 || tail -20 "$out/$t.log" >&2
    status=1
  else
    grep -E '^stat::number_of_executed_units|^Done' "$out/$t.log" || true
  fi
done
exit $status
