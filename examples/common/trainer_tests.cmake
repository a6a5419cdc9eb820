# SPDX-License-Identifier: BSL-1.0
# dml_no_unparsed_arguments(<prefix>): stops the configuration when a test
# function got arguments it does not know. The functions parse with
# PARSE_ARGV, which keeps a ';' inside an argument (a regex with "failed;
# 3 members go on"): parsed from ${ARGN}, such a regex was cut at its ';'
# and the rest dropped unnoticed, so the test checked only its beginning.
macro(dml_no_unparsed_arguments prefix)
  if(${prefix}_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${CMAKE_CURRENT_FUNCTION}: unexpected arguments: ${${prefix}_UNPARSED_ARGUMENTS}")
  endif()
endmacro()

# dml_trainer_test(<target> <name> EXIT <code> [STDOUT <regex>] [STDERR <regex>]
#                  [CHECK_LOSS] [MAX_LOSS <x>] [LOSS_NAME <column>] [MIN_ACCURACY <x>]
#                  [FIXTURES <fixture>] [MPI <processes>] ARGS <arguments...>)
# One ctest test running a trainer through run_check.cmake (which explains
# the loss checks); with MPI, under mpiexec with that many processes (needs
# dml::mpi; not registered otherwise). FIXTURES: a ctest fixture the test
# needs (e.g. gen_sparse_small, the generated sparse data).
function(dml_trainer_test target name)
  cmake_parse_arguments(PARSE_ARGV 2 arg "CHECK_LOSS" "EXIT;STDOUT;STDERR;MPI;MAX_LOSS;LOSS_NAME;MIN_ACCURACY;FIXTURES"
                        "ARGS")
  dml_no_unparsed_arguments(arg)
  set(tool "$<TARGET_FILE:${target}>")
  set(args ${arg_ARGS})
  set(labels "example;${target}")
  set(environment "")
  if(arg_MPI)
    if(NOT TARGET dml::mpi OR NOT DML_EXAMPLES_WITH_MPI)
      return()
    endif()
    dml_mpiexec_command(mpiexec ${arg_MPI})
    list(POP_FRONT mpiexec tool)
    set(args ${mpiexec} "$<TARGET_FILE:${target}>" ${args})
    list(APPEND labels mpi)
    set(environment ${DML_MPI_TEST_ENVIRONMENT})
  endif()
  string(REPLACE ";" "|" args "${args}")  # a ';' would split the -D argument
  add_test(NAME "example: ${target} ${name}"
           COMMAND ${CMAKE_COMMAND} "-DTOOL=${tool}" "-DARGS=${args}" "-DEXPECT_EXIT=${arg_EXIT}"
                   "-DSTDOUT_REGEX=${arg_STDOUT}" "-DSTDERR_REGEX=${arg_STDERR}" "-DCHECK_LOSS=${arg_CHECK_LOSS}"
                   "-DMAX_LOSS=${arg_MAX_LOSS}" "-DLOSS_NAME=${arg_LOSS_NAME}" "-DMIN_ACCURACY=${arg_MIN_ACCURACY}"
                   -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/run_check.cmake")
  set_tests_properties("example: ${target} ${name}" PROPERTIES LABELS "${labels}" TIMEOUT 300)
  if(arg_FIXTURES)
    set_tests_properties("example: ${target} ${name}" PROPERTIES FIXTURES_REQUIRED "${arg_FIXTURES}")
  endif()
  if(arg_MPI)
    set_tests_properties("example: ${target} ${name}" PROPERTIES RESOURCE_LOCK dml_mpi COST 1000 ENVIRONMENT "${environment}")
  endif()
endfunction()

# dml_trainer_matches_inproc(<target> TRANSPORT <mpi_rma|mpi> PROCESSES <n>
#                            [REL_TOL <decimal>] [KEY <field>] [WHAT <words>] [FIXTURES <fixture>]
#                            [SCRIPT <file>] [MPI_ARGS <arguments...>] ARGS <arguments...>)
# One ctest test: the trainer with <n> in-process ranks, then under mpiexec
# with <n> processes and --transport <t> (plus MPI_ARGS), must end at the
# same loss (compare_runs.cmake; default tolerance 0.00001 relative; KEY
# names another field of the 'final:' line, e.g. objective; REL_TOL 0: equal
# as printed; WHAT tells tests of one trainer apart in their names). SCRIPT
# compares the two runs instead (called with -DFIRST and -DSECOND, e.g.
# examples/lda/check_same_run.cmake). Needs dml::mpi.
function(dml_trainer_matches_inproc target)
  cmake_parse_arguments(arg "" "TRANSPORT;PROCESSES;REL_TOL;KEY;WHAT;FIXTURES;SCRIPT" "ARGS;MPI_ARGS" ${ARGN})
  if(NOT TARGET dml::mpi OR NOT DML_EXAMPLES_WITH_MPI)
    return()
  endif()
  if("${arg_REL_TOL}" STREQUAL "")
    set(arg_REL_TOL 0.00001)
  endif()
  if(NOT arg_SCRIPT)
    set(arg_SCRIPT "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/compare_runs.cmake")
  endif()
  dml_mpiexec_command(mpiexec ${arg_PROCESSES})
  set(first "$<TARGET_FILE:${target}>" ${arg_ARGS} --ranks ${arg_PROCESSES})
  set(second ${mpiexec} "$<TARGET_FILE:${target}>" ${arg_ARGS} --transport ${arg_TRANSPORT} ${arg_MPI_ARGS})
  string(REPLACE ";" "|" first "${first}")
  string(REPLACE ";" "|" second "${second}")
  set(with "${arg_TRANSPORT}")
  if(arg_MPI_ARGS)
    string(JOIN " " with ${arg_TRANSPORT} ${arg_MPI_ARGS})
  endif()
  set(name "example: ${target} under mpiexec -n ${arg_PROCESSES} with ${with} matches inproc")
  if(arg_WHAT)
    set(name "example: ${target} ${arg_WHAT} under mpiexec -n ${arg_PROCESSES} with ${with} matches inproc")
  endif()
  add_test(NAME "${name}"
           COMMAND ${CMAKE_COMMAND} "-DFIRST=${first}" "-DSECOND=${second}" "-DREL_TOL=${arg_REL_TOL}"
                   "-DKEY=${arg_KEY}" -P "${arg_SCRIPT}")
  set_tests_properties("${name}" PROPERTIES LABELS "example;${target};mpi" TIMEOUT 300 RESOURCE_LOCK dml_mpi COST 1000)
  if(arg_FIXTURES)
    set_tests_properties("${name}" PROPERTIES FIXTURES_REQUIRED "${arg_FIXTURES}")
  endif()
  if(DML_MPI_TEST_ENVIRONMENT)
    set_tests_properties("${name}" PROPERTIES ENVIRONMENT "${DML_MPI_TEST_ENVIRONMENT}")
  endif()
endfunction()

# dml_trainer_result_after_death(<target> PROCESSES <n> LAST <regex> FINAL <regex> [FIXTURES <fixture>]
#                                [NAME <text>] [DIE <variable> MEMBER <m>] ARGS <arguments...>)
# One ctest test: under mpiexec --enable-recovery, the reporting member 0
# dies where it would print the result (DML_EXAMPLES_DIE_BEFORE_FINAL=0,
# after the last report); a survivor must print it, once: exit 0, a view
# change naming member 0, and one 'final:' line matching FINAL with @1@ and
# @2@ replaced by what LAST (a progress line; the last match counts)
# captured (result_after_death.cmake). DIE and MEMBER choose another
# injection point and member (DML_EXAMPLES_DIE_BEFORE_AGREE: before the
# ranks compare their inputs; examples/common/kill_after.hpp). Needs
# dml::mpi and Open MPI (--enable-recovery).
function(dml_trainer_result_after_death target)
  cmake_parse_arguments(arg "" "PROCESSES;LAST;FINAL;FIXTURES;NAME;DIE;MEMBER" "ARGS" ${ARGN})
  if(NOT arg_DIE)
    set(arg_DIE DML_EXAMPLES_DIE_BEFORE_FINAL)
  endif()
  if(NOT arg_MEMBER)
    set(arg_MEMBER 0)
  endif()
  if(NOT TARGET dml::mpi OR NOT DML_EXAMPLES_WITH_MPI OR NOT DML_MPI_IS_OPEN_MPI)
    return()
  endif()
  if(NOT arg_NAME)
    set(arg_NAME "prints the result after its reporter died")
  endif()
  dml_mpiexec_command(mpiexec ${arg_PROCESSES})
  set(command ${mpiexec} --enable-recovery -x ${arg_DIE} -x DML_HEARTBEAT_TIMEOUT_MS
              "$<TARGET_FILE:${target}>" ${arg_ARGS})
  string(REPLACE ";" "|" command "${command}")
  set(name "example: ${target} under mpiexec -n ${arg_PROCESSES} ${arg_NAME}")
  add_test(NAME "${name}" COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${command}" "-DLAST=${arg_LAST}"
                                  "-DFINAL=${arg_FINAL}" "-DMEMBER=${arg_MEMBER}"
                                  -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/result_after_death.cmake")
  dml_mpi_trainer_environment(mpi_environment ${arg_ARGS})
  set(environment ${arg_DIE}=${arg_MEMBER} DML_HEARTBEAT_TIMEOUT_MS=500 ${mpi_environment})
  set_tests_properties("${name}" PROPERTIES LABELS "example;${target};mpi;fault" TIMEOUT 120 RESOURCE_LOCK dml_mpi COST 1000
                                            ENVIRONMENT "${environment}")
  if(arg_FIXTURES)
    set_tests_properties("${name}" PROPERTIES FIXTURES_REQUIRED "${arg_FIXTURES}")
  endif()
endfunction()

# dml_trainer_final_after_death(<target> PROCESSES <n> EPOCHS <e> ARGS <arguments...>)
# The same for the data-parallel trainers (trainer::report_final): after
# --epochs <e>, the survivor's 'final:' line reports the model of the last
# epoch line -- the same averaged model, evaluated by the survivor, so the
# same loss and quality.
function(dml_trainer_final_after_death target)
  cmake_parse_arguments(arg "" "PROCESSES;EPOCHS" "ARGS" ${ARGN})
  dml_trainer_result_after_death(${target} PROCESSES ${arg_PROCESSES}
                                 NAME "reports the final line after its reporter died"
                                 LAST "^epoch +${arg_EPOCHS} +[0-9.]+ s  loss ([0-9.]+)  [a-z]+ ([0-9.]+) "
                                 FINAL "^final: [a-z]+=@2@ loss=@1@ seconds=[0-9.]+ bytes=[0-9]+ epochs=${arg_EPOCHS}$"
                                 ARGS ${arg_ARGS} --epochs ${arg_EPOCHS})
endfunction()

# dml_trainer_mpi_error(<target> <name> PROCESSES <n> EXIT <code> STDERR <regex> [FIXTURES <fixture>]
#                       ARGS <arguments...> [OTHER_ARGS <arguments...>])
# One ctest test: the trainer under mpiexec with <n> processes must exit
# with <code>, print nothing on stdout and exactly one line of its own on
# stderr, matching <regex> (mpi_error.cmake). OTHER_ARGS: one more process
# runs with these arguments instead (mpiexec's "-n 1 <program> <args>"
# after a ':'), e.g. to read a different file. Needs dml::mpi.
function(dml_trainer_mpi_error target name)
  cmake_parse_arguments(PARSE_ARGV 2 arg "" "PROCESSES;EXIT;STDERR;FIXTURES" "ARGS;OTHER_ARGS")
  dml_no_unparsed_arguments(arg)
  if(NOT TARGET dml::mpi OR NOT DML_EXAMPLES_WITH_MPI)
    return()
  endif()
  dml_mpiexec_command(command ${arg_PROCESSES})
  list(APPEND command "$<TARGET_FILE:${target}>" ${arg_ARGS})
  if(arg_OTHER_ARGS)
    list(APPEND command ":" ${MPIEXEC_NUMPROC_FLAG} 1 "$<TARGET_FILE:${target}>" ${arg_OTHER_ARGS})
  endif()
  string(REPLACE ";" "|" command "${command}")
  set(test_name "example: ${target} under mpiexec ${name}")
  add_test(NAME "${test_name}"
           COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${command}" "-DPREFIX=${target}" "-DEXPECT_EXIT=${arg_EXIT}"
                   "-DSTDERR_REGEX=${arg_STDERR}" -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/mpi_error.cmake")
  set_tests_properties("${test_name}" PROPERTIES LABELS "example;${target};mpi" TIMEOUT 300 RESOURCE_LOCK dml_mpi COST 1000)
  if(DML_MPI_TEST_ENVIRONMENT)
    set_tests_properties("${test_name}" PROPERTIES ENVIRONMENT "${DML_MPI_TEST_ENVIRONMENT}")
  endif()
  if(arg_FIXTURES)
    set_tests_properties("${test_name}" PROPERTIES FIXTURES_REQUIRED "${arg_FIXTURES}")
  endif()
endfunction()

# dml_trainer_same_input(<target> WHAT <what> ARGS <arguments...> A <arguments...> B <arguments...>
#                        BAD <arguments...> HAS_A <regex> HAS_B <regex> FAILURE <regex>)
# The two tests of a trainer whose processes each read their whole input
# (trainer::read_agreed), under mpiexec with two processes given different
# arguments (ARGS, then A on rank 0 and B or BAD on rank 1): inputs that
# differ (mpi_rma) end both with "<target>: <what> differs between ranks:
# rank 1 of 2 has <HAS_B> (fingerprint ...), rank 0 of 2 has <HAS_A>
# (fingerprint ...); every process must read the same input", and an input
# that fails on rank 1 (mpi) ends both with "<target>: rank 1 of 2:
# <FAILURE>"; exit 1 and one line each time.
function(dml_trainer_same_input target)
  cmake_parse_arguments(arg "" "WHAT;HAS_A;HAS_B;FAILURE" "ARGS;A;B;BAD" ${ARGN})
  set(fingerprint "\\(fingerprint [0-9a-f]+\\)")
  dml_trainer_mpi_error(${target} "refuses an input that differs between processes" PROCESSES 1 EXIT 1
                        ARGS --transport mpi_rma ${arg_ARGS} ${arg_A} OTHER_ARGS --transport mpi_rma ${arg_ARGS} ${arg_B}
                        STDERR "^${target}: ${arg_WHAT} differs between ranks: rank 1 of 2 has ${arg_HAS_B} ${fingerprint}, rank 0 of 2 has ${arg_HAS_A} ${fingerprint}. every process must read the same input$")
  dml_trainer_mpi_error(${target} "fails on every process when one cannot read its input" PROCESSES 1 EXIT 1
                        ARGS --transport mpi ${arg_ARGS} ${arg_A} OTHER_ARGS --transport mpi ${arg_ARGS} ${arg_BAD}
                        STDERR "^${target}: rank 1 of 2: ${arg_FAILURE}$")
endfunction()

# dml_kill_driver_runs(<out-var> <runs> <seed>): the `--runs N --seed S`
# arguments of a kill-driver test (scripts/kill-driver.py). A sanitizer
# build makes half the runs (rounded up), at other moments (another seed):
# the same suite's plain build makes them all, an instrumented trainer runs
# three to five times slower, and the two builds together then kill at
# more moments than either alone.
function(dml_kill_driver_runs out runs seed)
  if(DML_SANITIZE)
    math(EXPR runs "(${runs} + 1) / 2")
    math(EXPR seed "${seed} + 1000")
  endif()
  set(${out} --runs ${runs} --seed ${seed} PARENT_SCOPE)
endfunction()
