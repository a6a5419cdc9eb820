# SPDX-License-Identifier: BSL-1.0
# MPI test registration for dml's own tests (not installed).
#
#   dml_add_mpi_test(<name> TARGET <exe> NPROCS <n>...
#                    [ARGS <args>...] [MPIEXEC_FLAGS <flags>...] [TIMEOUT <s>]
#                    [ENVIRONMENT <VAR=value>...] [SURVIVORS | BROKEN] [LABELS <labels>...]
#                    [LAUNCHER <command>...] [SKIP_RETURN_CODE <code>])
#
# Registers one ctest test "<name> (n=<n>)" per process count, running
#   <launcher> mpiexec -n <n> <flags> <exe> <args>
# LAUNCHER runs first and starts mpiexec itself (e.g. a probe that exits
# SKIP_RETURN_CODE, reported by ctest as skipped, when the hardware a test
# needs is missing). Not with SURVIVORS.
# With Open MPI the command gets --oversubscribe (the tests start more
# processes than these machines have cores) and, when CMake runs as root,
# --allow-run-as-root; a non-root user gets the same command without it.
# DML_MPIEXEC_FLAGS (cache) adds flags to every test, e.g. "--mca btl self,vader".
# ENVIRONMENT variables are set for mpiexec and, with Open MPI, exported to
# every rank with -x (ranks on other hosts do not inherit mpiexec's).
#
# SURVIVORS: one rank kills itself on purpose. The run uses
# --enable-recovery (the survivors keep running), and passes when exactly n-1
# ranks print "dml-mpi-test: ... rank <r> of <n>: passed" and none prints
# "failed". mpiexec's exit status cannot tell: under --enable-recovery it is
# 0 whatever the survivors return. This file is then run as a script
# (cmake -DDML_MPI_DRIVER=ON -P dmlMpiTests.cmake) to count the lines.
# BROKEN: every rank ends with its MPI state broken on purpose (a collective
# left pending), so none may finalize MPI and each leaves with _Exit, which
# mpiexec calls exiting improperly; run the same way, all n must pass.
#
# Every MPI test holds the resource lock dml_mpi: with several ranks per
# core already, two MPI jobs side by side would only slow each other down
# (and stretch timeouts). An in-process test may run next to one: they
# used to be RUN_SERIAL, which left the second core idle for the 120-160
# MPI tests (about 215 s of each CI stage's ctest, run one by one). And
# every MPI test has COST 1000, above every other test: on a fresh build (no
# recorded costs) ctest runs tests in descending cost, so the one-at-a-time
# MPI chain starts first and runs alongside the in-process tests instead of
# finishing alone at the end (48 s of idle core in the sanitized stage's
# 361 s of ctest on 2026-11-27).

if(DML_MPI_DRIVER)
  # ---- script mode: run mpiexec, count the verdict lines --------------------
  separate_arguments(command NATIVE_COMMAND "${DML_MPI_COMMAND}")
  execute_process(COMMAND ${command} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc
                  TIMEOUT ${DML_MPI_TIMEOUT})
  message("${out}")
  message("${err}")
  string(REGEX MATCHALL "dml-mpi-test: [a-z_]+ rank [0-9]+ of [0-9]+: passed" passed "${out}")
  string(REGEX MATCHALL "dml-mpi-test: [a-z_]+ rank [0-9]+ of [0-9]+: failed" failed "${out}")
  list(LENGTH passed n_passed)
  list(LENGTH failed n_failed)
  if(NOT n_passed EQUAL DML_MPI_EXPECT_PASSED OR NOT n_failed EQUAL 0)
    message(FATAL_ERROR "expected ${DML_MPI_EXPECT_PASSED} ranks to pass, got ${n_passed} passed and "
                        "${n_failed} failed (mpiexec exit status ${rc})")
  endif()
  message("dml-mpi-test: ${n_passed} ranks passed")
  return()
endif()

# ---- project mode ------------------------------------------------------------
set(DML_MPIEXEC_FLAGS "" CACHE STRING "Extra mpiexec flags for dml's MPI tests")

