# SPDX-License-Identifier: BSL-1.0
# Reads ports/dml without vcpkg (which cannot be installed where the tests
# run) and checks it against the project:
#   MODE=manifest  vcpkg.json parses (string(JSON)), names dml at the project's
#                  version, and has one feature per component that
#                  CMakeLists.txt declares with dml_component() (rdma for
#                  verbs), each with a description; the usage file names every
#                  component target.
#   MODE=portfile  portfile.cmake parses as CMake, makes the calls a header-only
#                  port needs (vcpkg_from_github, vcpkg_cmake_configure with
#                  tests/examples/benchmarks off, vcpkg_cmake_install,
#                  vcpkg_cmake_config_fixup at the directory the project
#                  installs its package to, copyright, usage), maps every
#                  feature, and sets only DML_* variables CMakeLists.txt has.
# No vcpkg function is run or imitated: the portfile is executed only up to
# its first vcpkg call, to prove that the whole file parses.
# Inputs: -DPORT_DIR=<ports/dml> -DSOURCE_DIR=<repository root> -DVERSION=<x.y.z>
#         -DWORK_DIR=<scratch directory> -DMODE=manifest|portfile
cmake_minimum_required(VERSION 3.23)
set(failures 0)
# check(<what> <if() condition...>): the condition names variables only; a
# regex or an empty string would not survive the macro's re-evaluation.
macro(check what)
  if(${ARGN})
    message("ok   ${what}")
  else()
    message("FAIL ${what}")
    math(EXPR failures "${failures} + 1")
  endif()
endmacro()

file(READ "${SOURCE_DIR}/CMakeLists.txt" cmakelists)
string(REGEX REPLACE "#[^\n]*" "" cmake_code "${cmakelists}")
string(REGEX MATCHALL "dml_component\\([a-z_]+" decls "${cmake_code}")
list(TRANSFORM decls REPLACE "dml_component\\(" "")
set(components ${decls})
list(SORT components)
check("CMakeLists.txt declares components with dml_component() (${components})" components)
# The vcpkg feature of each component: rdma names the verbs transport.
set(features ${components})
list(TRANSFORM features REPLACE "^verbs$" "rdma")
list(SORT features)

if(MODE STREQUAL "manifest")
  file(READ "${PORT_DIR}/vcpkg.json" json)
  string(JSON name ERROR_VARIABLE err GET "${json}" name)
  check("vcpkg.json is valid JSON with a name" NOT err)
  if(err)
    message("     ${err}")
  endif()
  string(JSON version ERROR_VARIABLE err GET "${json}" version)
  check("vcpkg.json: name dml, version ${VERSION} (found ${name} ${version})"
        name STREQUAL "dml" AND version STREQUAL VERSION)
  string(JSON license ERROR_VARIABLE err GET "${json}" license)
  check("vcpkg.json: license BSL-1.0 (found ${license})" license STREQUAL "BSL-1.0")

  set(deps "")
  string(JSON n ERROR_VARIABLE err LENGTH "${json}" dependencies)
  if(NOT err AND n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON type TYPE "${json}" dependencies ${i})
      if(type STREQUAL "OBJECT")
        string(JSON dep GET "${json}" dependencies ${i} name)
      else()
        string(JSON dep GET "${json}" dependencies ${i})
      endif()
      list(APPEND deps ${dep})
    endforeach()
  endif()
  foreach(dep IN ITEMS eigen3 vcpkg-cmake vcpkg-cmake-config)
    check("vcpkg.json depends on ${dep}" dep IN_LIST deps)
  endforeach()
  set(core_boost "")
  foreach(dep IN LISTS deps)
    if(dep MATCHES "^boost-")
      list(APPEND core_boost ${dep})
    endif()
  endforeach()
  check("the core depends on no Boost library (found: ${core_boost})" NOT core_boost)

  set(found "")
  string(JSON n ERROR_VARIABLE err LENGTH "${json}" features)
  if(NOT err AND n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON f MEMBER "${json}" features ${i})
      list(APPEND found ${f})
      string(JSON desc ERROR_VARIABLE err GET "${json}" features ${f} description)
      check("feature ${f} has a description" NOT err AND desc)
    endforeach()
  endif()
  list(SORT found)
  check("features match the components (want ${features}, found ${found})" found STREQUAL features)
  string(JSON dflt ERROR_VARIABLE err GET "${json}" default-features 0)
  check("default feature: data, like the Conan recipe's with_data (found ${dflt})" dflt STREQUAL "data")

  file(READ "${PORT_DIR}/usage" usage)
  foreach(c IN ITEMS dml ${components})
    string(FIND "${usage}" "dml::${c}" at)
    check("usage names dml::${c}" NOT at EQUAL -1)
  endforeach()
