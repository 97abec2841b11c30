// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The second process of the IPC tests. Usage: ipc_peer LIB_DIR HANDLE_TEXT
// Opens the shared float32 array, checks that element i holds i (written by
// the exporter), then writes 1000 + i into every element for the exporter to
// see. Exit status 0 on success; 1 with a message on stderr otherwise.
#include <cstdio>
#include <vector>

#include "gpuhal/gpuhal.hpp"

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: ipc_peer LIB_DIR HANDLE_TEXT\n");
    return 2;
  }
  try {
    gpuhal::Config c;
    c.backend = "host";
    c.plugin_path = {argv[1]};
    gpuhal::Context ctx = gpuhal::Runtime::load(c).device(0).primary_context();
    const auto handle = gpuhal::IpcArrayHandle::deserialize(argv[2]);
    gpuhal::IpcArray shared = gpuhal::open_ipc_array(ctx, handle);
    const gpuhal::DeviceArray &a = shared.array();
    gpuhal::HostArray seen = a.copy_to_host();  // same strides as the array
    const std::vector<float> got = seen.to_vector<float>();
    const int64_t n = a.size();
    for (int64_t i = 0; i < n; ++i)
      if (got[size_t(i)] != float(i)) {
        std::fprintf(stderr, "ipc_peer: element %lld is %g, expected %lld\n", (long long)i, double(got[size_t(i)]),
                     (long long)i);
        return 1;
      }
    // Element i in C index order becomes 1000 + i.
    std::vector<int64_t> idx(size_t(a.ndim()), 0);
    for (int64_t i = 0; i < n; ++i) {
      seen.at<float>(idx) = 1000.0f + float(i);
      for (int d = a.ndim() - 1; d >= 0 && ++idx[size_t(d)] == a.shape()[size_t(d)]; --d) idx[size_t(d)] = 0;
    }
    a.copy_from_host(seen);
    std::printf("ipc_peer: %lld elements checked and rewritten\n", (long long)n);
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ipc_peer: %s\n", e.what());
    return 1;
  }
}
