# SPDX-License-Identifier: BSL-1.0
# Runs one trainer for ctest: exact exit code, stdout and stderr matched
# separately (ctest's PASS_REGULAR_EXPRESSION ignores the exit code, so a
# sanitizer report at exit would pass). A run expected to succeed must leave
# stderr empty but for dml's timing-dependent advice line; one expected to
# fail must leave stdout empty unless STDOUT_REGEX says what it prints
# before failing. With CHECK_LOSS or
# MAX_LOSS the final loss must be below the untrained model's (the 'epoch 0'
# line, whose loss column is named LOSS_NAME, default "loss") and below
# MAX_LOSS if given. With MIN_ACCURACY the 'final:' line's accuracy must
# reach it.
#   cmake -DTOOL=<exe> -DARGS=<a|b|c> -DEXPECT_EXIT=<n> [-DSTDOUT_REGEX=] [-DSTDERR_REGEX=]
#         [-DCHECK_LOSS=1] [-DLOSS_NAME=mse] [-DMAX_LOSS=<x>] [-DMIN_ACCURACY=<x>] -P run_check.cmake
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND "${TOOL}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("exit code: ${rc}\n--- stdout ---\n${out}--- stderr ---\n${err}--------------")
if(NOT rc STREQUAL EXPECT_EXIT)
  message(FATAL_ERROR "expected exit code ${EXPECT_EXIT}, got ${rc}")
endif()
# The advice line a vector prints when communication dominates depends on
# the machine's load, not on the trainer: it is tested in
# test/vector/advice.cpp and allowed here; anything else on stderr is not.
string(REGEX REPLACE "(^|\n)dml: advice for a vector [^\n]*\n" "\\1" err_other "${err}")
if(EXPECT_EXIT STREQUAL "0" AND NOT err_other STREQUAL "")
  message(FATAL_ERROR "expected nothing on stderr")
elseif(NOT EXPECT_EXIT STREQUAL "0" AND "${STDOUT_REGEX}" STREQUAL "" AND NOT out STREQUAL "")
  message(FATAL_ERROR "expected nothing on stdout when failing")
endif()
if(NOT STDOUT_REGEX STREQUAL "" AND NOT out MATCHES "${STDOUT_REGEX}")
  message(FATAL_ERROR "stdout does not match: ${STDOUT_REGEX}")
endif()
if(NOT STDERR_REGEX STREQUAL "" AND NOT err MATCHES "${STDERR_REGEX}")
  message(FATAL_ERROR "stderr does not match: ${STDERR_REGEX}")
endif()
if(CHECK_LOSS OR NOT "${MAX_LOSS}" STREQUAL "")
  if("${LOSS_NAME}" STREQUAL "")
    set(LOSS_NAME loss)
  endif()
  if(NOT out MATCHES "epoch +0 [^\n]* ${LOSS_NAME} +([0-9.]+)")
    message(FATAL_ERROR "no 'epoch 0' line with the untrained model's ${LOSS_NAME}")
  endif()
  set(initial "${CMAKE_MATCH_1}")
  if(NOT out MATCHES "\nfinal: [^\n]*loss=([0-9.]+) ")
    message(FATAL_ERROR "no 'final:' line with a loss")
  endif()
  set(final "${CMAKE_MATCH_1}")
  if(NOT final LESS initial)  # if(LESS) compares as real numbers
    message(FATAL_ERROR "the loss went from ${initial} to ${final}; expected a decrease")
  endif()
  if(NOT "${MAX_LOSS}" STREQUAL "" AND NOT final LESS MAX_LOSS)
    message(FATAL_ERROR "the final loss ${final} is not below ${MAX_LOSS}")
  endif()
endif()
if(NOT "${MIN_ACCURACY}" STREQUAL "")
  if(NOT out MATCHES "\nfinal: accuracy=([0-9.]+) ")
    message(FATAL_ERROR "no 'final:' line with an accuracy")
  endif()
  if(CMAKE_MATCH_1 LESS MIN_ACCURACY)
    message(FATAL_ERROR "the final accuracy ${CMAKE_MATCH_1} is below ${MIN_ACCURACY}")
  endif()
endif()
