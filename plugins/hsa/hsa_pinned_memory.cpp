// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa backend's pinned, mapped and registered host memory: the CPU
// agent's fine-grained pool (host_alloc) and hsa_amd_memory_lock
// (host_register), both remembered per context so that context_destroy
// releases what is left and registrations never overlap pinned memory.
#include <cstring>
#include <mutex>
#include <string>

#include "hsa_context.hpp"
#include "plugin_support.hpp"

namespace gpuhal::hsa {
namespace {

// ---- host memory ----------------------------------------------------------------------------

// The registration or pinned allocation overlapping [p, p + n), if any.
bool overlaps_pinned(HsaContext *c, uintptr_t p, uint64_t n) {
  auto hit = [&](const auto &m) {
    auto it = m.upper_bound(p + n - 1);
    if (it == m.begin()) return false;
    --it;
    const uint64_t size = [&] {
      if constexpr (std::is_same<std::decay_t<decltype(it->second)>, Registration>::value)
        return it->second.bytes;
      else
        return it->second;
    }();
    return it->first + size > p;
  };
  return hit(c->registrations) || hit(c->host_allocations);
}

}  // namespace

// Pinned, mapped host memory from the fine-grained system pool: the GPU
// reads and writes it at the same address (HSA's unified address space), so
// every allocation is both portable and mapped; write-combining is a hint
// ROCr does not offer and is ignored.
gpuhal_status_t host_alloc(gpuhal_context_t ctx, uint64_t bytes, uint32_t flags, void **out) {
  if (const gpuhal_status_t st =
          plugin::check_host_memory_args("host_alloc", plugin::HostArg::Output, out, bytes, flags);
      st != GPUHAL_SUCCESS)
    return st;
  return in_context(ctx, "host_alloc", [&](HsaContext *c) -> gpuhal_status_t {
    void *p = nullptr;
    if (const gpuhal_status_t st = alloc_system(c, bytes, &p); st != GPUHAL_SUCCESS) return st;
    try {
      std::lock_guard<std::mutex> lock(c->mu);
      c->host_allocations.emplace(reinterpret_cast<uintptr_t>(p), bytes);
    } catch (...) {
      rt().hsa_amd_memory_pool_free(p);
      throw;
    }
    *out = p;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t host_free(gpuhal_context_t ctx, void *ptr) {
  return in_context(ctx, "host_free", [&](HsaContext *c) -> gpuhal_status_t {
    // Out of the books before the free, back after a failure (mem_free,
    // hsa_memory.cpp, says why).
    uint64_t bytes = 0;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      auto it = c->host_allocations.find(reinterpret_cast<uintptr_t>(ptr));
      if (it == c->host_allocations.end())
        return fail(GPUHAL_ERROR_INVALID_VALUE, "host_free: not a host allocation of this context");
      bytes = it->second;
      c->host_allocations.erase(it);
    }
    const gpuhal_status_t st = hsa_call(rt().hsa_amd_memory_pool_free, "hsa_amd_memory_pool_free", ptr);
    if (st != GPUHAL_SUCCESS) {
      std::lock_guard<std::mutex> lock(c->mu);
      c->host_allocations.emplace(reinterpret_cast<uintptr_t>(ptr), bytes);
    }
    return st;
  });
}

// Page-locks with hsa_amd_memory_lock for the context's GPU (the agent
// pointer is what host_get_device_pointer answers); a runtime without it
// falls back to hsa_memory_register, what numba.roc's register() called.
gpuhal_status_t host_register(gpuhal_context_t ctx, void *ptr, uint64_t bytes, uint32_t flags) {
  if (const gpuhal_status_t st =
          plugin::check_host_memory_args("host_register", plugin::HostArg::Range, ptr, bytes, flags);
      st != GPUHAL_SUCCESS)
    return st;
  return in_context(ctx, "host_register", [&](HsaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->mu);
    if (overlaps_pinned(c, reinterpret_cast<uintptr_t>(ptr), bytes))
      return fail(GPUHAL_ERROR_ALREADY_REGISTERED, "host_register: the range overlaps registered or pinned memory");
    Registration r;
    r.bytes = bytes;
    if (rt().hsa_amd_memory_lock && rt().hsa_amd_memory_unlock) {
      hsa_agent_t agent = c->device->agent;
      if (const gpuhal_status_t call_st =
              hsa_call(rt().hsa_amd_memory_lock, "hsa_amd_memory_lock", ptr, size_t(bytes), &agent, 1, &r.agent_ptr);
          call_st != GPUHAL_SUCCESS)
        return call_st;
      r.locked = true;
    } else {
      if (!rt().hsa_memory_deregister)
        return fail(GPUHAL_ERROR_NOT_SUPPORTED, "host_register: the HSA runtime has no way to register memory");
      if (const gpuhal_status_t call_st = hsa_call(rt().hsa_memory_register, "hsa_memory_register", ptr, size_t(bytes));
          call_st != GPUHAL_SUCCESS)
        return call_st;
      r.agent_ptr = ptr;
    }
    c->registrations.emplace(reinterpret_cast<uintptr_t>(ptr), r);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t host_unregister(gpuhal_context_t ctx, void *ptr) {
  return in_context(ctx, "host_unregister", [&](HsaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->mu);
    auto it = c->registrations.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == c->registrations.end())
      return fail(GPUHAL_ERROR_NOT_REGISTERED, "host_unregister: not registered in this context");
    const gpuhal_status_t released =
        it->second.locked
            ? hsa_call(rt().hsa_amd_memory_unlock, "hsa_amd_memory_unlock", ptr)
            : hsa_call(rt().hsa_memory_deregister, "hsa_memory_deregister", ptr, size_t(it->second.bytes));
    if (released != GPUHAL_SUCCESS) return released;
    c->registrations.erase(it);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t host_get_device_pointer(gpuhal_context_t ctx, void *host_ptr, gpuhal_deviceptr_t *out) {
  if (!host_ptr || !out) return fail(GPUHAL_ERROR_INVALID_VALUE, "host_get_device_pointer: null pointer");
  return in_context(ctx, "host_get_device_pointer", [&](HsaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->mu);
    const uintptr_t p = reinterpret_cast<uintptr_t>(host_ptr);
    if (auto it = c->host_allocations.upper_bound(p); it != c->host_allocations.begin()) {
      --it;
      if (p < it->first + it->second) {
        *out = p;  // fine-grained system memory: the same address on the GPU
        return GPUHAL_SUCCESS;
      }
    }
    if (auto it = c->registrations.upper_bound(p); it != c->registrations.begin()) {
      --it;
      if (p < it->first + it->second.bytes) {
        *out = reinterpret_cast<uintptr_t>(it->second.agent_ptr) + (p - it->first);
        return GPUHAL_SUCCESS;
      }
    }
    return fail(GPUHAL_ERROR_INVALID_VALUE, "host_get_device_pointer: not pinned or registered memory of this context");
  });
}

}  // namespace gpuhal::hsa
