# SPDX-License-Identifier: BSL-1.0
# Runs two LDA trainer commands in order for ctest and checks that both
# succeed and print the same log-likelihoods: every 'loglik X' of the
# iteration lines and the 'final:' line's, equal as printed (5 decimals).
# Used for a corpus file against the generated corpus it was written from,
# and for dml-smp-lda at 1 rank against its serial sampler.
#   cmake -DFIRST=<a|b|c> -DSECOND=<a|b|c> [-DEXPECT=<regex on SECOND>] -P check_same_run.cmake
include("${CMAKE_CURRENT_LIST_DIR}/../common/run_piped.cmake")
foreach(which IN ITEMS FIRST SECOND)
  dml_run_piped("${${which}}")
  string(REGEX MATCHALL "loglik[ =]-?[0-9.]+" values "${out}")
  string(REGEX REPLACE "loglik[ =]" "" values "${values}")
  list(LENGTH values n)
  if(n LESS 3)
    message(FATAL_ERROR "fewer than 3 log-likelihoods printed")
  endif()
  set(values_${which} "${values}")
  set(out_${which} "${out}")
endforeach()
if(NOT values_FIRST STREQUAL values_SECOND)
  message(FATAL_ERROR "the log-likelihoods differ:\n  ${values_FIRST}\n  ${values_SECOND}")
endif()
if(EXPECT AND NOT out_SECOND MATCHES "${EXPECT}")
  message(FATAL_ERROR "the second run's output does not match '${EXPECT}'")
endif()
message("the same ${n} log-likelihoods")
