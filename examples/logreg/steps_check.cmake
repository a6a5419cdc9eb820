# SPDX-License-Identifier: BSL-1.0
# dml-logreg --seconds with a straggler (under asp or adaptive): the run ends and reports,
# and every fast member took more local steps than the slow one (the last
# member), read from the 'steps per member:' line -- counts, not timings:
# the straggler sleeps SLOW - 1 times each step's own time, so it cannot
# keep up with members that do not wait for it, however loaded the machine.
# EXPECT, when given, is a regular expression stdout must match too.
#   cmake -DTOOL=<dml-logreg> -DARGS=<a|b|c> [-DEXPECT=<regex>] -P steps_check.cmake
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND "${TOOL}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("exit code: ${rc}\n--- stdout ---\n${out}--- stderr ---\n${err}--------------")
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "expected exit code 0, got ${rc}")
endif()
if(NOT out MATCHES "\nsteps per member:(( [0-9]+)+)\n")
  message(FATAL_ERROR "no 'steps per member:' line")
endif()
string(STRIP "${CMAKE_MATCH_1}" counts)
string(REPLACE " " ";" counts "${counts}")
list(POP_BACK counts slow)
list(LENGTH counts fast_members)
if(fast_members LESS 1)
  message(FATAL_ERROR "expected counts for several members, got '${CMAKE_MATCH_1}'")
endif()
foreach(c IN LISTS counts)
  if(NOT c GREATER slow)
    message(FATAL_ERROR "a fast member took ${c} local steps, the straggler ${slow}: expected more")
  endif()
endforeach()
if(DEFINED EXPECT AND NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "stdout does not match '${EXPECT}'")
endif()
if(NOT out MATCHES "\nfinal: accuracy=0\\.[0-9]+ [^\n]* epochs=[0-9]+\n")
  message(FATAL_ERROR "no 'final:' line")
endif()
