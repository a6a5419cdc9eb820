# SPDX-License-Identifier: BSL-1.0
# dml_trainer_test(<target> <name> EXIT <code> [STDOUT <regex>] [STDERR <regex>]
#                  [CHECK_LOSS] ARGS <arguments...>)
# One ctest test running a trainer through run_check.cmake.
function(dml_trainer_test target name)
  cmake_parse_arguments(arg "CHECK_LOSS" "EXIT;STDOUT;STDERR" "ARGS" ${ARGN})
  string(REPLACE ";" "|" args "${arg_ARGS}")  # a ';' would split the -D argument
  add_test(NAME "example: ${target} ${name}"
           COMMAND ${CMAKE_COMMAND} "-DTOOL=$<TARGET_FILE:${target}>" "-DARGS=${args}" "-DEXPECT_EXIT=${arg_EXIT}"
                   "-DSTDOUT_REGEX=${arg_STDOUT}" "-DSTDERR_REGEX=${arg_STDERR}" "-DCHECK_LOSS=${arg_CHECK_LOSS}"
                   -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/run_check.cmake")
  set_tests_properties("example: ${target} ${name}" PROPERTIES LABELS "example;${target}" TIMEOUT 300)
endfunction()