elseif(MODE STREQUAL "portfile")
  set(portfile "${PORT_DIR}/portfile.cmake")
  # Syntax: CMake parses a whole file before running any of it, so including
  # the portfile (under the policies of a current CMake, as vcpkg runs it)
  # must stop at its first vcpkg function, never at a parse error.
  file(WRITE "${WORK_DIR}/parse_portfile.cmake"
       "cmake_minimum_required(VERSION 3.23)\ninclude(\"${portfile}\")\n")
  execute_process(COMMAND "${CMAKE_COMMAND}" -P "${WORK_DIR}/parse_portfile.cmake" OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  string(FIND "${out}" "Unknown CMake command \"vcpkg_" stopped_at_vcpkg)
  string(FIND "${out}" "Parse error" parse_error)
  check("portfile.cmake parses as CMake and runs up to its first vcpkg function"
        NOT stopped_at_vcpkg EQUAL -1 AND parse_error EQUAL -1)

  file(READ "${portfile}" text)
  string(REGEX REPLACE "#[^\n]*" "" code "${text}")  # calls in comments do not count
  foreach(call IN ITEMS vcpkg_from_github vcpkg_check_features vcpkg_cmake_configure vcpkg_cmake_install
                        vcpkg_cmake_config_fixup vcpkg_fixup_pkgconfig vcpkg_install_copyright)
    string(REGEX MATCH "${call}\\(" hit "${code}")
    check("portfile calls ${call}()" hit)
  endforeach()
  foreach(opt IN ITEMS DML_BUILD_TESTS DML_BUILD_EXAMPLES DML_BUILD_BENCH)
    string(FIND "${code}" "-D${opt}=OFF" at)
    check("portfile configures with -D${opt}=OFF" NOT at EQUAL -1)
  endforeach()
  # The config directory must be the one CMakeLists.txt installs to.
  string(REGEX MATCH "set\\(DML_CMAKE_DIR \"\\\${CMAKE_INSTALL_DATADIR}/([^\"]+)\"\\)" _ "${cmakelists}")
  set(installed_at "share/${CMAKE_MATCH_1}")
  check("CMakeLists.txt installs its package to DATADIR/cmake/... (${installed_at} by default)" CMAKE_MATCH_1)
  string(FIND "${code}" "vcpkg_cmake_config_fixup(CONFIG_PATH ${installed_at})" at)
  check("vcpkg_cmake_config_fixup(CONFIG_PATH ${installed_at})" NOT at EQUAL -1)
  string(FIND "${code}" "/usage\" DESTINATION" at)
  check("portfile installs the usage file" NOT at EQUAL -1)
  foreach(f IN LISTS features)
    string(REGEX MATCH "\n +${f} +[A-Za-z_]+" hit "${code}")
    check("vcpkg_check_features maps feature ${f}" hit)
  endforeach()
  string(REGEX MATCHALL "DML_[A-Z0-9_]+" used "${code}")
  list(REMOVE_DUPLICATES used)
  list(FILTER used EXCLUDE REGEX "^DML_(GITHUB_REPO|RELEASE_SHA512)$")  # the portfile's own
  foreach(v IN LISTS used)
    string(FIND "${cmake_code}" "option(${v} " at)
    check("${v} is an option of CMakeLists.txt" NOT at EQUAL -1)
  endforeach()
else()
  message(FATAL_ERROR "MODE must be manifest or portfile")
endif()

if(failures GREATER 0)
  message(FATAL_ERROR "${failures} check(s) failed")
endif()
message("vcpkg port (${MODE}): all checks passed")
