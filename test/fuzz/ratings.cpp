// SPDX-License-Identifier: BSL-1.0
// Fuzz target: the rating-file reader of dml-mf and dml-smp-mf
// (examples/common/ratings.hpp), its dense id map and `load`. Every rating
// read must be finite, every dense id below the number of distinct ids, and
// an error must name a line that exists.
#include "../../examples/common/ratings.hpp"

#include "fuzz.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static dml_fuzz::scratch_file file;
  const std::string& path = file.hold(data, size);
  const std::size_t lines = dml_fuzz::lines_of(data, size);
  try {
    const auto ratings = mf_ratings::read(path);
    DML_FUZZ_CHECK(ratings.size() <= lines);  // at most one rating a line
    mf_ratings::dense_ids users, items;
    for (const auto& r : ratings) {
      DML_FUZZ_CHECK(std::isfinite(r.value));
      users.add(r.user);
      items.add(r.item);
    }
    users.finish();
    items.finish();
    DML_FUZZ_CHECK(users.size() <= ratings.size() && items.size() <= ratings.size());
    for (const auto& r : ratings) {
      DML_FUZZ_CHECK(users.contains(r.user) && users(r.user) < users.size());
      DML_FUZZ_CHECK(items.contains(r.item) && items(r.item) < items.size());
    }
    // What the trainers call: the same ratings, split into train and test.
    const auto set = mf_ratings::load(path, "", 7);
    DML_FUZZ_CHECK(set.users == users.size() && set.items == items.size());
    DML_FUZZ_CHECK(set.train.size() + set.test.size() == ratings.size());
    for (const auto* part : {&set.train, &set.test})
      for (const auto& r : *part) DML_FUZZ_CHECK(r.user < set.users && r.item < set.items);
  } catch (const dml::data_error& e) {
    DML_FUZZ_CHECK(e.line() >= 1 && e.line() <= lines);
    DML_FUZZ_CHECK(e.reason().size() < 400);  // tokens are cut, never copied whole
  }
  return 0;
}
