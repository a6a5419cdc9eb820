# SPDX-License-Identifier: BSL-1.0
# Runs a trainer under mpiexec --enable-recovery with its reporting member
# killed (DML_EXAMPLES_DIE_BEFORE_FINAL=0: member 0 ends its process with
# SIGKILL after the last report, where it would print the 'final:' line) and
# checks that a survivor took over: a view change names member 0, and a
# 'final:' line reports the model of the last epoch line -- the same
# averaged model, evaluated by the survivor, so the same loss and quality.
#   cmake -DCOMMAND=<a|b|c> -DEPOCHS=<n> -P final_after_death.cmake
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("--- ${command}\nexit code: ${rc}\n--- stdout ---\n${out}--- stderr ---\n${err}--------------")
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "exit code ${rc}, expected 0")
endif()
if(NOT out MATCHES "\nview 1: member 0 failed; [0-9]+ members go on")
  message(FATAL_ERROR "no line names member 0's failure")
endif()
if(NOT out MATCHES "\nepoch +${EPOCHS} +[0-9.]+ s  loss ([0-9.]+)  [a-z]+ ([0-9.]+) ")
  message(FATAL_ERROR "no line for epoch ${EPOCHS}")
endif()
set(loss "${CMAKE_MATCH_1}")
set(quality "${CMAKE_MATCH_2}")
string(REGEX MATCHALL "final: [^\n]*" finals "${out}")
list(LENGTH finals n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one 'final:' line (member 0 died before printing it), got ${n}")
endif()
if(NOT finals MATCHES "^final: [a-z]+=${quality} loss=${loss} seconds=[0-9.]+ bytes=[0-9]+ epochs=${EPOCHS}$")
  message(FATAL_ERROR "the 'final:' line does not report the last epoch's model (loss ${loss}, quality ${quality})")
endif()
message("a survivor reported the final model: ${finals}")
