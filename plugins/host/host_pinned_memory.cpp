// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's pinned, mapped and registered host memory: plain host
// memory (the device is the CPU), remembered per context so that
// registrations cannot overlap and context_destroy frees what is left.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "host_plugin.hpp"
#include "host_device_mappings.hpp"
#include "host_entries.hpp"
#include "host_stream.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;

// ---- host memory -----------------------------------------------------------------------

gpuhal_status_t host_alloc(gpuhal_context_t ctx, uint64_t bytes, uint32_t flags, void **out) {
  return in_context(ctx, "host_alloc", [&](HostContext *c) -> gpuhal_status_t {
    if (const gpuhal_status_t st =
            plugin::check_host_memory_args("host_alloc", plugin::HostArg::Output, out, bytes, flags);
        st != GPUHAL_SUCCESS)
      return st;
    // Whole pages of their own, unmapped when freed (as a driver's pinned
    // allocations are): a host pointer kept past the free faults instead
    // of reading memory the heap gave to someone else.
    void *p = bytes > uint64_t(SIZE_MAX) / 2 ? nullptr : map_device_memory(bytes);
    if (!p)
      return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "host_alloc: mapping " + std::to_string(bytes) + " bytes failed");
    try {
      plugin_state().registry.insert(reinterpret_cast<uintptr_t>(p), Region{bytes, c, RegionKind::HostAlloc, flags});
    } catch (...) {
      unmap_device_memory(p, bytes, -1);
      throw;
    }
    *out = p;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t host_free(gpuhal_context_t ctx, void *ptr) {
  return in_context(ctx, "host_free", [&](HostContext *c) -> gpuhal_status_t {
    const Region r = plugin_state().registry.erase(reinterpret_cast<uintptr_t>(ptr), c, RegionKind::HostAlloc);
    if (r.size == 0)
      return fail(GPUHAL_ERROR_INVALID_VALUE,
                  "host_free: " + hex(uintptr_t(ptr)) + " is not a host allocation of this context");
    unmap_device_memory(ptr, r.size, -1);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t host_register(gpuhal_context_t ctx, void *ptr, uint64_t bytes, uint32_t flags) {
  return in_context(ctx, "host_register", [&](HostContext *c) -> gpuhal_status_t {
    if (const gpuhal_status_t st =
            plugin::check_host_memory_args("host_register", plugin::HostArg::Range, ptr, bytes, flags);
        st != GPUHAL_SUCCESS)
      return st;
    auto &reg = plugin_state().registry;
    if (reg.overlaps_host(uintptr_t(ptr), bytes))
      return fail(GPUHAL_ERROR_ALREADY_REGISTERED,
                  "host_register: [" + hex(uintptr_t(ptr)) + ", +" + std::to_string(bytes) +
                      ") overlaps memory that is already registered, pinned or device memory");
    reg.insert(uintptr_t(ptr), Region{bytes, c, RegionKind::Registered, flags});
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t host_unregister(gpuhal_context_t ctx, void *ptr) {
  return in_context(ctx, "host_unregister", [&](HostContext *c) -> gpuhal_status_t {
    const Region r = plugin_state().registry.erase(reinterpret_cast<uintptr_t>(ptr), c, RegionKind::Registered);
    if (r.size == 0)
      return fail(GPUHAL_ERROR_NOT_REGISTERED,
                  "host_unregister: " + hex(uintptr_t(ptr)) + " is not registered in this context");
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t host_get_device_pointer(gpuhal_context_t ctx, void *host_ptr, gpuhal_deviceptr_t *out) {
  return in_context(ctx, "host_get_device_pointer", [&](HostContext *) -> gpuhal_status_t {
    uintptr_t base;
    Region r;
    if (!plugin_state().registry.find_host(uintptr_t(host_ptr), &base, &r) || !(r.flags & GPUHAL_HOST_ALLOC_MAPPED))
      return fail(GPUHAL_ERROR_INVALID_VALUE, "host_get_device_pointer: " + hex(uintptr_t(host_ptr)) +
                                                  " is not inside host memory allocated or registered as mapped");
    *out = uintptr_t(host_ptr);  // unified addressing: the same address
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::host
