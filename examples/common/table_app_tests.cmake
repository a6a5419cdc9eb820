# SPDX-License-Identifier: BSL-1.0
# dml_table_app_test(<target> <name> CHECKS <key<x|key>x...> [STDOUT <regex>]
#                    [RISES <key> INITIAL <regex>] [MPI <processes>] [LABELS <labels...>]
#                    ARGS <arguments...>)
# One ctest test running a table application (dml-mf, dml-lda) through
# final_value.cmake: exit 0, nothing on stderr, each value of the 'final:'
# line named in CHECKS below or above its bound (e.g. "rmse<0.115"), and
# with RISES the final value of that key above the one INITIAL captures.
# With MPI, under mpiexec with that many processes (needs dml::mpi; not
# registered otherwise).
function(dml_table_app_test target name)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "STDOUT;MPI;RISES;INITIAL" "CHECKS;ARGS;LABELS")
  dml_no_unparsed_arguments(arg)
  set(tool "$<TARGET_FILE:${target}>")
  set(args ${arg_ARGS})
  set(labels "example;${target};table" ${arg_LABELS})
  if(arg_MPI)
    if(NOT TARGET dml::mpi OR NOT DML_EXAMPLES_WITH_MPI)
      return()
    endif()
    dml_mpiexec_command(mpiexec ${arg_MPI})
    list(POP_FRONT mpiexec tool)
    set(args ${mpiexec} "$<TARGET_FILE:${target}>" ${args})
    list(APPEND labels mpi)
  endif()
  string(REPLACE ";" "|" args "${args}")
  string(REPLACE ";" "|" checks "${arg_CHECKS}")
  add_test(NAME "example: ${target} ${name}"
           COMMAND ${CMAKE_COMMAND} "-DTOOL=${tool}" "-DARGS=${args}" "-DCHECKS=${checks}"
                   "-DSTDOUT_REGEX=${arg_STDOUT}" "-DRISES=${arg_RISES}" "-DINITIAL_REGEX=${arg_INITIAL}"
                   -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/final_value.cmake")
  set_tests_properties("example: ${target} ${name}" PROPERTIES LABELS "${labels}" TIMEOUT 300)
  if(arg_MPI)
    dml_mpi_trainer_environment(environment ${arg_ARGS})
    set_tests_properties("example: ${target} ${name}" PROPERTIES RESOURCE_LOCK dml_mpi COST 1000
                                                                 ENVIRONMENT "${environment}")
  endif()
endfunction()