if(NOT DEFINED DML_MPI_IS_OPEN_MPI)
  execute_process(COMMAND "${MPIEXEC_EXECUTABLE}" --version OUTPUT_VARIABLE _dml_v ERROR_VARIABLE _dml_v
                  RESULT_VARIABLE _dml_rc)
  if(_dml_v MATCHES "Open MPI|OpenRTE")
    set(DML_MPI_IS_OPEN_MPI TRUE CACHE INTERNAL "")
  else()
    set(DML_MPI_IS_OPEN_MPI FALSE CACHE INTERNAL "")
  endif()
endif()

set(_dml_mpi_flags "")
if(DML_MPI_IS_OPEN_MPI)
  list(APPEND _dml_mpi_flags --oversubscribe)
  # Open MPI refuses to run as root unless told; detected when configuring.
  execute_process(COMMAND id -u OUTPUT_VARIABLE _dml_uid OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_dml_uid STREQUAL "0")
    list(APPEND _dml_mpi_flags --allow-run-as-root)
  endif()
endif()
# What every MPI test process's environment holds (dml_add_mpi_test adds
# it; tests registered otherwise set it from DML_MPI_TEST_ENVIRONMENT):
# - AddressSanitizer: no leak check. LeakSanitizer reports Open MPI's own
#   allocations at exit (made in MPI_Init by MCA components, some never freed
#   by design), and a suppression file cannot name them: MPI_Finalize has
#   dlclose()d those components by then, so their frames symbolize as
#   "<unknown module>". ASan's other checks and UBSan stay on, and the
#   in-process tests keep leak checking.
# - ThreadSanitizer: suppressions for reports inside Open MPI itself
#   (test/mpi/tsan.supp says which and why).
set(DML_MPI_TEST_ENVIRONMENT "")
if(DML_SANITIZE MATCHES "address")
  list(APPEND DML_MPI_TEST_ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
endif()
# - Open MPI: the ob1 messaging layer named, unless the environment names
#   one. Left to choose, Open MPI also starts its cm layer, whose network
#   components probe for hardware first: five processes that only start
#   and end MPI took 0.73 s, and 0.52 s with ob1 named (Debian's Open MPI
#   4.1, 2026-11-29). The tests run on one node, where ob1 is what Open MPI
#   picks anyway.
if(DML_MPI_IS_OPEN_MPI AND NOT DEFINED ENV{OMPI_MCA_pml})
  list(APPEND DML_MPI_TEST_ENVIRONMENT "OMPI_MCA_pml=ob1")
endif()
if(DML_SANITIZE MATCHES "thread")
  list(APPEND DML_MPI_TEST_ENVIRONMENT
       "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=${PROJECT_SOURCE_DIR}/test/mpi/tsan.supp")
endif()

# The tests of the two-sided transport (dml::comm::mpi) add this: Open MPI
# yields the core inside every MPI call that finds nothing to do when its
# ranks are oversubscribed, and beside other work (the other ctest slot)
# each such yield costs a scheduler time slice. That transport waits only
# in its own loops, which yield and sleep by themselves; the mpi_rma
# transport waits inside MPI (flushes, window locks) and needs Open MPI's
# yields. Beside one busy loop on 2 cores (2026-11-29): the 23 two-sided
# tests took 133 s and 39 s with this; the 14 mpi_rma law and transport
# tests 37 s and 90 s with it (docs/running.md).
set(DML_MPI_TWO_SIDED_TEST_ENVIRONMENT "")
if(DML_MPI_IS_OPEN_MPI AND NOT DEFINED ENV{OMPI_MCA_mpi_yield_when_idle})
  list(APPEND DML_MPI_TWO_SIDED_TEST_ENVIRONMENT "OMPI_MCA_mpi_yield_when_idle=0")
endif()

# dml_mpi_trainer_environment(<out> <trainer arguments...>): the environment
# of a trainer's run under mpiexec: DML_MPI_TEST_ENVIRONMENT, and the
# two-sided one when the arguments choose `--transport mpi`. Those runs
# exchange often and compute little, the case docs/running.md advises the
# setting for: beside a busy loop (the other ctest slot), dml-lda's run at
# 3 processes whose member 0 dies at the start took 9.9 s and 1.9 s with
# it, dml-least-squares' two-sided kill test 15.2 s and 7.0 s (2026-11-29).
# (dml-logreg's kill driver, which computes between exchanges, took 15.5 s
# and 17.3 s: it keeps Open MPI's default.)
function(dml_mpi_trainer_environment out)
  set(env ${DML_MPI_TEST_ENVIRONMENT})
  set(args ${ARGN})
  list(FIND args "--transport" at)
  if(at GREATER_EQUAL 0)
    math(EXPR at "${at} + 1")
    list(LENGTH args n)
    if(at LESS n)
      list(GET args ${at} transport)
      if(transport STREQUAL "mpi")
        list(APPEND env ${DML_MPI_TWO_SIDED_TEST_ENVIRONMENT})
      endif()
    endif()
  endif()
  set(${out} "${env}" PARENT_SCOPE)
endfunction()

separate_arguments(_dml_user_flags NATIVE_COMMAND "${DML_MPIEXEC_FLAGS}")
list(APPEND _dml_mpi_flags ${_dml_user_flags})

# dml_mpiexec_command(<out> <n>): the command prefix starting <n> processes
# with the flags above (for tests that run a program through a script).
function(dml_mpiexec_command out n)
  set(${out} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${n} ${_dml_mpi_flags} ${MPIEXEC_PREFLAGS} PARENT_SCOPE)
endfunction()

function(dml_add_mpi_test name)
  cmake_parse_arguments(arg "SURVIVORS;BROKEN" "TARGET;TIMEOUT;SKIP_RETURN_CODE"
                        "NPROCS;ARGS;MPIEXEC_FLAGS;LABELS;ENVIRONMENT;LAUNCHER" ${ARGN})
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 300)
  endif()
  list(APPEND arg_ENVIRONMENT ${DML_MPI_TEST_ENVIRONMENT})
  foreach(n IN LISTS arg_NPROCS)
    set(test_name "${name} (n=${n})")
    set(flags ${_dml_mpi_flags} ${arg_MPIEXEC_FLAGS})
    if(DML_MPI_IS_OPEN_MPI)
      # mpiexec ends the job itself a little before ctest would kill it, so
      # no rank is left behind.
      math(EXPR job_limit "${arg_TIMEOUT} - 10")
      list(APPEND flags --timeout ${job_limit})
      foreach(assignment IN LISTS arg_ENVIRONMENT)
        string(REGEX REPLACE "=.*" "" variable "${assignment}")
        list(APPEND flags -x ${variable})
      endforeach()
    endif()
    if(arg_SURVIVORS OR arg_BROKEN)
      if(DML_MPI_IS_OPEN_MPI)
        list(APPEND flags --enable-recovery)
      endif()
      set(expect ${n})
      if(arg_SURVIVORS)
        math(EXPR expect "${n} - 1")
      endif()
      set(command ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${n} ${flags} ${MPIEXEC_PREFLAGS}
                  $<TARGET_FILE:${arg_TARGET}> ${MPIEXEC_POSTFLAGS} ${arg_ARGS})
      list(JOIN command " " command_line)
      add_test(NAME "${test_name}"
               COMMAND ${CMAKE_COMMAND} -DDML_MPI_DRIVER=ON "-DDML_MPI_COMMAND=${command_line}"
                       -DDML_MPI_EXPECT_PASSED=${expect} -DDML_MPI_TIMEOUT=${arg_TIMEOUT}
                       -P "${CMAKE_CURRENT_FUNCTION_LIST_FILE}")
    else()
      add_test(NAME "${test_name}"
               COMMAND ${arg_LAUNCHER} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${n} ${flags}
                       ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${arg_TARGET}> ${MPIEXEC_POSTFLAGS} ${arg_ARGS})
    endif()
    if(DEFINED arg_SKIP_RETURN_CODE)
      set_tests_properties("${test_name}" PROPERTIES SKIP_RETURN_CODE ${arg_SKIP_RETURN_CODE})
    endif()
    set_tests_properties("${test_name}" PROPERTIES TIMEOUT ${arg_TIMEOUT} RESOURCE_LOCK dml_mpi COST 1000
                                                   LABELS "mpi;${arg_LABELS}")
    if(arg_ENVIRONMENT)
      set_tests_properties("${test_name}" PROPERTIES ENVIRONMENT "${arg_ENVIRONMENT}")
    endif()
  endforeach()
endfunction()
