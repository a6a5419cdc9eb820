# SPDX-License-Identifier: BSL-1.0
# Runs dml-checkpoint-demo for ctest in fresh directories under WORK.
#   cmake -DTOOL=<exe> -DMODE=resume|refuse|interrupted|killed -DWORK=<dir> [-DSTEPS=<n>] -P check_resume.cmake
# resume:      a run stopped after step 30 and resumed prints, from step 40
#              on, exactly what an uninterrupted run prints.
# refuse:      resuming with another --dim or --seed, past --steps, with a
#              damaged file, or with no step that every rank holds, fails
#              with a message saying so; so does a run without --resume in
#              a directory with checkpoints.
# interrupted: files left by a save interrupted between ranks (some ranks at
#              step 40, the others at 30), built from real runs: the resume
#              starts from step 30, says why, and then prints what an
#              uninterrupted run prints; the same after a resume from step
#              30 whose save of step 40 was cut off on one rank; and a first
#              save cut off after rank 0's file: the resume starts from step
#              0, saying why.
# killed:      the demo killed (SIGKILL) at pseudo-random moments and resumed
#              until it finishes ends as an uninterrupted run does.
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

# require(<text> <regex parts...>): the parts, joined, must match <text>.
function(require text)
  set(regex "")
  math(EXPR last "${ARGC} - 1")
  foreach(i RANGE 1 ${last})
    string(APPEND regex "${ARGV${i}}")  # ARGV<i>, not ARGN: keeps a ";" in a part
  endforeach()
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "output does not match: ${regex}")
  endif()
endfunction()

