// SPDX-License-Identifier: BSL-1.0
// Fuzz target: dml-pagerank's edge-list reader (examples/pagerank/edges.hpp).
// A graph read must have one edge per line at most, every id below its node
// count, which is the largest id + 1; an error must name a line that exists
// (or none) and quote at most a short piece of the input.
#include "../../examples/pagerank/edges.hpp"

#include "fuzz.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static dml_fuzz::scratch_file file;
  const std::string& path = file.hold(data, size);
  const std::size_t lines = dml_fuzz::lines_of(data, size);
  try {
    const pagerank::graph g = pagerank::read_edges(path, 1);
    DML_FUZZ_CHECK(g.edges() >= 1 && g.edges() <= lines);
    DML_FUZZ_CHECK(g.src.size() == g.dst.size());
    std::uint64_t largest = 0;
    for (std::size_t i = 0; i < g.edges(); ++i)
      largest = std::max<std::uint64_t>({largest, g.src[i], g.dst[i]});
    DML_FUZZ_CHECK(g.nodes == largest + 1 && g.nodes <= pagerank::max_nodes);
  } catch (const dml::data_error& e) {
    DML_FUZZ_CHECK(e.file() == path);
    DML_FUZZ_CHECK(e.line() <= lines);
    DML_FUZZ_CHECK(e.reason().size() < 400);  // tokens are cut, never copied whole
  }
  return 0;
}
