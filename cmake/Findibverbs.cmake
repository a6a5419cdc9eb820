# SPDX-License-Identifier: BSL-1.0
# Finds rdma-core's libibverbs and defines ibverbs::ibverbs.
# Sets ibverbs_FOUND, ibverbs_INCLUDE_DIR, ibverbs_LIBRARY.
find_path(ibverbs_INCLUDE_DIR NAMES infiniband/verbs.h)
find_library(ibverbs_LIBRARY NAMES ibverbs)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(ibverbs REQUIRED_VARS ibverbs_LIBRARY ibverbs_INCLUDE_DIR)
if(ibverbs_FOUND AND NOT TARGET ibverbs::ibverbs)
  add_library(ibverbs::ibverbs UNKNOWN IMPORTED)
  set_target_properties(ibverbs::ibverbs PROPERTIES IMPORTED_LOCATION "${ibverbs_LIBRARY}"
                                                    INTERFACE_INCLUDE_DIRECTORIES "${ibverbs_INCLUDE_DIR}")
endif()
mark_as_advanced(ibverbs_INCLUDE_DIR ibverbs_LIBRARY)
