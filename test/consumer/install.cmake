# SPDX-License-Identifier: BSL-1.0
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BINARY_DIR}" --prefix "${PREFIX}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
if(NOT EXISTS "${PREFIX}/share/cmake/dml/dmlConfig.cmake" OR NOT EXISTS "${PREFIX}/include/dml/dml.hpp")
  message(FATAL_ERROR "install tree lacks dmlConfig.cmake or dml/dml.hpp")
endif()
