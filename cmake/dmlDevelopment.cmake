# SPDX-License-Identifier: BSL-1.0
# Settings and helpers for dml's own tests, examples and benchmarks. Not
# installed: consumers of dml never see these flags.

# Warnings and sanitizers for everything the project builds itself.
add_library(dml_dev INTERFACE)
target_link_libraries(dml_dev INTERFACE dml::dml)
target_compile_options(dml_dev INTERFACE -Wall -Wextra -Wpedantic)
# GCC 12 reports impossible overlaps in libstdc++'s own string concatenation
# at -O2 (GCC bug 105329); the warning is about the compiler, not our code.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(dml_dev INTERFACE -Wno-restrict)
endif()
if(DML_WERROR)
  target_compile_options(dml_dev INTERFACE -Werror)
endif()
if(DML_SANITIZE)
  target_compile_options(dml_dev INTERFACE -fsanitize=${DML_SANITIZE} -fno-omit-frame-pointer
                                           -fno-sanitize-recover=all)
  target_link_options(dml_dev INTERFACE -fsanitize=${DML_SANITIZE})
  # clang: UBSan leaves Eigen's kernels alone (cmake/ubsan-ignorelist.txt
  # says why); GCC has no such list and checks them.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND DML_SANITIZE MATCHES "undefined")
    target_compile_options(dml_dev INTERFACE "-fsanitize-ignorelist=${PROJECT_SOURCE_DIR}/cmake/ubsan-ignorelist.txt")
  endif()
  # For the few test sections that only a plain build can afford (a search
  # that takes 10 s instrumented at -O0); the plain run keeps them.
  target_compile_definitions(dml_dev INTERFACE DML_TEST_SANITIZED=1)
endif()

