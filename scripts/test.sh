#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Runs dml's whole test suite: installs the Debian packages it needs, builds
# everything and runs ctest.
#   scripts/test.sh                          warnings as errors, optimized
#   scripts/test.sh --sanitize address,undefined   ASan+UBSan build
#   scripts/test.sh --sanitize thread              ThreadSanitizer build (no MPI)
# Extra arguments after -- go to ctest (e.g. -- -R topology).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

sanitize=""
ctest_args=()
while (($#)); do
  case "$1" in
    --sanitize) sanitize="${2:?--sanitize needs a list, e.g. address,undefined}"; shift 2 ;;
    --sanitize=*) sanitize="${1#*=}"; shift ;;
    --) shift; ctest_args=("$@"); break ;;
    -h|--help) sed -n '3,9p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

dml_setup
dir="$DML_ROOT/build"
# The trainers run only the tests' small inputs here: -O1 halves their build
# time (scripts/main.sh builds its own at -O3).
# The benchmarks are only compiled here (one, bench_iterstore, is also
# smoke-tested), so -O0: 72 s of compile CPU at -O1 (bench/run builds
# optimized ones for its measurements).
# The trainers in separate compilation mode (examples/CMakeLists.txt): half
# their build time; the header-only mode is built by the header check, the
# consumers, the benchmarks, test/mpi and test_header_only_units.
# The examples at -Og (GCC's flow warnings, a fifth less compile time than
# -O1: dml-cocoa 14.3 s of CPU against 11.4 s), except the compute-heavy
# ones, whose tests need -O1's speed (examples/CMakeLists.txt).
cmake_args=(-DDML_WERROR=ON -DDML_EXAMPLES_OPTIMIZATION=-Og -DDML_COMPUTE_EXAMPLES_OPTIMIZATION=-O1
            -DDML_BENCH_OPTIMIZATION=-O0 -DDML_EXAMPLES_SEPARATE_COMPILATION=ON)
if [[ -n $sanitize ]]; then
  dir="$DML_ROOT/build-${sanitize//,/-}"
  # -g1: line tables and function names, all a sanitizer report needs;
  # full -g costs 40 % more compile time (one test translation unit under
  # ASan: 33 s of CPU with -g, 23.6 s with -g1).
  cmake_args+=(-DDML_SANITIZE="$sanitize" -DCMAKE_CXX_FLAGS="-O1" -DCMAKE_CXX_FLAGS_DEBUG="-g1")
  # The tests' own code at -O0: a sanitized test translation unit builds in
  # about 40 % of its -O1 time (clang 14, ASan+UBSan, test/vector/laws_bsp.cpp:
  # 7.1 s of CPU against 17.8 s).
  cmake_args+=(-DDML_TEST_OPTIMIZATION=-O0)
  # The examples likewise (dml-logreg: 13 s of CPU against 40 s), except
  # those whose tests compute for long, which keep -O1 (examples/CMakeLists.txt,
  # DML_COMPUTE_EXAMPLES_OPTIMIZATION).
  cmake_args+=(-DDML_EXAMPLES_OPTIMIZATION=-O0 -DDML_COMPUTE_EXAMPLES_OPTIMIZATION=-O1)
  export DML_BUILD_TYPE=Debug
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
  # Header, install and compile-fail checks test compilation only: the plain
  # run covers them, a sanitizer adds nothing.
  ctest_args=(-LE build_only "${ctest_args[@]}")
  # The libFuzzer smoke test builds its fuzzers with ASan+UBSan whatever the
  # build's flags (scripts/fuzz.sh), so the plain run already ran them
  # sanitized; the corpus replays do run here, in this build's flags.
  ctest_args=(-E "^fuzz: libFuzzer" "${ctest_args[@]}")
  # Build time: a sanitizer run skips the benchmarks (they are not tests).
  # The trainers are built with their MPI mode too, so their runs under
  # mpiexec (and the kill drivers') are sanitized as well.
  cmake_args+=(-DDML_BUILD_BENCH=OFF)
  # ThreadSanitizer finds races between threads of one process. dml's MPI
  # processes call MPI from one thread and share no memory between threads,
  # so the ThreadSanitizer run builds without the MPI component.
  if [[ $sanitize == *thread* ]]; then cmake_args+=(-DDML_WITH_MPI=OFF); fi
fi
echo "== dml tests: build in $dir${sanitize:+ (sanitizers: $sanitize)}"
start=$SECONDS
dml_build "$dir" "${cmake_args[@]}"
echo "== dml tests: built in $((SECONDS - start)) s; running ctest"
start=$SECONDS
status=0
ctest --test-dir "$dir" -j "$DML_JOBS" --output-on-failure --timeout 600 ${ctest_args[@]+"${ctest_args[@]}"} || status=$?
echo "== dml tests: ctest took $((SECONDS - start)) s"
# A failed test's output is printed where the test ended, often far from the
# end of a long log that may be kept only in part: repeat the last lines of
# each failed test's output at the end.
if [[ $status != 0 && -f $dir/Testing/Temporary/LastTest.log ]]; then
  awk -v keep=60 '
    /^[0-9]+\/[0-9]+ Test: / { name = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", name); n = 0; inside = 0; next }
    /^Output:$/ { inside = 1; getline; next }
    /^<end of output>$/ { inside = 0; next }
    inside { lines[n++] = $0; next }
    /^Test Failed/ {
      print "== dml tests: the end of the output of the failed test \"" name "\":"
      for (i = (n > keep ? n - keep : 0); i < n; i++) print "   " lines[i]
    }' "$dir/Testing/Temporary/LastTest.log"
fi
exit "$status"
