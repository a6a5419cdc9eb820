# SPDX-License-Identifier: BSL-1.0
# Runs a reference command (dml-cocoa --serial, long) and a dml-cocoa run
# for ctest, and checks that the run's final objective is within REL_TOL
# (relative) of the reference's and, with CHECK_QUOTA, that no rank sent
# more pair bytes in a round than the quota (the 'quota:' line, measured
# from the delta vector's statistics). Both must exit 0 with nothing on
# stderr but dml's load-dependent advice line.
#   cmake -DREFERENCE=<a|b|c> -DRUN=<a|b|c> -DREL_TOL=<x> [-DCHECK_QUOTA=1] -P check_cocoa.cmake
include("${CMAKE_CURRENT_LIST_DIR}/../common/run_piped.cmake")
foreach(which IN ITEMS REFERENCE RUN)
  dml_run_piped("${${which}}")
  string(REGEX REPLACE "(^|\n)dml: advice for a vector [^\n]*\n" "\\1" err "${err}")
  if(NOT err STREQUAL "")
    message(FATAL_ERROR "expected nothing on stderr")
  endif()
  if(NOT out MATCHES "\nfinal: objective=([0-9.]+) accuracy=-?[0-9.]+ bytes=([0-9]+) rounds=[0-9]+ seconds=[0-9.]+\n$")
    message(FATAL_ERROR "no 'final:' line with a plain decimal objective")
  endif()
  set(objective_${which} "${CMAKE_MATCH_1}")
  set(output_${which} "${out}")
endforeach()
set(ref "${objective_REFERENCE}")
set(got "${objective_RUN}")
include("${CMAKE_CURRENT_LIST_DIR}/../common/to_nano.cmake")
# |got - ref| <= REL_TOL * ref, in units of 1e-9 (CMake's math() is integer-only).
to_nano("${ref}" r)
to_nano("${got}" g)
to_nano("${REL_TOL}" tol)
math(EXPR diff "${g} - ${r}")
if(diff LESS 0)
  math(EXPR diff "-${diff}")
endif()
math(EXPR allowed "${r} * ${tol} / 1000000000")
message("objective ${got} against the reference ${ref}: difference ${diff}e-9, allowed ${allowed}e-9")
if(diff GREATER allowed)
  message(FATAL_ERROR "the objective is more than ${REL_TOL} (relative) from the reference")
endif()
if(CHECK_QUOTA)
  if(NOT output_RUN MATCHES "\nquota: largest_payload=([0-9]+) quota=([0-9]+)\n")
    message(FATAL_ERROR "no 'quota:' line")
  endif()
  set(largest "${CMAKE_MATCH_1}")
  set(quota "${CMAKE_MATCH_2}")
  if(largest EQUAL 0 OR largest GREATER quota)
    message(FATAL_ERROR "a rank sent ${largest} bytes of pairs in one round; the quota is ${quota} (and 0 means nothing was sent)")
  endif()
  message("largest payload per round ${largest} bytes, quota ${quota}")
endif()
