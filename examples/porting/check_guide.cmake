# SPDX-License-Identifier: BSL-1.0
# docs/porting.md shows the diff between examples/porting/serial.cpp and
# parallel.cpp. This script generates it (diff -u) and checks that the guide
# holds exactly that text between its markers, or with -DUPDATE=ON writes it
# there:
#   cmake -DSOURCE_DIR=<repository> [-DUPDATE=ON] -P examples/porting/check_guide.cmake
set(guide "${SOURCE_DIR}/docs/porting.md")
execute_process(COMMAND diff -u --label examples/porting/serial.cpp --label examples/porting/parallel.cpp
                        examples/porting/serial.cpp examples/porting/parallel.cpp
                WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE diff ERROR_VARIABLE err)
if(NOT rc STREQUAL "1")  # diff exits 1 when the files differ, 0 when equal, 2 on trouble
  message(FATAL_ERROR "diff failed (exit ${rc}): ${err}")
endif()
set(begin "<!-- the diff, generated: cmake -DSOURCE_DIR=. -DUPDATE=ON -P examples/porting/check_guide.cmake -->\n```diff\n")
set(end "```\n<!-- end of the generated diff -->")
file(READ "${guide}" text)
string(FIND "${text}" "${begin}" at_begin)
string(FIND "${text}" "${end}" at_end)
if(at_begin EQUAL -1 OR at_end EQUAL -1 OR at_end LESS at_begin)
  message(FATAL_ERROR "${guide} has no generated diff between the markers")
endif()
string(LENGTH "${begin}" begin_length)
math(EXPR first "${at_begin} + ${begin_length}")
math(EXPR length "${at_end} - ${first}")
string(SUBSTRING "${text}" ${first} ${length} shown)
if(shown STREQUAL diff)
  message("docs/porting.md shows the current diff")
  return()
endif()
if(UPDATE)
  string(SUBSTRING "${text}" 0 ${first} head)
  string(SUBSTRING "${text}" ${at_end} -1 tail)
  file(WRITE "${guide}" "${head}${diff}${tail}")
  message("updated the diff in ${guide}")
  return()
endif()
message(FATAL_ERROR "docs/porting.md does not show the current diff of examples/porting/serial.cpp and "
                    "parallel.cpp; regenerate it: cmake -DSOURCE_DIR=. -DUPDATE=ON -P examples/porting/check_guide.cmake")
