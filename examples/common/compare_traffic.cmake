# SPDX-License-Identifier: BSL-1.0
# Runs two table-trainer commands for ctest and checks that both succeed and
# that the second received at most PERCENT percent of the bytes the first
# received: the last epoch line's "N KiB received" (the table statistics
# summed over the members). Used to show that a trainer's batched reads
# fetch less than its row-by-row ones.
#   cmake -DFIRST=<a|b|c> -DSECOND=<a|b|c> -DPERCENT=<whole number> -P compare_traffic.cmake
cmake_policy(SET CMP0054 NEW)  # "FIRST" below is a string, not the variable FIRST
include("${CMAKE_CURRENT_LIST_DIR}/run_piped.cmake")
foreach(which IN ITEMS FIRST SECOND)
  dml_run_piped("${${which}}")
  # The last epoch line: the greedy prefix skips every earlier one.
  if(NOT "\n${out}" MATCHES ".*\nepoch [^\n]* ([0-9]+) KiB received\n")
    message(FATAL_ERROR "no epoch line with the table's 'KiB received'")
  endif()
  set(kib_${which} "${CMAKE_MATCH_1}")
endforeach()
math(EXPR allowed "${kib_FIRST} * ${PERCENT} / 100")
message("received ${kib_FIRST} KiB, then ${kib_SECOND} KiB; at most ${allowed} KiB (${PERCENT} %) allowed")
if(kib_FIRST EQUAL 0)
  message(FATAL_ERROR "the first command received nothing: no traffic to compare")
endif()
if(kib_SECOND GREATER allowed)
  message(FATAL_ERROR "the second command received more than ${PERCENT} % of the first's bytes")
endif()
