// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa backend's contexts: a device's streams, events, memory and modules
// (HSA itself has no context object), all freed at context_destroy, and the
// native handles (the device's agent).
#include <dlfcn.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <unordered_set>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>
#include "hsa_context.hpp"
#include "hsa_plugin.hpp"
#include "handle_registry.hpp"
#include "hsa_entries.hpp"
#include "hsa_kernel.hpp"
#include "plugin_support.hpp"

namespace gpuhal::hsa {

HsaContext *find(gpuhal_context_t h) {
  return g_plugin.contexts.find(h);
}

gpuhal_status_t bad_context(const char *entry) {
  return fail(GPUHAL_ERROR_INVALID_HANDLE, std::string(entry) + ": invalid context handle");
}

// ---- contexts --------------------------------------------------------------------------

gpuhal_status_t context_create(int32_t ordinal, gpuhal_context_t *out) {
  return guard("context_create", [&]() -> gpuhal_status_t {
    if (ordinal < 0 || size_t(ordinal) >= g_plugin.devices.size())
      return fail(GPUHAL_ERROR_INVALID_VALUE, "context_create: no hsa device " + std::to_string(ordinal));
    auto c = std::make_unique<HsaContext>();
    c->ordinal = ordinal;
    c->device = &g_plugin.devices[size_t(ordinal)];
    c->legacy = std::make_unique<HsaStream>();
    c->legacy->ctx = c.get();
    c->legacy->legacy = true;
    if (const gpuhal_status_t st = create_queue(c.get(), c->legacy.get()); st != GPUHAL_SUCCESS) return st;
    if (const gpuhal_status_t st = alloc_system(c.get(), 8, &c->fill_scratch); st != GPUHAL_SUCCESS) {
      destroy_stream(c->legacy.get());
      return st;
    }
    register_context(c.get());
    *out = g_plugin.contexts.add(std::move(c));
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t context_destroy(gpuhal_context_t ctx) {
  std::unique_ptr<HsaContext> owned = g_plugin.contexts.take(ctx);
  if (!owned) return bad_context("context_destroy");
  HsaContext *c = owned.get();
  // Everything made in the context goes with it; the first failure is
  // reported after the rest was still released. A context that failed
  // (a fault, a failed copy) is torn down without waiting for the work that
  // will never complete, and that is what destroying it is for: its failure
  // was reported already and is not reported again.
  gpuhal_status_t first = synchronize_context(c);
  if (c->failed.load()) first = GPUHAL_SUCCESS;
  std::string first_msg = first == GPUHAL_SUCCESS ? "" : plugin::last_error();
  auto note = [&](hsa_status_t s, const char *call) {
    if (s != HSA_STATUS_SUCCESS && first == GPUHAL_SUCCESS) {
      first = rt().error(s, call);
      first_msg = plugin::last_error();
    }
  };
  stop_host_thread(c);
  unregister_context(c);
  std::lock_guard<std::mutex> lock(c->mu);
  for (auto &kv : c->streams) {
    withdraw_stream(kv.second.get());
    destroy_stream(kv.second.get());
  }
  for (auto &kv : c->per_thread) destroy_stream(kv.second.get());
  destroy_stream(c->legacy.get());
  release_staging(c);
  c->events.clear();
  for (auto &kv : c->modules) {
    if (rt().hsa_executable_destroy) note(rt().hsa_executable_destroy(kv.second->executable), "hsa_executable_destroy");
    if (rt().hsa_code_object_reader_destroy)
      note(rt().hsa_code_object_reader_destroy(kv.second->reader), "hsa_code_object_reader_destroy");
  }
  for (auto &kv : c->allocations)
    note(rt().hsa_amd_memory_pool_free(reinterpret_cast<void *>(kv.first)), "hsa_amd_memory_pool_free");
  for (auto &kv : c->registrations) {
    void *p = reinterpret_cast<void *>(kv.first);
    if (kv.second.locked)
      note(rt().hsa_amd_memory_unlock(p), "hsa_amd_memory_unlock");
    else
      note(rt().hsa_memory_deregister(p, size_t(kv.second.bytes)), "hsa_memory_deregister");
  }
  for (auto &kv : c->host_allocations)
    note(rt().hsa_amd_memory_pool_free(reinterpret_cast<void *>(kv.first)), "hsa_amd_memory_pool_free");
  if (c->fill_scratch) note(rt().hsa_amd_memory_pool_free(c->fill_scratch), "hsa_amd_memory_pool_free");
  if (c->event_scratch) note(rt().hsa_amd_memory_pool_free(c->event_scratch), "hsa_amd_memory_pool_free");
  if (first != GPUHAL_SUCCESS) return fail(first, first_msg);
  return GPUHAL_SUCCESS;
}

gpuhal_status_t context_synchronize(gpuhal_context_t ctx) {
  return in_context(ctx, "context_synchronize",
                    [&](HsaContext *c) -> gpuhal_status_t {
                      if (const gpuhal_status_t st = c->captures.refuse_context_sync("context_synchronize");
                          st != GPUHAL_SUCCESS)
                        return st;
                      return synchronize_context(c);
                    });
}

gpuhal_status_t memory_info(gpuhal_context_t ctx, uint64_t *free_bytes, uint64_t *total_bytes) {
  return in_context(ctx, "memory_info", [&](HsaContext *c) -> gpuhal_status_t {
    // ROCr 5.x has no free-memory query: free is the pool's size less what
    // this process's contexts on the device hold.
    uint64_t used = 0;
    g_plugin.contexts.for_each([&](HsaContext &other) {
      if (other.device != c->device) return;
      std::lock_guard<std::mutex> lock(other.mu);
      used += other.allocated_bytes;
    });
    *total_bytes = c->device->device_pool_size;
    *free_bytes = used >= *total_bytes ? 0 : *total_bytes - used;
    return GPUHAL_SUCCESS;
  });
}

// ---- native handles -------------------------------------------------------------------------

// HSA has no contexts: only the device's agent.
gpuhal_status_t native_handle(gpuhal_context_t ctx, int32_t kind, uint64_t *out) {
  HsaContext *c = find(ctx);
  if (!c) return bad_context("native_handle");
  if (kind == GPUHAL_NATIVE_DEVICE) {
    *out = c->device->agent.handle;
    return GPUHAL_SUCCESS;
  }
  if (kind == GPUHAL_NATIVE_CONTEXT)
    return fail(GPUHAL_ERROR_NOT_SUPPORTED, "native_handle: HSA has no context object (ask for the device's agent)");
  return fail(GPUHAL_ERROR_INVALID_VALUE, "native_handle: unknown kind " + std::to_string(kind));
}

}  // namespace gpuhal::hsa
