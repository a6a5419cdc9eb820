# SPDX-License-Identifier: BSL-1.0
# Configures, builds and runs a consumer project (SOURCE; by default
# test/consumer/project) against the installed dml, then runs EXECUTABLE
# (default: consumer) from its build tree.
file(REMOVE_RECURSE "${BUILD}")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${BUILD}" -G "${GENERATOR}"
                        "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_PREFIX_PATH=${PREFIX}" "-DDML_COMPONENT=${COMPONENT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer failed")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BUILD}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer failed")
endif()
if(NOT EXECUTABLE)
  set(EXECUTABLE consumer)
endif()
execute_process(COMMAND "${BUILD}/${EXECUTABLE}" WORKING_DIRECTORY "${BUILD}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "running the consumer failed")
endif()
