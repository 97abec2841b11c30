// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host plugin's kernel attributes and occupancy (plugin.h, ABI 1.7).
//
// A host "compute unit" is one worker thread, which runs one work-group at
// a time: a launchable block has one resident block per unit. What a block
// may take is what launch() holds it to: gpuhal_host_max_items work-items
// and kSharedMemoryPerBlock of shared memory, static and dynamic together.
// There are no registers; a work-item's private memory is its stack need
// (the compiler's -fstack-usage, 0 when not known).
#include <algorithm>
#include <cstring>

#include "host_plugin.hpp"
#include "host_entries.hpp"
#include "host_kernel.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;

gpuhal_status_t kernel_attributes(gpuhal_context_t ctx, gpuhal_kernel_t kernel, gpuhal_kernel_attributes_t *out) {
  return in_context(ctx, "kernel_attributes", [&](HostContext *c) -> gpuhal_status_t {
    if (!out || out->struct_size < 2 * sizeof(uint32_t))
      return fail(GPUHAL_ERROR_INVALID_VALUE, "kernel_attributes: null or short output");
    uint64_t static_shared = 0, stack_need = 0;
    const auto *k = reinterpret_cast<const gpuhal_host_kernel *>(kernel);
    if (!k || !kernel_of_context(c, k, &static_shared, &stack_need))
      return fail(GPUHAL_ERROR_INVALID_HANDLE, "kernel_attributes: not a kernel of a module of this context");
    gpuhal_kernel_attributes_t a{};
    a.abi_version = GPUHAL_ABI_VERSION;
    a.struct_size = sizeof(a);
    a.max_threads_per_block = gpuhal_host_max_items;
    a.static_shared_bytes = uint32_t(static_shared);
    a.max_dynamic_shared_bytes = uint32_t(kSharedMemoryPerBlock - std::min(static_shared, kSharedMemoryPerBlock));
    a.local_bytes_per_thread = uint32_t(std::min<uint64_t>(stack_need, UINT32_MAX));
    a.registers_per_thread = 0;
    a.preferred_block_multiple = 1;  // the device's warp size: a work-item at a time
    plugin::write_versioned(out, a);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t kernel_max_active_blocks(gpuhal_context_t ctx, gpuhal_kernel_t kernel, uint32_t block_threads,
                                         uint32_t dynamic_shared_bytes, uint32_t *out) {
  return in_context(ctx, "kernel_max_active_blocks", [&](HostContext *c) -> gpuhal_status_t {
    if (!out) return fail(GPUHAL_ERROR_INVALID_VALUE, "kernel_max_active_blocks: null output");
    if (block_threads == 0) return fail(GPUHAL_ERROR_INVALID_VALUE, "kernel_max_active_blocks: a block of 0 work-items");
    uint64_t static_shared = 0, stack_need = 0;
    const auto *k = reinterpret_cast<const gpuhal_host_kernel *>(kernel);
    if (!k || !kernel_of_context(c, k, &static_shared, &stack_need))
      return fail(GPUHAL_ERROR_INVALID_HANDLE, "kernel_max_active_blocks: not a kernel of a module of this context");
    const bool fits = block_threads <= gpuhal_host_max_items &&
                      static_shared + dynamic_shared_bytes <= kSharedMemoryPerBlock;
    *out = fits ? 1 : 0;
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::host
