# SPDX-License-Identifier: BSL-1.0
# Runs dml-lda and dml-smp-lda on the same corpus for ctest and checks that
# dml-smp-lda ends with a log-likelihood per token at most MARGIN below
# dml-lda's (both must exit 0 and print a 'final:' line).
#   cmake -DLDA=<a|b|c> -DSMP=<a|b|c> -DMARGIN=<plain decimal> -P check_against_lda.cmake
include("${CMAKE_CURRENT_LIST_DIR}/../common/to_nano.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/../common/run_piped.cmake")
foreach(which IN ITEMS LDA SMP)
  dml_run_piped("${${which}}")
  if(NOT out MATCHES "\nfinal: loglik=-([0-9.]+) ")
    message(FATAL_ERROR "no 'final: loglik=' line with a negative decimal")
  endif()
  set(text_${which} "-${CMAKE_MATCH_1}")
  to_nano("${CMAKE_MATCH_1}" minus_${which})  # -loglik, in 1e-9
endforeach()
to_nano("${MARGIN}" margin)
math(EXPR allowed "${minus_LDA} + ${margin}")
message("log-likelihood per token: dml-lda ${text_LDA}, dml-smp-lda ${text_SMP}; allowed down to -${allowed}e-9")
if(minus_SMP GREATER allowed)
  message(FATAL_ERROR "dml-smp-lda ends more than ${MARGIN} below dml-lda")
endif()
