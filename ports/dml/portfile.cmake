# SPDX-License-Identifier: BSL-1.0
# vcpkg port of dml, a header-only C++20 library: configure with the
# project's own CMake (tests, examples and benchmarks off), install headers,
# CMake package and dml.pc, and move the CMake package where vcpkg wants it.

# ---- filled in by each release -----------------------------------------------
# PLACEHOLDER: the GitHub repository dml is published from, and the SHA512 of
# the tarball of tag v${VERSION}. With SHA512 0 vcpkg stops and prints the
# hash of what it downloaded; check that tarball, then paste the hash here.
set(DML_GITHUB_REPO "OWNER/dml")  # PLACEHOLDER
set(DML_RELEASE_SHA512 0)         # PLACEHOLDER
# ------------------------------------------------------------------------------

set(VCPKG_BUILD_TYPE release)  # header-only: one configuration is enough

if("rdma" IN_LIST FEATURES AND NOT VCPKG_TARGET_IS_LINUX)
  message(FATAL_ERROR "dml[rdma] needs rdma-core's libibverbs, which exists on Linux only")
endif()

vcpkg_from_github(
  OUT_SOURCE_PATH SOURCE_PATH
  REPO "${DML_GITHUB_REPO}"
  REF "v${VERSION}"
  SHA512 "${DML_RELEASE_SHA512}"
  HEAD_REF main
)

# Feature -> component: the project provides a component only when it finds
# its dependencies. A feature that is off must not pick them up from the
# system either.
vcpkg_check_features(OUT_FEATURE_OPTIONS FEATURE_OPTIONS
  FEATURES
    mpi DML_WITH_MPI
    rdma DML_WITH_VERBS
  INVERTED_FEATURES
    data CMAKE_DISABLE_FIND_PACKAGE_ZLIB
    xtensor CMAKE_DISABLE_FIND_PACKAGE_xtensor
)

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    -DDML_BUILD_TESTS=OFF
    -DDML_BUILD_EXAMPLES=OFF
    -DDML_BUILD_BENCH=OFF
    ${FEATURE_OPTIONS}
)
vcpkg_cmake_install()

# The project installs its CMake package to share/cmake/dml
# (${CMAKE_INSTALL_DATADIR}/cmake/dml); vcpkg expects share/dml.
vcpkg_cmake_config_fixup(CONFIG_PATH share/cmake/dml)
vcpkg_fixup_pkgconfig()

# A feature that was asked for must have become a component; the project
# would otherwise leave it out with only a status message.
foreach(pair IN ITEMS "data:data" "mpi:mpi" "rdma:verbs" "xtensor:xtensor")
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 feature)
  list(GET pair 1 component)
  if(feature IN_LIST FEATURES AND NOT EXISTS "${CURRENT_PACKAGES_DIR}/share/${PORT}/dml-${component}-targets.cmake")
    message(FATAL_ERROR "dml[${feature}] was requested but the build did not provide dml::${component}; "
                        "see the configure log for the dependency it did not find")
  endif()
endforeach()

file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/share/cmake")
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
