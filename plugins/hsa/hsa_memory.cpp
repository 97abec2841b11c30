// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa backend's device memory (the GPU agent's coarse-grained pool) and
// managed memory (the CPU agent's fine-grained pool, accessible to the GPU
// agent). Both are kept in the context's allocations, so that mem_free,
// the copies' range checks and context_destroy know them; only device
// memory counts in memory_info.
#include <mutex>

#include "hsa_context.hpp"
#include "plugin_support.hpp"

namespace gpuhal::hsa {
namespace {

// Keeps a new allocation in c (mem_free and the copies' range checks know
// it; context_destroy frees what is left) and hands it out; on failure to
// keep it, frees it again.
gpuhal_status_t remember(HsaContext *c, void *p, uint64_t bytes, bool managed, gpuhal_deviceptr_t *out) {
  try {
    std::lock_guard<std::mutex> lock(c->mu);
    c->allocations.emplace(reinterpret_cast<uintptr_t>(p), bytes);
    if (managed)
      c->managed_allocations.insert(reinterpret_cast<uintptr_t>(p));
    else
      c->allocated_bytes += bytes;  // what memory_info counts of the device's pool
  } catch (...) {
    rt().hsa_amd_memory_pool_free(p);
    throw;
  }
  *out = reinterpret_cast<uintptr_t>(p);
  return GPUHAL_SUCCESS;
}

}  // namespace

gpuhal_status_t mem_alloc(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out) {
  if (bytes == 0 || bytes > SIZE_MAX) return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_alloc: size must be positive");
  return in_context(ctx, "mem_alloc", [&](HsaContext *c) -> gpuhal_status_t {
    void *p = nullptr;
    if (const gpuhal_status_t call_st = hsa_call(rt().hsa_amd_memory_pool_allocate, "hsa_amd_memory_pool_allocate",
                                                 c->device->device_pool, size_t(bytes), 0u, &p);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    return remember(c, p, bytes, false, out);
  });
}

// Managed memory on ROCr: the CPU agent's fine-grained system pool, which
// the GPU agent is allowed to access (alloc_system) -- the host and the
// device address it at the same pointer, coherently. Kept with the device
// allocations, so that mem_free (hsa_amd_memory_pool_free) and the range
// checks of copies know it.
gpuhal_status_t mem_alloc_managed(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out) {
  if (bytes == 0 || bytes > SIZE_MAX)
    return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_alloc_managed: size must be positive");
  return in_context(ctx, "mem_alloc_managed", [&](HsaContext *c) -> gpuhal_status_t {
    void *p = nullptr;
    if (const gpuhal_status_t st = alloc_system(c, bytes, &p); st != GPUHAL_SUCCESS) return st;
    return remember(c, p, bytes, true, out);
  });
}

gpuhal_status_t mem_free(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr) {
  return in_context(ctx, "mem_free", [&](HsaContext *c) -> gpuhal_status_t {
    // Taken out of the context's books before the free and put back if it
    // fails: ROCr's pool may hand the address to another thread's
    // allocation as soon as it is freed, and that allocation's record must
    // not be the one forgotten (nor may two threads free one allocation).
    uint64_t bytes = 0;
    bool managed = false;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      auto it = c->allocations.find(uintptr_t(ptr));
      if (it == c->allocations.end())
        return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_free: not a live allocation of this context");
      bytes = it->second;
      c->allocations.erase(it);
      managed = c->managed_allocations.erase(uintptr_t(ptr)) != 0;
      if (!managed) c->allocated_bytes -= bytes;
    }
    const gpuhal_status_t st = hsa_call(rt().hsa_amd_memory_pool_free, "hsa_amd_memory_pool_free",
                                        reinterpret_cast<void *>(uintptr_t(ptr)));
    if (st != GPUHAL_SUCCESS) {
      std::lock_guard<std::mutex> lock(c->mu);  // still allocated: known again, for a retry or context_destroy
      c->allocations.emplace(uintptr_t(ptr), bytes);
      if (managed)
        c->managed_allocations.insert(uintptr_t(ptr));
      else
        c->allocated_bytes += bytes;
    }
    return st;
  });
}

}  // namespace gpuhal::hsa
