# SPDX-License-Identifier: BSL-1.0
# Runs the serial trainer and its port on one member and checks that they
# print the same epoch and final lines, number for number, apart from the
# times (the port's docs/porting.md claims it; the first line, naming the
# program, differs too).
#   cmake -DSERIAL=<a|b|c> -DPARALLEL=<a|b|c> -P compare_serial.cmake
include("${CMAKE_CURRENT_LIST_DIR}/../common/run_piped.cmake")
foreach(which IN ITEMS SERIAL PARALLEL)
  dml_run_piped("${${which}}")
  string(REGEX MATCHALL "(epoch|final)[^\n]*" lines "${out}")
  # Times: "(0.123 s)" on epoch lines, "seconds=0.123" on the final line.
  string(REGEX REPLACE " \\([0-9.]+ s\\)| seconds=[0-9.]+" "" lines "${lines}")
  set(lines_${which} "${lines}")
endforeach()
list(LENGTH lines_SERIAL n)
if(n LESS 2)
  message(FATAL_ERROR "the serial trainer printed no epoch lines")
endif()
if(NOT lines_SERIAL STREQUAL lines_PARALLEL)
  message(FATAL_ERROR "the outputs differ:\nserial:   ${lines_SERIAL}\nparallel: ${lines_PARALLEL}")
endif()
message("the same ${n} lines: ${lines_SERIAL}")
