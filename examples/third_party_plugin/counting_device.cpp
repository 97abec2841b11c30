// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The one synchronous CPU device.
#include <cstdio>
#include <cstring>

#include "counting_context.hpp"
#include "counting_plugin.hpp"

namespace counting {

gpuhal_status_t device_count(int32_t *n) {
  count();
  *n = 1;
  return GPUHAL_SUCCESS;
}
gpuhal_status_t device_properties(int32_t ordinal, gpuhal_device_properties_t *out) {
  count();
  if (ordinal != 0) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: only device 0 exists");
  if (!out || out->struct_size < 8) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: bad properties struct");
  gpuhal_device_properties_t p{};
  std::snprintf(p.name, sizeof p.name, "counting CPU device");
  std::snprintf(p.vendor, sizeof p.vendor, "example");
  p.total_memory = 1ull << 30;
  p.warp_size = 1;
  p.max_threads_per_block = 1;
  p.multiprocessor_count = 1;
  p.can_map_host_memory = 1;
  p.unified_addressing = 1;
  const uint32_t n = out->struct_size < sizeof p ? out->struct_size : uint32_t(sizeof p);
  p.abi_version = GPUHAL_ABI_VERSION;
  p.struct_size = n;
  std::memcpy(out, &p, n);  // never more than the caller's struct_size
  return GPUHAL_SUCCESS;
}

}  // namespace counting
