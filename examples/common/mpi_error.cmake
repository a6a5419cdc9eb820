# SPDX-License-Identifier: BSL-1.0
# Runs a trainer under mpiexec for ctest and checks that it fails the way a
# bad command line or bad input must under MPI: the exit code EXPECT_EXIT,
# nothing on stdout, and exactly one line of the trainer's own on stderr
# (one process reports what every process found; mpiexec's own notice of
# the failed job may follow), matching STDERR_REGEX.
#   cmake -DCOMMAND=<a|b|c> -DPREFIX=<program name> -DEXPECT_EXIT=<n> -DSTDERR_REGEX=<regex>
#         -P mpi_error.cmake
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("--- ${command}\nexit code: ${rc}\n--- stdout ---\n${out}--- stderr ---\n${err}--------------")
if(NOT rc STREQUAL EXPECT_EXIT)
  message(FATAL_ERROR "expected exit code ${EXPECT_EXIT}, got ${rc}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "expected nothing on stdout when failing")
endif()
string(REPLACE ";" "." err_text "${err}")  # a ';' would split the list of matches
string(REGEX MATCHALL "(^|\n)${PREFIX}: [^\n]*" lines "${err_text}")
list(LENGTH lines n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one line starting '${PREFIX}: ' on stderr, got ${n}")
endif()
string(REGEX REPLACE "^\n" "" line "${lines}")
if(NOT line MATCHES "${STDERR_REGEX}")
  message(FATAL_ERROR "the line '${line}' does not match: ${STDERR_REGEX}")
endif()
