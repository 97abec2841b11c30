// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Managed and host memory kept past its context (plugin ABI 1.17 mem_keep,
// mem_free_kept). ROCr serves small system-pool blocks from chunks it keeps,
// so a freed block stays mapped and goes to the next allocation of its size:
// the core cannot keep a host array over such memory valid through a reset
// by copying its pages back after context_destroy (the addresses are still
// ROCr's). Instead the core asks for the block to be kept: it leaves the
// context's books (context_destroy does not free it, memory_info does not
// count it) for the plugin's list of kept blocks, and is freed when the
// core says its last host array went. The memory is the runtime's, not the
// context's, so nothing else changes for it.
//
// Locking: a context's mutex, then g_plugin.kept_mu (never the other way).
#include <mutex>

#include "hsa_context.hpp"
#include "hsa_plugin.hpp"
#include "plugin_support.hpp"

namespace gpuhal::hsa {

gpuhal_status_t mem_keep(gpuhal_context_t ctx, void *ptr) {
  return in_context(ctx, "mem_keep", [&](HsaContext *c) -> gpuhal_status_t {
    const auto base = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(c->mu);
    const bool host = c->host_allocations.count(base) != 0;
    if (!host && c->managed_allocations.count(base) == 0)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_keep: not managed or host memory of this context");
    {
      std::lock_guard<std::mutex> kept_lock(g_plugin.kept_mu);
      g_plugin.kept.insert(base);  // first: a bad_alloc here leaves the books as they were
    }
    if (host) {
      c->host_allocations.erase(base);
    } else {
      c->managed_allocations.erase(base);
      c->allocations.erase(base);  // managed memory is not in allocated_bytes (hsa_memory.cpp)
    }
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t mem_free_kept(void *ptr) {
  return plugin::guard("mem_free_kept", [&]() -> gpuhal_status_t {
    const auto base = reinterpret_cast<uintptr_t>(ptr);
    {
      std::lock_guard<std::mutex> lock(g_plugin.kept_mu);
      if (g_plugin.kept.erase(base) == 0)
        return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_free_kept: not memory kept by mem_keep");
    }
    const gpuhal_status_t st = hsa_call(rt().hsa_amd_memory_pool_free, "hsa_amd_memory_pool_free", ptr);
    if (st != GPUHAL_SUCCESS) {
      std::lock_guard<std::mutex> lock(g_plugin.kept_mu);  // still allocated: kept, for a retry or shutdown
      g_plugin.kept.insert(base);
    }
    return st;
  });
}

void free_kept_memory() {
  std::lock_guard<std::mutex> lock(g_plugin.kept_mu);
  for (uintptr_t base : g_plugin.kept) rt().hsa_amd_memory_pool_free(reinterpret_cast<void *>(base));
  g_plugin.kept.clear();
}

}  // namespace gpuhal::hsa
