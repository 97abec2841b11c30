// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's process-wide state: how often it was initialised, the
// driver's device count, the settings init read, and the live contexts by
// handle. Made with the library (nothing in it needs the driver); its
// members are set by init and shutdown under `mu`, and read by entries that
// run between them.
#pragma once

#include <cstdint>
#include <mutex>

#include "cuda_context.hpp"
#include "handle_registry.hpp"

namespace gpuhal::cuda {

struct CudaPlugin {
  std::mutex mu;  // guards init_count, device_count and release_threshold while they change
  int init_count = 0;
  int device_count = 0;
  uint64_t release_threshold = 0;  // GPUHAL_CUDA_POOL_RELEASE_THRESHOLD (0: half of each device's memory)
  plugin::HandleRegistry<CudaContext, gpuhal_context_t> contexts;
};
extern CudaPlugin g_plugin;

}  // namespace gpuhal::cuda
