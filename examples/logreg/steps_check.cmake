# SPDX-License-Identifier: BSL-1.0
# dml-logreg --seconds with a straggler (under asp or adaptive): the run ends and reports,
# and every fast member took more local steps than the slow one (the last
# member), read from the 'steps per member:' line -- counts, not timings:
# the straggler sleeps SLOW - 1 times each step's own time, so it cannot
# keep up with members that do not wait for it, however loaded the machine.
# EXPECT, when given, is a regular expression stdout must match too.
#   cmake -DTOOL=<dml-logreg> -DARGS=<a|b|c> [-DEXPECT=<regex>] [-DMIN_SLOW_STEPS=6] -P steps_check.cmake
#
# A starved run proves nothing either way: when the machine is so loaded
# that the straggler takes fewer than MIN_SLOW_STEPS local steps in the
# budget, every member may still be waiting for its first exchanges (the
# adaptive controller decides first at clock 3), and the counts are equal
# without any fault of the policy. Such a run, and only such a run, is
# repeated with twice the --seconds, at most twice; a run with enough steps
# is judged as it is, and one still starved at four times the budget fails
# with a message saying so.
include("${CMAKE_CURRENT_LIST_DIR}/../common/run_piped.cmake")
if(NOT DEFINED MIN_SLOW_STEPS)
  set(MIN_SLOW_STEPS 6)
endif()
string(REPLACE "|" ";" args "${ARGS}")
list(FIND args "--seconds" at)
if(at LESS 0)
  message(FATAL_ERROR "ARGS needs --seconds: ${ARGS}")
endif()
math(EXPR at "${at} + 1")
list(GET args ${at} seconds)

foreach(attempt RANGE 1 3)
  list(JOIN args "|" piped)
  message("run ${attempt}, --seconds ${seconds}:")
  dml_run_piped("${TOOL}|${piped}")
  if(NOT out MATCHES "\nsteps per member:(( [0-9]+)+)\n")
    message(FATAL_ERROR "no 'steps per member:' line")
  endif()
  string(STRIP "${CMAKE_MATCH_1}" counts)
  string(REPLACE " " ";" counts "${counts}")
  list(POP_BACK counts slow)
  if(NOT slow LESS MIN_SLOW_STEPS)
    break()
  endif()
  if(attempt EQUAL 3)
    message(FATAL_ERROR "starved: the straggler took ${slow} local steps in ${seconds} s, fewer than "
                        "${MIN_SLOW_STEPS} (3 runs, the budget doubled after each); the machine is too loaded for this test")
  endif()
  math(EXPR seconds "${seconds} * 2")
  list(REMOVE_AT args ${at})
  list(INSERT args ${at} ${seconds})
  message("the straggler took ${slow} local steps, fewer than ${MIN_SLOW_STEPS}: a starved run; again with --seconds ${seconds}")
endforeach()

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
