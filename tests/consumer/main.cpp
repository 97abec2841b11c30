// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Built against an installed gpuhal: loads the default backend from the
// install prefix and does a round trip.
#include <cstdio>
#include <string>
#include <vector>

#include "gpuhal/gpuhal.hpp"

int main() {
  try {
    gpuhal::Context ctx = gpuhal::Context::current();
    std::vector<int> v{1, 2, 3, 4, 5};
    auto back = gpuhal::to_device(ctx, gpuhal::HostView::of(v)).copy_to_host().to_vector<int>();
    if (std::string(gpuhal::version().string) != GPUHAL_LIBRARY_VERSION_STRING) {
      std::fprintf(stderr, "consumer: library %s, headers %s\n", gpuhal::version().string,
                   GPUHAL_LIBRARY_VERSION_STRING);
      return 1;
    }
    std::printf("consumer: backend %s from %s: %s\n", ctx.device().runtime().backend_name().c_str(),
                ctx.device().runtime().plugin_path().c_str(), back == v ? "OK" : "WRONG");
    return back == v ? 0 : 1;
  } catch (const gpuhal::Error &e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
