// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's device memory entries: page-granular mappings
// (host_device_mappings.hpp) counted against the device's memory limit and
// kept in the plugin's registry, managed memory (the same), and
// stream-ordered frees run by the stream's worker.
#include <memory>
#include <string>

#include "host_device_mappings.hpp"
#include "host_entries.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;

gpuhal_status_t mem_alloc(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out) {
  return in_context(ctx, "mem_alloc", [&](HostContext *c) -> gpuhal_status_t {
    if (!out) return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_alloc: null output pointer");
    if (bytes == 0) return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_alloc: size must be positive");
    HostDevice *d = c->device();
    // `used` is kept only under a limit (memory_info and the limit read it
    // then; without one, free memory is the machine's): two atomic updates
    // fewer per allocation.
    if (d->limit) {
      uint64_t used = d->used.load();
      do {
        if (bytes > d->limit || used > d->limit - bytes)
          return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "mem_alloc: out of device memory: " + std::to_string(bytes) +
                                                      " bytes requested, " + std::to_string(used) + " of " +
                                                      std::to_string(d->limit) + " in use (GPUHAL_HOST_MEMORY_LIMIT)");
      } while (!d->used.compare_exchange_weak(used, used + bytes));
    }
    Registry &registry = plugin_state().registry;
    const Region region{bytes, c, RegionKind::Device, 0};
    // A released mapping of the same page count, with its map entry, under
    // one lock; else a fresh one.
    uintptr_t p = 0;
    try {
      p = registry.take_cached(page_round(bytes), region);  // none of an absurd size is cached
    } catch (...) {
      if (d->limit) d->used.fetch_sub(bytes);
      throw;
    }
    if (p) {
      *out = p;
      return GPUHAL_SUCCESS;
    }
    void *fresh = map_device_memory(bytes);
    if (!fresh) {
      if (d->limit) d->used.fetch_sub(bytes);
      return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "mem_alloc: mapping " + std::to_string(bytes) + " bytes failed");
    }
    try {
      registry.insert(reinterpret_cast<uintptr_t>(fresh), region);
    } catch (...) {
      release_device_memory(fresh, bytes, -1);
      if (d->limit) d->used.fetch_sub(bytes);
      throw;
    }
    *out = reinterpret_cast<uintptr_t>(fresh);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t mem_free(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr) {
  return in_context(ctx, "mem_free", [&](HostContext *c) -> gpuhal_status_t {
    // The map entry released and the mapping cached (or its entry gone)
    // under one lock; unmapping, if any, after it.
    Registry::Mappings evicted;
    bool kept = false;
    const Region r = plugin_state().registry.free_device(uintptr_t(ptr), c, &evicted, &kept);
    if (r.size == 0)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_free: " + hex(ptr) + " is not a live allocation of this context");
    unmap_released(reinterpret_cast<void *>(uintptr_t(ptr)), r.size, r.fd, kept, evicted);
    if (c->device()->limit) c->device()->used.fetch_sub(r.size);
    return GPUHAL_SUCCESS;
  });
}

// The host's device memory is the host's memory: managed memory is device
// memory (the same pointer on both sides, freed by mem_free).
gpuhal_status_t mem_alloc_managed(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out) {
  return mem_alloc(ctx, bytes, out);
}

// Stream-ordered memory: the allocation is made at once (always early
// enough); the free runs on the stream after the work submitted before it.
gpuhal_status_t mem_alloc_async(gpuhal_context_t ctx, uint64_t bytes, gpuhal_stream_t stream, gpuhal_deviceptr_t *out) {
  return in_context(ctx, "mem_alloc_async", [&](HostContext *c) -> gpuhal_status_t {
    const std::shared_ptr<StreamState> s = c->stream(stream);
    if (!s) return bad_stream("mem_alloc_async");
    if (gpuhal_status_t st = c->captures.refusal(s.get(), s->is_default, "mem_alloc_async")) return st;
    // The host backend allocates at the call: nothing it could record.
    if (gpuhal_status_t st = c->captures.refuse(s.get(), "mem_alloc_async",
                                                "a stream-ordered allocation (the host backend records none)"))
      return st;
    return mem_alloc(ctx, bytes, out);
  });
}

gpuhal_status_t mem_free_async(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, gpuhal_stream_t stream) {
  return in_stream(ctx, stream, "mem_free_async",
                   [&](HostContext *c, const std::shared_ptr<StreamState> &s) -> gpuhal_status_t {
                     if (gpuhal_status_t st = c->captures.refuse(
                             s.get(), "mem_free_async", "a stream-ordered free (the host backend records none)"))
                       return st;
                     // Out of the registry now (new work may not use it), unmapped later.
                     const Region r = plugin_state().registry.release_device(uintptr_t(ptr), c);
                     if (r.size == 0)
                       return fail(GPUHAL_ERROR_INVALID_VALUE,
                                   "mem_free_async: " + hex(ptr) + " is not a live allocation of this context");
                     HostDevice *d = c->device();
                     c->submit(s, [ptr, r, d](bool) {
                       release_device_memory(reinterpret_cast<void *>(uintptr_t(ptr)), r.size, r.fd);
                       if (d->limit) d->used.fetch_sub(r.size);
                     });
                     return GPUHAL_SUCCESS;
                   });
}

}  // namespace gpuhal::host
