// SPDX-License-Identifier: BSL-1.0
// Uses the installed headers: a topology and its analysis, then a small use
// of the component that was asked for, through what its target carries
// (include directories, libraries).
#include <dml/dml.hpp>

#include <cstdio>

#if DML_CONSUMER_DATA
#include <zlib.h>
#include <dml/data.hpp>

#include <filesystem>
#include <string>
#elif DML_CONSUMER_MPI
#include <mpi.h>
#include <dml/comm/mpi_rma.hpp>
#elif DML_CONSUMER_VERBS
#include <infiniband/verbs.h>
#elif DML_CONSUMER_XTENSOR
#include <dml/vector/xtensor.hpp>
#endif

namespace {

// Returns a short note on what the component did, or nullptr on failure.
const char* use_component() {
#if DML_CONSUMER_DATA
  // A gzip IDX file written with zlib and read back by dml's loader (in the
  // working directory: the consumer's own build tree).
  const std::string path = "dml_consumer_data.idx.gz";
  const unsigned char bytes[] = {0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9};  // ubyte, 1 dimension of 3
  gzFile f = gzopen(path.c_str(), "wb");
  if (!f || gzwrite(f, bytes, sizeof bytes) != int(sizeof bytes) || gzclose(f) != Z_OK) return nullptr;
  const auto a = dml::data::read_idx(path);
  std::filesystem::remove(path);
  if (a.dims.size() != 1 || a.dims[0] != 3 || a.values.size() != 3 || a.values[2] != 9) return nullptr;
  return "read a gzip IDX file";
#elif DML_CONSUMER_MPI
  int initialized = 1;  // callable before MPI_Init: links MPI without starting it
  if (MPI_Initialized(&initialized) != MPI_SUCCESS || initialized) return nullptr;
  return "MPI linked";
#elif DML_CONSUMER_VERBS
  int n = -1;  // a machine without RDMA devices lists none, or fails to list
  if (ibv_device** list = ibv_get_device_list(&n)) ibv_free_device_list(list);
  static char note[48];
  std::snprintf(note, sizeof note, "ibverbs linked, %d device(s)", n < 0 ? 0 : n);
  return note;
#elif DML_CONSUMER_XTENSOR
  bool ok = false;
  dml::comm::inproc::run(1, [&](dml::comm::inproc::context& c) {
    auto v = dml::make_vector<float>(c, 3);
    auto view = v.xtensor();
    view(1) = 5.0f;  // writes through to the vector's buffer
    ok = v.span()[1] == 5.0f && view.size() == 3;
  });
  return ok ? "xtensor view" : nullptr;
#else
  return "core";
#endif
}

}  // namespace

int main() {
  const auto g = dml::topology::build(dml::topology::halton{}, 16);
  if (!dml::topology::is_strongly_connected(g) || g.size() != 16) return 1;
  if (DML_VERSION < 100) return 1;  // 0.1.0 or later
  const char* note = use_component();
  if (!note) {
    std::printf("consumer-%s: the component's check failed\n", DML_CONSUMER_NAME);
    return 1;
  }
  std::printf("consumer-%s: ok (dml %s, %zu edges, %s)\n", DML_CONSUMER_NAME, DML_VERSION_STRING,
              g.edge_count(), note);
  return 0;
}
