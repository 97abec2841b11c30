// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A device buffer that grows without moving (PyTorch's expandable
// segments, in small): a GrowableDeviceArray reserves addresses for the
// most it may ever hold and maps physical memory at its end as it grows.
// Data already written stays where it is, and pointers handed out earlier
// (to a kernel argument, another library) stay valid.
//
// Runs on backends with Capability::VirtualMemory (cuda, host); says so and
// exits 0 on the others.
#include <cstdio>
#include <numeric>
#include <vector>

#include "gpuhal/gpuhal.hpp"

int main() {
  try {
    gpuhal::Context ctx = gpuhal::Context::current();
    if (!ctx.supports(gpuhal::Capability::VirtualMemory)) {
      std::printf("backend %s has no virtual memory: nothing to show\n",
                  ctx.device().runtime().backend_name().c_str());
      return 0;
    }
    // Room for up to 64M floats; nothing mapped yet.
    gpuhal::GrowableDeviceArray log(ctx, gpuhal::dtypes::float32, uint64_t(64) << 20);
    const gpuhal::DevicePointer where = log.device_pointer();
    uint64_t written = 0;
    // Append batches of growing size, as a log or a KV cache grows.
    for (uint64_t batch : {1000u, 250000u, 1u << 20, 3u << 20}) {
      std::vector<float> values(batch);
      std::iota(values.begin(), values.end(), float(written));
      log.resize(written + batch);
      log.array().view({gpuhal::Slice(int64_t(written), int64_t(written + batch))}).copy_from_host(
          gpuhal::HostView::of(values));
      written += batch;
      std::printf("%9llu elements, capacity %9llu, at %#llx%s\n", static_cast<unsigned long long>(log.size()),
                  static_cast<unsigned long long>(log.capacity()), static_cast<unsigned long long>(log.device_pointer()),
                  log.device_pointer() == where ? "" : " (moved!)");
    }
    const std::vector<float> all = log.array().copy_to_host().to_vector<float>();
    bool ok = all.size() == written && log.device_pointer() == where;
    for (size_t i = 0; ok && i < all.size(); ++i) ok = all[i] == float(i);
    std::printf("grew to %llu floats in place: %s\n", static_cast<unsigned long long>(written),
                ok ? "correct" : "WRONG");
    return ok ? 0 : 1;
  } catch (const gpuhal::Error &e) {
    std::fprintf(stderr, "growable_array: %s\n", e.what());
    return 1;
  }
}
