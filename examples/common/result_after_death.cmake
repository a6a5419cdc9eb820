# SPDX-License-Identifier: BSL-1.0
# Runs a trainer under mpiexec --enable-recovery with a member killed (e.g.
# DML_EXAMPLES_DIE_BEFORE_FINAL=0: member 0 ends its process with SIGKILL
# after the last report, where it would print the result) and checks that
# the survivors finished: exit status 0, a view change names MEMBER (0),
# and exactly one 'final:' line, which matches FINAL with @1@ and @2@
# replaced by what LAST captured (its first two groups) from the last
# progress line matching it.
#   cmake -DCOMMAND=<a|b|c> -DLAST=<regex> -DFINAL=<regex> [-DMEMBER=<m>] -P result_after_death.cmake
include("${CMAKE_CURRENT_LIST_DIR}/run_piped.cmake")
dml_run_piped("${COMMAND}")
if("${MEMBER}" STREQUAL "")
  set(MEMBER 0)
endif()
if(NOT out MATCHES "(^|\n)view 1: member ${MEMBER} (failed; [0-9]+ members go on|removed, [0-9]+ left)")
  message(FATAL_ERROR "no line names member ${MEMBER}'s failure")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${out}")
set(found FALSE)
foreach(line IN LISTS lines)
  if(line MATCHES "${LAST}")
    set(found TRUE)
    set(first "${CMAKE_MATCH_1}")
    set(second "${CMAKE_MATCH_2}")
  endif()
endforeach()
if(NOT found)
  message(FATAL_ERROR "no progress line matches '${LAST}'")
endif()
string(REGEX MATCHALL "final: [^\n]*" finals "${out}")
list(LENGTH finals n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one 'final:' line, got ${n}")
endif()
string(REPLACE "@1@" "${first}" expected "${FINAL}")
string(REPLACE "@2@" "${second}" expected "${expected}")
if(NOT finals MATCHES "${expected}")
  message(FATAL_ERROR "the 'final:' line does not match '${expected}'")
endif()
message("a survivor printed the result: ${finals}")
