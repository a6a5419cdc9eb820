# SPDX-License-Identifier: BSL-1.0
# dml_run_piped(<a|b|c>): for the scripts that run trainer commands and
# compare what they print. Runs the command ('|' between its arguments),
# prints it with its exit code and output (ctest --output-on-failure shows
# them), stops the script unless it exits 0, and leaves its standard output
# in `out` and its standard error in `err`.
macro(dml_run_piped piped)
  string(REPLACE "|" ";" _dml_command "${piped}")
  execute_process(COMMAND ${_dml_command} RESULT_VARIABLE _dml_rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("--- ${_dml_command}\nexit code: ${_dml_rc}\n--- stdout ---\n${out}--- stderr ---\n${err}--------------")
  if(NOT _dml_rc STREQUAL "0")
    message(FATAL_ERROR "exit code ${_dml_rc}, expected 0")
  endif()
endmacro()