# Dataset installed by Debian's dataset-fashion-mnist; trainers default to it.
set(DML_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist" CACHE PATH "Fashion-MNIST IDX files")

# dml_test_unity(<target>): with DML_TEST_UNITY, a test executable's sources
# are compiled a few at a time as one translation unit. Test files of one
# executable instantiate the same vectors, tables and transports; compiled
# together they instantiate them once (GCC 12, -O1: four of the vector law
# files, 32 s of CPU one by one, 17.5 s as one). A source that must stay
# alone (it checks what a header pulls in) sets SKIP_UNITY_BUILD_INCLUSION.
# Helpers of two test files that would collide (the same name in each
# file's anonymous namespace) are kept apart by wrapping one file in a
# namespace named after it (test/fault/timeout.cpp); a collision is a
# compile error, never a silent mix-up. Measured on the plain build: the
# tests' 92 translation units took 595 s of CPU, 37 batches take 384 s.
# Separate compilation (docs/getting-started.md#separate-compilation) for the
# Catch2 test executables: what <dml/src.hpp> compiles (the vector core for
# float and double over inproc, the in-process transport, graphs, recovery)
# is compiled once instead of in each of their translation units (one
# unity translation unit of test/fault: 19.2 s at -O1 header-only, 16.6 s
# separate). The examples, the header check, the consumers and the
# benchmarks stay header-only, so both modes are built and run.
option(DML_TEST_SEPARATE_COMPILATION "Build dml's Catch2 tests in separate compilation mode" ON)
# dml_link_separate(<target>): builds <target> in separate compilation mode,
# linked to the one <dml/src.hpp> of dml's own build (dml_src_once, compiled
# with the flags of the directory that first asks for it).
function(dml_link_separate target)
  if(NOT TARGET dml_src_once)
    add_library(dml_src_once STATIC "${PROJECT_SOURCE_DIR}/test/support/dml_src.cpp")
    target_link_libraries(dml_src_once PUBLIC dml_dev)
    target_compile_definitions(dml_src_once PUBLIC DML_SEPARATE_COMPILATION)
  endif()
  target_link_libraries(${target} PRIVATE dml_src_once)
endfunction()

option(DML_TEST_UNITY "Compile each test executable's sources in batches (faster builds)" ON)
set(DML_TEST_UNITY_BATCH 4 CACHE STRING "Test sources per translation unit with DML_TEST_UNITY")
function(dml_test_unity target)
  if(DML_TEST_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${DML_TEST_UNITY_BATCH})
  endif()
endfunction()

# dml_add_catch_test(<name> SOURCES <files...> [LIBRARIES <targets...>])
# One executable per test area; each Catch2 test case becomes a ctest test
# named "<name>: <case>".
function(dml_add_catch_test name)
  cmake_parse_arguments(arg "" "" "SOURCES;LIBRARIES;LABELS" ${ARGN})
  if(NOT TARGET dml_catch_main)
    find_package(Catch2 REQUIRED)
    if(TARGET Catch2::Catch2WithMain)  # Catch2 v3
      add_library(dml_catch_main INTERFACE)
      target_link_libraries(dml_catch_main INTERFACE Catch2::Catch2WithMain)
    else()  # Catch2 v2: main() compiled once
      add_library(dml_catch_main STATIC "${PROJECT_SOURCE_DIR}/test/support/main.cpp")
      target_link_libraries(dml_catch_main PUBLIC Catch2::Catch2 dml_dev)
    endif()
    target_include_directories(dml_catch_main INTERFACE "${PROJECT_SOURCE_DIR}/test")
    include(Catch)
  endif()
  add_executable(test_${name} ${arg_SOURCES})
  target_link_libraries(test_${name} PRIVATE dml_dev dml_catch_main ${arg_LIBRARIES})
  if(DML_TEST_SEPARATE_COMPILATION)
    dml_link_separate(test_${name})
  endif()
  dml_test_unity(test_${name})
  if(DML_TEST_PCH)
    # Every test source includes these two; parsing them once instead of once
    # per source saves about 2 s of compile time per source. The header check
    # (dml_add_header_check) and the examples are built without it, so a
    # library header that misses an include still fails.
    # Test executables built with the same flags share one precompiled header
    # (a precompiled header costs about 5 s of CPU to build, once per test
    # executable otherwise). Flags differ by directory (the tests' and the
    # examples' optimization levels) and by the extra libraries linked, and
    # clang refuses a precompiled header built with other definitions, so the
    # key is both.
    get_directory_property(dir_options COMPILE_OPTIONS)
    string(MD5 pch_key "${dir_options}|${arg_LIBRARIES}")
    get_property(pch_owner GLOBAL PROPERTY "dml_test_pch_${pch_key}")
    if(pch_owner)
      target_precompile_headers(test_${name} REUSE_FROM ${pch_owner})
    else()
      target_precompile_headers(test_${name} PRIVATE <dml/dml.hpp> "${PROJECT_SOURCE_DIR}/test/support/catch.hpp")
      set_property(GLOBAL PROPERTY "dml_test_pch_${pch_key}" test_${name})
    endif()
    # GCC 12 inlines differently behind a precompiled header and then reports
    # impossible out-of-bounds copies inside std::string's move constructor
    # (the bug family of the -Wno-restrict above).
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
       AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
      target_compile_options(test_${name} PRIVATE -Wno-array-bounds -Wno-stringop-overflow
                             -Wno-stringop-overread)
    endif()
  endif()
  catch_discover_tests(test_${name} TEST_PREFIX "${name}: " PROPERTIES LABELS "${name};${arg_LABELS}"
                       DISCOVERY_TIMEOUT 60)
endfunction()

# _dml_compile_fail_pch(<target> <out-var>): the precompiled <dml/dml.hpp>
# of the compile-fail tests, made once (with the include directories and
# definitions of <target>, which links dml::dml alone or with more); sets
# <out-var> to the header a test passes to -include.
function(_dml_compile_fail_pch target out)
  set(dir "${PROJECT_BINARY_DIR}/compile_fail_pch")
  set(header "${dir}/dml_compile_fail.hpp")
  set(${out} "${header}" PARENT_SCOPE)
  if(TARGET dml_compile_fail_pch)
    return()
  endif()
  file(CONFIGURE OUTPUT "${header}" CONTENT "#include <dml/dml.hpp>\n")  # rewritten only when it changes
  set(includes "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
  set(defines "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
  add_custom_command(OUTPUT "${header}.gch"
                     COMMAND ${CMAKE_CXX_COMPILER} ${CMAKE_CXX20_EXTENSION_COMPILE_OPTION}
                             "$<$<BOOL:${includes}>:-I$<JOIN:${includes},;-I>>"
                             "$<$<BOOL:${defines}>:-D$<JOIN:${defines},;-D>>"
                             -x c++-header "${header}" -o "${header}.gch" -MD -MF "${header}.gch.d" -MT "${header}.gch"
                     DEPENDS "${header}" DEPFILE "${header}.gch.d" COMMAND_EXPAND_LISTS
                     COMMENT "Precompiling <dml/dml.hpp> for the compile-fail tests")
  add_custom_target(dml_compile_fail_pch ALL DEPENDS "${header}.gch")
endfunction()

# dml_add_compile_fail_test(<name> SOURCE <file> REGEX <regex> [LIBRARIES ...])
# The source must NOT compile, and the compiler's message must match REGEX:
# this is how the library's static_assert diagnostics are proven.
# Tests labelled build_only check compilation alone; sanitizer runs skip them.
# The test runs the compiler itself (-fsyntax-only; a static_assert fires
# in the front end) with the include directories and definitions of the
# OBJECT target compile_fail_<name>, which stays for IDEs and by-hand
# builds: `cmake --build` of the target took 3.2 s a test, 1.4 s of it
# make and CMake's dependency scanning (32 tests, 45 s of the plain ctest).
# With GCC outside sanitizer runs (which skip these tests) every test also
# reads <dml/dml.hpp> from one precompiled header (dml_compile_fail_pch):
# 1.5 s a test instead of 2.8 s, for 7.4 s once, and the same diagnostics
# for every source (compared when it was made). A header GCC cannot use
# (-Winvalid-pch says why) is read as text: slower, never stale, since
# the precompiled header depends on every header it read.
function(dml_add_compile_fail_test name)
  cmake_parse_arguments(arg "" "SOURCE;REGEX" "LIBRARIES" ${ARGN})
  get_filename_component(source "${arg_SOURCE}" ABSOLUTE)
  set(t compile_fail_${name})
  add_library(${t} OBJECT EXCLUDE_FROM_ALL ${source})
  target_link_libraries(${t} PRIVATE dml::dml ${arg_LIBRARIES})
  set(pch_flags "")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT DML_SANITIZE)
    _dml_compile_fail_pch(${t} header)
    set(pch_flags -include "${header}" -Winvalid-pch)
  endif()
  # The compiler's own directories (/usr/include, where Debian's Boost
  # is) stay out of -I: given again they would change the order in which
  # libstdc++'s #include_next finds the C headers.
  set(implicit "")
  foreach(dir IN LISTS CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
    string(REGEX REPLACE "([][+.*()^$?|\\])" "\\\\\\1" dir "${dir}")
    list(APPEND implicit "^${dir}$")
  endforeach()
  list(JOIN implicit "|" implicit)
  set(includes "$<TARGET_PROPERTY:${t},INCLUDE_DIRECTORIES>")
  if(implicit)
    set(includes "$<FILTER:${includes},EXCLUDE,${implicit}>")
  endif()
  set(defines "$<TARGET_PROPERTY:${t},COMPILE_DEFINITIONS>")
  add_test(NAME "compile_fail: ${name}"
           COMMAND ${CMAKE_CXX_COMPILER} ${CMAKE_CXX20_EXTENSION_COMPILE_OPTION} -fsyntax-only
                   "$<$<BOOL:${includes}>:-I$<JOIN:${includes},;-I>>" "$<$<BOOL:${defines}>:-D$<JOIN:${defines},;-D>>"
                   ${pch_flags} "${source}"
           COMMAND_EXPAND_LISTS)
  set_tests_properties("compile_fail: ${name}" PROPERTIES PASS_REGULAR_EXPRESSION "${arg_REGEX}"
                                                          LABELS "compile_fail;build_only")
endfunction()

# dml_add_header_check(): one translation unit per public header, each
# including only that header, built by a ctest test. Headers of a backend
# are checked only when that backend's component exists.
function(dml_add_header_check)
  set(dir "${PROJECT_BINARY_DIR}/header_check")
  set(sources "")
  set(libs dml::dml)
  foreach(c IN LISTS DML_AVAILABLE_COMPONENTS)
    list(APPEND libs dml::${c})
  endforeach()
  foreach(h IN LISTS DML_HEADERS)
    file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}/include" "${h}")
    set(needs "")
    if(rel STREQUAL "dml/src.hpp" OR rel STREQUAL "dml/src_mpi.hpp")  # need DML_SEPARATE_COMPILATION
      continue()
    elseif(rel MATCHES "^dml/comm/(mpi|mpi_rma|bootstrap)\\.hpp$|^dml/comm/mpi/")
      set(needs mpi)
    elseif(rel MATCHES "^dml/comm/verbs")
      set(needs verbs)
    elseif(rel MATCHES "^dml/data")
      set(needs data)
    elseif(rel MATCHES "xtensor")
      set(needs xtensor)
    endif()
    if(needs AND NOT needs IN_LIST DML_AVAILABLE_COMPONENTS)
      continue()
    endif()
    string(MAKE_C_IDENTIFIER "${rel}" id)
    set(src "${dir}/${id}.cpp")
    file(CONFIGURE OUTPUT "${src}" CONTENT "#include <${rel}>\n#include <${rel}> // twice: include guard works\n")
    list(APPEND sources "${src}")
  endforeach()
  # Part of the plain build, where its 125 small translation units fill both
  # cores alongside the rest (built serially by its test it took 86 s of one
  # ctest slot); the test then only confirms it is up to date. Sanitizer
  # builds skip build_only tests, so there it is built only on request.
  set(exclude "")
  if(DML_SANITIZE)
    set(exclude EXCLUDE_FROM_ALL)
  endif()
  add_library(dml_header_check OBJECT ${exclude} ${sources})
  target_link_libraries(dml_header_check PRIVATE dml_dev ${libs})
  add_test(NAME "header_check: every public header compiles alone"
           COMMAND ${CMAKE_COMMAND} --build "${PROJECT_BINARY_DIR}" --target dml_header_check)
  set_tests_properties("header_check: every public header compiles alone" PROPERTIES LABELS build_only)
endfunction()
