// SPDX-License-Identifier: BSL-1.0
// dml-verbs-probe [-- <command> <args>...]: the launcher of the verbs tests
// that need an RDMA device. Without an ACTIVE port on any device it prints
// why and exits 77, which ctest reports as a skipped test (SKIP_RETURN_CODE);
// with one it runs the command in its place (or exits 0 when none is given).
#include <dml/comm/verbs/device.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  const auto listing = dml::comm::verbs::list_devices();
  if (!listing.any_active_port()) {
    std::printf("dml-verbs-probe: skipped: %s\n", listing.why_unusable().c_str());
    std::fflush(stdout);
    return 77;
  }
  int first = 1;
  if (first < argc && std::strcmp(argv[first], "--") == 0) ++first;
  if (first >= argc) return 0;
  std::vector<char*> args(argv + first, argv + argc);
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  std::fprintf(stderr, "dml-verbs-probe: cannot run %s: %s\n", args[0], std::strerror(errno));
  return 127;
}
