// SPDX-License-Identifier: BSL-1.0
/// @file
/// Per-context storage for the layers above a transport. A transport context
/// owns one `attributes` and hands it out; it never looks inside. The fault
/// tolerance layer keeps a context's failure policy, view history and
/// subscribers there (dml/fault/membership.hpp), as MPI programs cache state
/// on a communicator with MPI_Comm_set_attr. That keeps the dependencies
/// pointing down: transports know nothing of what is stored.
#pragma once

#include <dml/fwd.hpp>

#include <memory>
#include <utility>
#include <vector>

DML_BEGIN_NAMESPACE
namespace comm {

/// A small map from a type to one object of that type, created on first use
/// and destroyed with the context.
class attributes {
 public:
  attributes() = default;
  attributes(const attributes&) = delete;
  attributes& operator=(const attributes&) = delete;

  /// The stored T, made by `make()` (which returns a `std::shared_ptr<T>`)
  /// on first use. Shared: a holder may keep it past the context.
  template <class T, class Make>
  std::shared_ptr<T> get_or_create(Make&& make) {
    if (auto t = find<T>()) return t;
    std::shared_ptr<T> made = std::forward<Make>(make)();
    entries_.push_back({&key<T>, made});
    return made;
  }
  /// The stored T, or nullptr when none was made yet.
  template <class T>
  [[nodiscard]] std::shared_ptr<T> find() const noexcept {
    for (const auto& e : entries_)
      if (e.key == &key<T>) return std::static_pointer_cast<T>(e.value);
    return nullptr;
  }

 private:
  // One address per type, the same in every translation unit.
  template <class T>
  static constexpr char key = 0;

  struct entry {
    const void* key;
    std::shared_ptr<void> value;
  };
  std::vector<entry> entries_;
};

}  // namespace comm
DML_END_NAMESPACE
