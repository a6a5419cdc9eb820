# SPDX-License-Identifier: BSL-1.0
# Compiles and runs pkgconfig/main.cpp against the installed dml with only
# the flags `pkg-config --cflags --libs dml` prints, the module found through
# PKG_CONFIG_PATH=<prefix>/share/pkgconfig.
set(ENV{PKG_CONFIG_PATH} "${PREFIX}/share/pkgconfig")

function(pc out)
  execute_process(COMMAND "${PKG_CONFIG}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config ${ARGN} failed (${rc}): ${o}${e}")
  endif()
  set(${out} "${o}" PARENT_SCOPE)
endfunction()

pc(unused --validate dml)
pc(version --modversion dml)
if(NOT version STREQUAL VERSION)
  message(FATAL_ERROR "pkg-config says dml ${version}, the project is ${VERSION}")
endif()
pc(cflags --cflags dml)
pc(libs --libs dml)
message("cflags: ${cflags}\nlibs: ${libs}")
if(NOT cflags MATCHES "(^| )-std=c\\+\\+20( |$)")
  message(FATAL_ERROR "Cflags lack -std=c++20")
endif()
if(NOT cflags MATCHES "-I([^ ]*/include)( |$)")
  message(FATAL_ERROR "Cflags name no include directory")
endif()
get_filename_component(inc "${CMAKE_MATCH_1}" REALPATH)
get_filename_component(want "${PREFIX}/include" REALPATH)
if(NOT inc STREQUAL want OR NOT EXISTS "${inc}/dml/dml.hpp")
  message(FATAL_ERROR "Cflags point at '${inc}', not at the installed headers in '${want}'")
endif()

separate_arguments(cflags UNIX_COMMAND "${cflags}")
separate_arguments(libs UNIX_COMMAND "${libs}")
file(REMOVE_RECURSE "${BUILD}")
file(MAKE_DIRECTORY "${BUILD}")
execute_process(COMMAND "${CXX}" ${cflags} -Wall -Wextra -Wpedantic -Werror "${SOURCE}" -o "${BUILD}/pc_consumer" ${libs}
                WORKING_DIRECTORY "${BUILD}" RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling with the pkg-config flags failed:\n${o}${e}")
endif()
execute_process(COMMAND "${BUILD}/pc_consumer" RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
message("${o}${e}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "running the pkg-config consumer failed (${rc})")
endif()
