# SPDX-License-Identifier: BSL-1.0
# Runs dml-pagerank for ctest and checks what run_check.cmake cannot: the
# 'final:' line's L1 change below MAX_CHANGE and its sum of ranks within
# 1e-3 of 1, and the --out file against OUT_REGEX. Exit code 0, nothing on
# stderr.
#   cmake -DTOOL=<exe> -DARGS=<a|b|c> [-DMAX_CHANGE=<x>] [-DOUT=<file> -DOUT_REGEX=<regex>] -P check_run.cmake
string(REPLACE "|" ";" args "${ARGS}")
if(DEFINED OUT AND NOT OUT STREQUAL "")
  file(REMOVE "${OUT}")
endif()
execute_process(COMMAND "${TOOL}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("exit code: ${rc}\n--- stdout ---\n${out}--- stderr ---\n${err}--------------")
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "expected exit code 0, got ${rc}")
endif()
if(NOT err STREQUAL "")
  message(FATAL_ERROR "expected nothing on stderr")
endif()
if(NOT out MATCHES "\nfinal: iterations=[0-9]+ change=([-+.0-9e]+) sum=([.0-9]+) ")
  message(FATAL_ERROR "no 'final:' line")
endif()
set(change "${CMAKE_MATCH_1}")
set(sum "${CMAKE_MATCH_2}")
if(NOT "${MAX_CHANGE}" STREQUAL "" AND NOT change LESS MAX_CHANGE)  # if(LESS) compares as real numbers
  message(FATAL_ERROR "the last L1 change ${change} is not below ${MAX_CHANGE}")
endif()
if(NOT (sum GREATER 0.999 AND sum LESS 1.001))
  message(FATAL_ERROR "the ranks sum to ${sum}, not to 1 within 1e-3")
endif()
if(NOT "${OUT}" STREQUAL "")
  file(READ "${OUT}" ranks)
  if(NOT ranks MATCHES "${OUT_REGEX}")
    message(FATAL_ERROR "${OUT} does not match ${OUT_REGEX}:\n${ranks}")
  endif()
endif()
