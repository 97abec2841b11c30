// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Managed and host memory kept past its context (plugin ABI 1.17 mem_keep,
// mem_free_kept). A reset frees the context's memory, and host arrays over
// its managed, pinned or mapped memory must keep their bytes (plugin.h,
// "Host-addressed memory kept past its context"). Without these entries the
// core copies the bytes aside and maps them back after context_destroy
// unmapped them; another thread touching such an array between the two
// faulted (SIGSEGV), and its writes after the copy were lost. Kept memory is
// never unmapped under its arrays: it leaves the context's books (the
// registry, which context_destroy frees from; the device's used bytes) for
// the plugin's list, and is unmapped when the core says its last host array
// went, or with the plugin's state.
//
// Locking: the registry's lock (inside Registry), then kept.mu; never both
// at once.
#include <mutex>
#include <string>

#include "host_device_mappings.hpp"
#include "host_entries.hpp"
#include "host_plugin.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;

gpuhal_status_t mem_keep(gpuhal_context_t ctx, void *ptr) {
  return in_context(ctx, "mem_keep", [&](HostContext *c) -> gpuhal_status_t {
    const auto base = reinterpret_cast<uintptr_t>(ptr);
    KeptMemory &kept = plugin_state().kept;
    {
      // The slot first: a bad_alloc here leaves the books as they were.
      std::lock_guard<std::mutex> lock(kept.mu);
      if (!kept.blocks.emplace(base, std::make_pair(uint64_t(0), -1)).second)
        return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_keep: " + hex(base) + " is kept already");
    }
    Registry &registry = plugin_state().registry;
    Region r = registry.erase(base, c, RegionKind::HostAlloc);
    if (r.size == 0) {
      r = registry.erase(base, c, RegionKind::Device);  // managed memory is device memory here
      if (r.size != 0 && c->device()->limit) c->device()->used.fetch_sub(r.size);
    }
    std::lock_guard<std::mutex> lock(kept.mu);
    if (r.size == 0) {
      kept.blocks.erase(base);
      return fail(GPUHAL_ERROR_INVALID_VALUE,
                  "mem_keep: " + hex(base) + " is not the start of managed or host memory of this context");
    }
    kept.blocks[base] = {r.size, r.fd};
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t mem_free_kept(void *ptr) {
  return plugin::guard("mem_free_kept", [&]() -> gpuhal_status_t {
    if (!plugin_state_exists()) return fail(GPUHAL_ERROR_INVALID_HANDLE, "mem_free_kept: plugin not initialised");
    KeptMemory &kept = plugin_state().kept;
    std::pair<uint64_t, int> block;
    {
      std::lock_guard<std::mutex> lock(kept.mu);
      auto it = kept.blocks.find(reinterpret_cast<uintptr_t>(ptr));
      if (it == kept.blocks.end() || it->second.first == 0)
        return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_free_kept: " + hex(uintptr_t(ptr)) + " is not memory kept by mem_keep");
      block = it->second;
      kept.blocks.erase(it);
    }
    unmap_device_memory(ptr, block.first, block.second);
    return GPUHAL_SUCCESS;
  });
}

KeptMemory::~KeptMemory() {
  for (const auto &kv : blocks)
    if (kv.second.first != 0) unmap_device_memory(reinterpret_cast<void *>(kv.first), kv.second.first, kv.second.second);
}

}  // namespace gpuhal::host
