# SPDX-License-Identifier: BSL-1.0
# Runs a table application (dml-mf, dml-lda) for ctest and checks one value
# of its 'final:' line: exit code EXPECT_EXIT (default 0), nothing on stderr,
# stdout matching STDOUT_REGEX if given, and 'final: ... KEY=<value>' with
# the value below BELOW and above ABOVE where given (compared as real
# numbers by if(LESS) / if(GREATER)).
#   cmake -DTOOL=<exe> -DARGS=<a|b|c> -DKEY=<name> [-DBELOW=<x>] [-DABOVE=<x>] [-DSTDOUT_REGEX=<regex>]
#         -P final_value.cmake
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND "${TOOL}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("exit code: ${rc}\n--- stdout ---\n${out}--- stderr ---\n${err}--------------")
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "expected exit code 0, got ${rc}")
endif()
if(NOT err STREQUAL "")
  message(FATAL_ERROR "expected nothing on stderr")
endif()
if(NOT "${STDOUT_REGEX}" STREQUAL "" AND NOT out MATCHES "${STDOUT_REGEX}")
  message(FATAL_ERROR "stdout does not match: ${STDOUT_REGEX}")
endif()
if(NOT out MATCHES "\nfinal: [^\n]*${KEY}=([-+.0-9e]+)")
  message(FATAL_ERROR "no 'final:' line with ${KEY}=")
endif()
set(value "${CMAKE_MATCH_1}")
if(NOT "${BELOW}" STREQUAL "" AND NOT value LESS BELOW)
  message(FATAL_ERROR "final ${KEY} ${value} is not below ${BELOW}")
endif()
if(NOT "${ABOVE}" STREQUAL "" AND NOT value GREATER ABOVE)
  message(FATAL_ERROR "final ${KEY} ${value} is not above ${ABOVE}")
endif()
message("final ${KEY} ${value}: within (${ABOVE}, ${BELOW})")
