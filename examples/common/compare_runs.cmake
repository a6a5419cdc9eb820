# SPDX-License-Identifier: BSL-1.0
# Runs two trainer commands for ctest and checks that both succeed and end at
# the same loss: the 'final:' lines' loss values may differ by at most
# REL_TOL relative. Used to show that a trainer under mpiexec computes what
# it computes with in-process ranks.
#   cmake -DFIRST=<a|b|c> -DSECOND=<a|b|c> -DREL_TOL=<decimal> [-DKEY=<name>]
#         [-DFIRST_LINE=<word>] [-DSECOND_REGEX=<regex>] -P compare_runs.cmake
# KEY: the 'final:' line's field compared (default loss; dml-lasso: objective).
# FIRST_LINE: the first command prints its value on a line starting with
# this word instead of 'final:' (dml-lasso --reference: reference).
# SECOND_REGEX: the second command's output must also match it.
cmake_policy(SET CMP0054 NEW)  # "FIRST" below is a string, not the variable FIRST
if(NOT KEY)
  set(KEY loss)
endif()
include("${CMAKE_CURRENT_LIST_DIR}/run_piped.cmake")
foreach(which IN ITEMS FIRST SECOND)
  set(line final)
  if(which STREQUAL "FIRST" AND FIRST_LINE)
    set(line "${FIRST_LINE}")
  endif()
  dml_run_piped("${${which}}")
  if(NOT "\n${out}" MATCHES "\n${line}: [^\n]*${KEY}=([0-9.]+)[ \n]")
    message(FATAL_ERROR "no '${line}:' line with a plain decimal ${KEY}")
  endif()
  set(loss_${which} "${CMAKE_MATCH_1}")
  if(which STREQUAL "SECOND" AND SECOND_REGEX AND NOT out MATCHES "${SECOND_REGEX}")
    message(FATAL_ERROR "the second command's output does not match: ${SECOND_REGEX}")
  endif()
endforeach()
include("${CMAKE_CURRENT_LIST_DIR}/to_nano.cmake")
to_nano("${loss_FIRST}" first)
to_nano("${loss_SECOND}" second)
math(EXPR diff "${first} - ${second}")
if(diff LESS 0)
  math(EXPR diff "-${diff}")
endif()
# |a - b| <= tol * a, tol written as a plain decimal (0.00001, not 1e-5)
to_nano("${REL_TOL}" tol)
math(EXPR allowed "${first} * ${tol} / 1000000000")
message("losses ${loss_FIRST} and ${loss_SECOND}: difference ${diff}e-9, allowed ${allowed}e-9")
if(diff GREATER allowed)
  message(FATAL_ERROR "the losses differ by more than ${REL_TOL} relative")
endif()
