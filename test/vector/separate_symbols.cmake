# SPDX-License-Identifier: BSL-1.0
# ctest -P script: the object file of a user translation unit built in
# separate compilation mode (bench/compile/dml_inproc.cpp) must not define
# what <dml/src.hpp> compiles once (the vector core, its protocol, recovery,
# the in-process transport and its run(), graphs), and must still refer to
# it. With -DTRANSPORT=mpi_rma, the object of bench/compile/dml_vector.cpp
# and what <dml/src_mpi.hpp> compiles once (the vector core, its protocol
# and recovery over mpi_rma, and the MPI transport's own code).
# -DNM=<nm> -DOBJECT=<object file> [-DTRANSPORT=mpi_rma]
execute_process(COMMAND "${NM}" -C --defined-only "${OBJECT}" OUTPUT_VARIABLE defined RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${OBJECT}")
endif()
execute_process(COMMAND "${NM}" -C --undefined-only "${OBJECT}" OUTPUT_VARIABLE undefined)
set(core "vector_core<float, dml::v0::comm::inproc::context, dml::v0::dense>")
set(header "<dml/src.hpp>")
if(TRANSPORT STREQUAL "mpi_rma")
  set(core "vector_core<float, dml::v0::comm::mpi_rma, dml::v0::dense>")
  set(header "<dml/src_mpi.hpp>")
  set(compiled_once
      "detail::${core}::build("
      "detail::vector_protocol<dml::v0::detail::${core} >::combine_exact("
      "detail::${core}::~vector_core("
      "fault::recover<dml::v0::comm::mpi_rma>("
      "detail::settle_background<dml::v0::comm::mpi_rma>("
      "fault::detail::state_of<dml::v0::comm::mpi_rma>("
      "comm::mpi_rma::mpi_rma("
      "detail::mpi_impl::group::attach("
      "detail::mpi_impl::watchdog::watch(")
else()
set(compiled_once
    "detail::vector_core<float, dml::v0::comm::inproc::context, dml::v0::dense>::build("
    "detail::vector_protocol<dml::v0::detail::vector_core<float, dml::v0::comm::inproc::context, dml::v0::dense> >::combine_exact("
    "fault::recover<dml::v0::comm::inproc::context>("
    "comm::inproc::context::rendezvous("
    "topology::graph::init("
    "topology::graph dml::v0::topology::build<dml::v0::topology::halton>("
    "detail::vector_core<float, dml::v0::comm::inproc::context, dml::v0::dense>::~vector_core("
    "comm::inproc::detail::run_members("
    "detail::number_from_env("
    "detail::settle_background<dml::v0::comm::inproc::context>("
    "fault::detail::state_of<dml::v0::comm::inproc::context>(")
endif()
set(bad "")
foreach(symbol IN LISTS compiled_once)
  string(FIND "${defined}" "${symbol}" at)
  if(NOT at EQUAL -1)
    string(APPEND bad "\n  defined here: ${symbol}")
  endif()
endforeach()
string(FIND "${undefined}" "${core}::build(" used)
if(used EQUAL -1)
  string(APPEND bad "\n  the probe does not refer to vector_core::build at all (is it still making a vector?)")
endif()
if(bad)
  message(FATAL_ERROR "separate compilation: ${OBJECT} compiles what ${header} should compile once:${bad}")
endif()
message(STATUS "separate compilation: the probe's object refers to the core and defines none of it")