# same_from(<marker> <uninterrupted> <resumed>): from its line that starts
# with <marker> on, the resumed run printed exactly what the uninterrupted
# run printed. Sets tail to those lines.
function(same_from marker whole resumed)
  foreach(run IN ITEMS whole resumed)
    string(FIND "\n${${run}}" "\n${marker}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "no line starting '${marker}' in the ${run} run's output:\n${${run}}")
    endif()
    string(SUBSTRING "${${run}}" ${at} -1 ${run}_tail)
  endforeach()
  if(NOT resumed_tail STREQUAL whole_tail)
    message(FATAL_ERROR "the resumed run differs from the uninterrupted one:\n${resumed_tail}\nversus\n${whole_tail}")
  endif()
  set(tail "${whole_tail}" PARENT_SCOPE)
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
  same_from("step 40 " "${whole}" "${second}")
  require("${tail}" "^step 40 mse [0-9.]+, saved\nstep 50 mse [0-9.]+, saved\nstep 60 mse [0-9.]+, saved\nfinal: step 60 mse [0-9.]+\n$")
  # A resume after the last step has nothing left to do.
  run(0 done err --dir "${WORK}/parts" --steps 60 --resume)
  require("${done}" "resumed from [^\n]* at step 60 \\(epoch 1\\)[^\n]*\nfinal: step 60 mse [0-9.]+\n$")
elseif(MODE STREQUAL "refuse")
  run(0 fresh err --dir "${WORK}/c" --steps 20 --resume)
  require("${fresh}" "\nno checkpoint in [^\n]*/c; starting from step 0\nstep 10 ")
  # A run without --resume in a directory with checkpoints stops before its
  # first save: it would push the old files into .prev, and a later --resume
  # would continue the old run. The files stay as they were (the resumes
  # below read them).
  # contents(<out>): every file of the directory with its SHA-256.
  function(contents out_var)
    file(GLOB names "${WORK}/c/*")
    set(list "")
    foreach(name IN LISTS names)
      file(SHA256 "${name}" hash)
      list(APPEND list "${name}=${hash}")
    endforeach()
    set(${out_var} "${list}" PARENT_SCOPE)
  endfunction()
  contents(before)
  run(1 out err --dir "${WORK}/c" --steps 20)
  require("${err}" "^dml-checkpoint-demo: [^\n]*/c holds the checkpoints of an earlier run \\(rank-0\\.ckpt, "
                   "rank-0\\.ckpt\\.prev, [^\n]*, rank-3\\.ckpt\\.prev\\); continue it with --resume, or remove "
                   "them to start over\n$")
  contents(after)
  if(NOT before STREQUAL after)
    message(FATAL_ERROR "the refused run changed the directory:\n${after}\nversus\n${before}")
  endif()
  run(1 out err --dir "${WORK}/c" --steps 20 --dim 16 --resume)
  require("${err}" "^dml-checkpoint-demo: [^\n]*/c/rank-[0-3]\\.ckpt: member [0-3]: vector 0 has length 8 but the program's vector has length 16\n$")
  run(1 out err --dir "${WORK}/c" --steps 20 --seed 2 --resume)
  require("${err}" "/c/rank-[0-3]\\.ckpt: member [0-3]: written by a run with another --seed; this run has --seed 2\n$")
  run(1 out err --dir "${WORK}/c" --steps 10 --resume)
  require("${err}" "the checkpoint is at step 20, past --steps 10\n$")
  # A file that exists but fails its checks stops the resume and is named,
  # even the older generation.
  file(RENAME "${WORK}/c/rank-1.ckpt.prev" "${WORK}/c/saved")
  file(WRITE "${WORK}/c/rank-1.ckpt.prev" "damaged")
  run(1 out err --dir "${WORK}/c" --steps 20 --resume)
  require("${err}" "/c/rank-1\\.ckpt\\.prev: member 1: not a dml checkpoint \\(bad magic number\\)\n$")
  file(RENAME "${WORK}/c/saved" "${WORK}/c/rank-1.ckpt.prev")
  # Without both of one rank's files, no step is held by every rank.
  file(REMOVE "${WORK}/c/rank-2.ckpt" "${WORK}/c/rank-2.ckpt.prev")
  run(1 out err --dir "${WORK}/c" --steps 20 --resume)
  require("${err}" "member [0-3]: no step is saved by every rank \\(steps held: rank 0: 20, 10; rank 1: 20, 10; "
                   "rank 2: none; rank 3: 20, 10\\); remove the directory to start over\n$")
elseif(MODE STREQUAL "interrupted")
  run(0 whole err --dir "${WORK}/whole" --steps 60)
  string(REGEX MATCH "step 30 mse ([0-9.]+)" _ "${whole}")
  set(mse30 "${CMAKE_MATCH_1}")
  # Every rank at step 30 (and 20) in at30, at step 40 (and 30) in at40.
  run(0 out err --dir "${WORK}/at30" --steps 60 --stop-after 30)
  file(COPY "${WORK}/at30/" DESTINATION "${WORK}/at40")
  run(0 out err --dir "${WORK}/at40" --steps 60 --resume --stop-after 40)
  require("${out}" "\nstep 40 mse [0-9.]+, saved\nstopped after step 40\n$")
  # A save of step 40 interrupted after rank 0's file (ranks 1 to 3 still at
  # 30), and one interrupted before it (rank 0 still at 30).
  foreach(case IN ITEMS ahead behind)
    set(dir "${WORK}/${case}")
    file(COPY "${WORK}/at40/" DESTINATION "${dir}")
    if(case STREQUAL "ahead")
      set(lagging 1 2 3)
      set(who "ranks 1, 2 and 3 have")
    else()
      set(lagging 0)
      set(who "rank 0 has")
    endif()
    foreach(r IN LISTS lagging)
      foreach(name IN ITEMS "rank-${r}.ckpt" "rank-${r}.ckpt.prev")
        file(COPY_FILE "${WORK}/at30/${name}" "${dir}/${name}")
      endforeach()
    endforeach()
    run(0 resumed err --dir "${dir}" --steps 60 --resume)
    require("${resumed}" "^4 ranks, [^\n]*\n${who} no checkpoint of step 40 \\(a save was interrupted, or a file is gone\\); "
                         "resuming from step 30, the newest step every rank saved\n"
                         "resumed from [^\n]*/${case} at step 30 \\(epoch 0\\), mse ${mse30}\nstep 40 ")
    same_from("step 40 " "${whole}" "${resumed}")
  endforeach()
  # A resume from step 30 beside rank 0's step 40 (as in "ahead"), stopped
  # after its own save of step 40; then that save cut off on rank 1 between
  # its two renames (rank 1 holds step 30 in both files). Every rank still
  # holds step 30: the first resume made rank 0's step 30 current again
  # before it saved (a kill soon after such a resume once left rank 0 with
  # only step 40 and another rank with only step 30).
  set(dir "${WORK}/again")
  file(COPY "${WORK}/at40/" DESTINATION "${dir}")
  foreach(r IN ITEMS 1 2 3)
    foreach(name IN ITEMS "rank-${r}.ckpt" "rank-${r}.ckpt.prev")
      file(COPY_FILE "${WORK}/at30/${name}" "${dir}/${name}")
    endforeach()
  endforeach()
  run(0 out err --dir "${dir}" --steps 60 --resume --stop-after 40)
  require("${out}" "; resuming from step 30, the newest step every rank saved\n[^\n]*\nstep 40 mse [0-9.]+, saved\n"
                   "stopped after step 40\n$")
  file(COPY_FILE "${dir}/rank-1.ckpt.prev" "${dir}/rank-1.ckpt")
  run(0 resumed err --dir "${dir}" --steps 60 --resume)
  require("${resumed}" "^4 ranks, [^\n]*\nrank 1 has no checkpoint of step 40 \\(a save was interrupted, or a file is "
                       "gone\\); resuming from step 30, the newest step every rank saved\n"
                       "resumed from [^\n]*/again at step 30 \\(epoch 0\\), mse ${mse30}\nstep 40 ")
  same_from("step 40 " "${whole}" "${resumed}")
  # The first save cut off after rank 0's file: no step but the start is
  # held by every rank (a kill at the wrong moment once left such a
  # directory refused for good).
  set(dir "${WORK}/first")
  run(0 out err --dir "${dir}" --steps 60 --stop-after 10)
  file(REMOVE "${dir}/rank-1.ckpt" "${dir}/rank-2.ckpt" "${dir}/rank-3.ckpt")
  run(0 resumed err --dir "${dir}" --steps 60 --resume)
  require("${resumed}" "^4 ranks, [^\n]*\nranks 1, 2 and 3 have no checkpoint of step 10 \\(a save was interrupted, or a file "
                       "is gone\\); resuming from step 0, the start, as no save was finished by every rank\n"
                       "resumed from [^\n]*/first at step 0 \\(epoch 0\\), mse [0-9.]+\nstep 10 ")
  same_from("step 10 " "${whole}" "${resumed}")
elseif(MODE STREQUAL "killed")
  # Saving every step, most moments are inside some rank's save, and many
  # fall between two ranks' saves of the same step. STEPS: how long the run
  # is, and so how many kills it takes (1500 unless given).
  if(NOT DEFINED STEPS)
    set(STEPS 1500)
  endif()
  set(args --steps ${STEPS} --every 1)
  run(0 whole err --dir "${WORK}/whole" ${args})
  set(dir "${WORK}/killed")
  set(seed 20261123)  # the moments of the kills; where they land depends on the machine's speed
  set(kills 0)
  set(fallbacks 0)
  set(finished "")
  foreach(attempt RANGE 1 100)
    math(EXPR seed "(${seed} * 1103515245 + 12345) % 2147483648")
    math(EXPR ms "100 + (${seed} / 65536) % 250")  # 0.1 to 0.35 s: three digits
    execute_process(COMMAND "${TOOL}" --dir "${dir}" ${args} --resume TIMEOUT 0.${ms}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(out MATCHES "no checkpoint of step [0-9]+ ")
      math(EXPR fallbacks "${fallbacks} + 1")
    endif()
    if(rc STREQUAL "0")
      set(finished "${out}")
      break()
    elseif(rc MATCHES "timeout")
      math(EXPR kills "${kills} + 1")
    else()
      message(FATAL_ERROR "run ${attempt} (to be killed after 0.${ms} s) failed with ${rc}:\n${err}")
    endif()
  endforeach()
  if(finished STREQUAL "")
    run(0 finished err --dir "${dir}" ${args} --resume)
  endif()
  message("${kills} runs killed, ${fallbacks} of the resumes fell back to an older step")
  # The last run's lines from its first step on are the uninterrupted run's.
  if(NOT finished MATCHES "resumed from [^\n]* at step ([0-9]+) ")
    message(FATAL_ERROR "the last run did not resume:\n${finished}")
  endif()
  set(step "${CMAKE_MATCH_1}")
  if(step EQUAL STEPS)
    set(marker "final: ")
  else()
    math(EXPR next "${step} + 1")
    set(marker "step ${next} mse ")
  endif()
  same_from("${marker}" "${whole}" "${finished}")
  require("${tail}" "final: step ${STEPS} mse [0-9.]+\n$")
else()
  message(FATAL_ERROR "MODE must be resume, refuse, interrupted or killed")
endif()
