// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What the host plugin's entry files share (host_plugin.cpp puts every
// entry in the table): the errors every entry reports the same way, and the
// entries kept in files of their own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "gpuhal/plugin.h"
#include "host_context.hpp"

namespace gpuhal::host {

std::string hex(uint64_t v);
gpuhal_status_t bad_context(const char *entry);
gpuhal_status_t bad_stream(const char *entry);
// Blocking entries refuse to run on a stream worker (inside a callback).
gpuhal_status_t would_deadlock(const char *entry);
// The kernel failure since the last synchronising call, reported once.
gpuhal_status_t kernel_failure(HostContext *c);
// The stream position an event's last record stands for; false if never recorded.
bool event_dep(const std::shared_ptr<HostEvent> &e, Dep *out);

// host_memory.cpp
gpuhal_status_t mem_alloc(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out);
gpuhal_status_t mem_alloc_managed(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out);
gpuhal_status_t mem_free(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr);
gpuhal_status_t mem_alloc_async(gpuhal_context_t ctx, uint64_t bytes, gpuhal_stream_t stream, gpuhal_deviceptr_t *out);
gpuhal_status_t mem_free_async(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, gpuhal_stream_t stream);

// host_transfers.cpp
gpuhal_status_t memcpy_sync(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                            uint64_t bytes);
gpuhal_status_t memcpy_async(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                             uint64_t bytes, gpuhal_stream_t stream);
gpuhal_status_t memset_sync(gpuhal_context_t ctx, gpuhal_deviceptr_t dst, uint8_t value, uint64_t bytes);
gpuhal_status_t memset_async(gpuhal_context_t ctx, gpuhal_deviceptr_t dst, uint8_t value, uint64_t bytes,
                             gpuhal_stream_t stream);

// host_events.cpp
gpuhal_status_t event_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_event_t *out);
gpuhal_status_t event_destroy(gpuhal_context_t ctx, gpuhal_event_t event);
gpuhal_status_t event_record(gpuhal_context_t ctx, gpuhal_event_t event, gpuhal_stream_t stream);
gpuhal_status_t event_synchronize(gpuhal_context_t ctx, gpuhal_event_t event);
gpuhal_status_t event_query(gpuhal_context_t ctx, gpuhal_event_t event);
gpuhal_status_t event_elapsed_ms(gpuhal_context_t ctx, gpuhal_event_t start, gpuhal_event_t end, float *ms);

// host_pinned_memory.cpp
gpuhal_status_t host_alloc(gpuhal_context_t ctx, uint64_t bytes, uint32_t flags, void **out);
gpuhal_status_t host_free(gpuhal_context_t ctx, void *ptr);
gpuhal_status_t host_register(gpuhal_context_t ctx, void *ptr, uint64_t bytes, uint32_t flags);
gpuhal_status_t host_unregister(gpuhal_context_t ctx, void *ptr);
gpuhal_status_t host_get_device_pointer(gpuhal_context_t ctx, void *host_ptr, gpuhal_deviceptr_t *out);

}  // namespace gpuhal::host
