# SPDX-License-Identifier: BSL-1.0
# dml_table_app_test(<target> <name> KEY <key> [BELOW <x>] [ABOVE <x>] [STDOUT <regex>]
#                    [MPI <processes>] [LABELS <labels...>] ARGS <arguments...>)
# One ctest test running a table application (dml-mf, dml-lda) through
# final_value.cmake: exit 0, nothing on stderr, the 'final:' line's <key>
# between ABOVE and BELOW. With MPI, under mpiexec with that many processes
# (needs dml::mpi; not registered otherwise).
function(dml_table_app_test target name)
  cmake_parse_arguments(arg "" "KEY;BELOW;ABOVE;STDOUT;MPI" "ARGS;LABELS" ${ARGN})
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
  add_test(NAME "example: ${target} ${name}"
           COMMAND ${CMAKE_COMMAND} "-DTOOL=${tool}" "-DARGS=${args}" "-DKEY=${arg_KEY}" "-DBELOW=${arg_BELOW}"
                   "-DABOVE=${arg_ABOVE}" "-DSTDOUT_REGEX=${arg_STDOUT}"
                   -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/final_value.cmake")
  set_tests_properties("example: ${target} ${name}" PROPERTIES LABELS "${labels}" TIMEOUT 300)
  if(arg_MPI)
    set_tests_properties("example: ${target} ${name}" PROPERTIES RUN_SERIAL TRUE
                                                                 ENVIRONMENT "${DML_MPI_TEST_ENVIRONMENT}")
  endif()
endfunction()
