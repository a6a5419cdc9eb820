# SPDX-License-Identifier: BSL-1.0
# Runs dml-checkpoint-demo for ctest in fresh directories under WORK.
#   cmake -DTOOL=<exe> -DMODE=resume|refuse -DWORK=<dir> -P check_resume.cmake
# resume: a run stopped after step 30 and resumed prints, from step 40 on,
#         exactly what an uninterrupted run prints.
# refuse: resuming with another --dim or --seed, or with one rank's file
#         missing, fails with a message saying so.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

# run(<exit code> <out var> <err var> <args...>): runs the demo, checks the exit code.
function(run expect out_var err_var)
  execute_process(COMMAND "${TOOL}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("$ dml-checkpoint-demo ${ARGN}\nexit code: ${rc}\n--- stdout ---\n${out}--- stderr ---\n${err}--------------")
  if(NOT rc STREQUAL expect)
    message(FATAL_ERROR "expected exit code ${expect}, got ${rc}")
  endif()
  # dml's advice line depends on the machine's load (see run_check.cmake).
  string(REGEX REPLACE "(^|\n)dml: advice for a vector [^\n]*\n" "\\1" err_other "${err}")
  if(expect STREQUAL "0" AND NOT err_other STREQUAL "")
    message(FATAL_ERROR "expected nothing on stderr")
  elseif(NOT expect STREQUAL "0" AND NOT out STREQUAL "")
    message(FATAL_ERROR "expected nothing on stdout when failing")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

function(require text regex)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "output does not match: ${regex}")
  endif()
endfunction()

if(MODE STREQUAL "resume")
  run(0 whole err --dir "${WORK}/whole" --steps 60)
  run(0 first err --dir "${WORK}/parts" --steps 60 --stop-after 30)
  require("${first}" "\nstep 30 mse [0-9.]+, saved\nstopped after step 30\n$")
  run(0 second err --dir "${WORK}/parts" --steps 60 --resume)
  # The resumed model is the saved one: the same loss as at step 30.
  string(REGEX MATCH "step 30 mse ([0-9.]+)" _ "${first}")
  require("${second}" "^4 ranks, [^\n]*\nresumed from [^\n]*/parts at step 30 \\(epoch 0\\), mse ${CMAKE_MATCH_1}\nstep 40 ")
  # From step 40 on, every line is the uninterrupted run's.
  string(FIND "${whole}" "step 40 " at)
  string(SUBSTRING "${whole}" ${at} -1 tail)
  string(FIND "${second}" "step 40 " at)
  string(SUBSTRING "${second}" ${at} -1 resumed_tail)
  if(NOT tail STREQUAL resumed_tail)
    message(FATAL_ERROR "the resumed run differs from the uninterrupted one:\n${resumed_tail}\nversus\n${tail}")
  endif()
  require("${tail}" "^step 40 mse [0-9.]+, saved\nstep 50 mse [0-9.]+, saved\nstep 60 mse [0-9.]+, saved\nfinal: step 60 mse [0-9.]+\n$")
  # A resume after the last step has nothing left to do.
  run(0 done err --dir "${WORK}/parts" --steps 60 --resume)
  require("${done}" "resumed from [^\n]* at step 60 \\(epoch 1\\)[^\n]*\nfinal: step 60 mse [0-9.]+\n$")
elseif(MODE STREQUAL "refuse")
  run(0 fresh err --dir "${WORK}/c" --steps 20 --resume)
  require("${fresh}" "\nno checkpoint in [^\n]*/c; starting from step 0\nstep 10 ")
  run(1 out err --dir "${WORK}/c" --steps 20 --dim 16 --resume)
  require("${err}" "^dml-checkpoint-demo: [^\n]*/c/rank-[0-3]\\.ckpt: member [0-3]: vector 0 has length 8 but the program's vector has length 16\n$")
  run(1 out err --dir "${WORK}/c" --steps 20 --seed 2 --resume)
  require("${err}" "/c/rank-[0-3]\\.ckpt: member [0-3]: written by a run with another --seed; this run has --seed 2\n$")
  run(1 out err --dir "${WORK}/c" --steps 10 --resume)
  require("${err}" "the checkpoint is at step 20, past --steps 10\n$")
  file(REMOVE "${WORK}/c/rank-2.ckpt")
  run(1 out err --dir "${WORK}/c" --steps 20 --resume)
  require("${err}" "member [0-3]: rank [0-3] resumes from step (0|20) but rank [0-3] from step (0|20) \\(a save was interrupted between ranks\\)")
else()
  message(FATAL_ERROR "MODE must be resume or refuse")
endif()
