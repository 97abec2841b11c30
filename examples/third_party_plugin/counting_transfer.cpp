// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Copies and memsets, at once on the calling thread.
#include <cstring>

#include "counting_context.hpp"
#include "counting_plugin.hpp"

namespace counting {

gpuhal_status_t copy(gpuhal_context_t, uint32_t, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src, uint64_t bytes) {
  count();
  std::memmove(reinterpret_cast<void *>(uintptr_t(dst)), reinterpret_cast<const void *>(uintptr_t(src)), size_t(bytes));
  return GPUHAL_SUCCESS;
}
gpuhal_status_t copy_async(gpuhal_context_t c, uint32_t k, gpuhal_deviceptr_t d, gpuhal_deviceptr_t s, uint64_t n,
                           gpuhal_stream_t) {
  return copy(c, k, d, s, n);
}
gpuhal_status_t set(gpuhal_context_t, gpuhal_deviceptr_t dst, uint8_t v, uint64_t bytes) {
  count();
  std::memset(reinterpret_cast<void *>(uintptr_t(dst)), v, size_t(bytes));
  return GPUHAL_SUCCESS;
}
gpuhal_status_t set_async(gpuhal_context_t c, gpuhal_deviceptr_t d, uint8_t v, uint64_t n, gpuhal_stream_t) {
  return set(c, d, v, n);
}

}  // namespace counting
