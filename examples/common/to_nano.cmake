# SPDX-License-Identifier: BSL-1.0
# to_nano(<plain decimal> <out>): the value in units of 1e-9 as an integer,
# for the ctest scripts that compare decimals (CMake's math() is
# integer-only, 64 bit). Included by compare_runs.cmake and
# examples/cocoa/check_cocoa.cmake.
function(to_nano value out)
  string(REGEX MATCH "^([0-9]*)\\.?([0-9]*)$" _ "${value}")
  set(int "${CMAKE_MATCH_1}")
  string(SUBSTRING "${CMAKE_MATCH_2}000000000" 0 9 frac)
  if(int STREQUAL "")
    set(int 0)
  endif()
  string(REGEX MATCH "[1-9][0-9]*" frac "${frac}")  # no leading zeros (no octal)
  if(frac STREQUAL "")
    set(frac 0)
  endif()
  math(EXPR v "${int} * 1000000000 + ${frac}")
  set(${out} ${v} PARENT_SCOPE)
endfunction()
