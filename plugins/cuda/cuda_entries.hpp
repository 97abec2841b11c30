// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's entries kept outside cuda_plugin.cpp, one file per
// object (cuda_memory.cpp: device and managed memory, the stream-ordered
// pool; cuda_transfers.cpp: copies and memsets; cuda_streams.cpp: streams
// and events; cuda_host_memory.cpp: pinned, mapped and registered host
// memory; cuda_ipc.cpp: IPC). cuda_plugin.cpp puts them in the plugin table.
#pragma once

#include "gpuhal/plugin.h"

namespace gpuhal::cuda {

gpuhal_status_t memory_info(gpuhal_context_t ctx, uint64_t *free_bytes, uint64_t *total_bytes);
gpuhal_status_t mem_alloc(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out);
gpuhal_status_t mem_alloc_managed(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out);
gpuhal_status_t mem_free(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr);
gpuhal_status_t mem_alloc_async(gpuhal_context_t ctx, uint64_t bytes, gpuhal_stream_t stream, gpuhal_deviceptr_t *out);
gpuhal_status_t mem_free_async(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, gpuhal_stream_t stream);

gpuhal_status_t memcpy_sync(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                            uint64_t bytes);
gpuhal_status_t memcpy_async(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                             uint64_t bytes, gpuhal_stream_t stream);
gpuhal_status_t memset_sync(gpuhal_context_t ctx, gpuhal_deviceptr_t dst, uint8_t value, uint64_t bytes);
gpuhal_status_t memset_async(gpuhal_context_t ctx, gpuhal_deviceptr_t dst, uint8_t value, uint64_t bytes,
                             gpuhal_stream_t stream);

gpuhal_status_t stream_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_stream_t *out);
gpuhal_status_t stream_destroy(gpuhal_context_t ctx, gpuhal_stream_t stream);
gpuhal_status_t stream_synchronize(gpuhal_context_t ctx, gpuhal_stream_t stream);
gpuhal_status_t stream_query(gpuhal_context_t ctx, gpuhal_stream_t stream);
gpuhal_status_t stream_wait_event(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_event_t event);
gpuhal_status_t stream_add_callback(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_host_fn fn, void *user);
gpuhal_status_t stream_barrier(gpuhal_context_t ctx, gpuhal_stream_t stream, const gpuhal_event_t *events,
                               uint32_t count, uint32_t flags);
gpuhal_status_t event_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_event_t *out);
gpuhal_status_t event_destroy(gpuhal_context_t ctx, gpuhal_event_t event);
gpuhal_status_t event_record(gpuhal_context_t ctx, gpuhal_event_t event, gpuhal_stream_t stream);
gpuhal_status_t event_synchronize(gpuhal_context_t ctx, gpuhal_event_t event);
gpuhal_status_t event_query(gpuhal_context_t ctx, gpuhal_event_t event);
gpuhal_status_t event_elapsed_ms(gpuhal_context_t ctx, gpuhal_event_t start, gpuhal_event_t end, float *ms);

gpuhal_status_t host_alloc(gpuhal_context_t ctx, uint64_t bytes, uint32_t flags, void **out);
gpuhal_status_t host_free(gpuhal_context_t ctx, void *ptr);
gpuhal_status_t host_register(gpuhal_context_t ctx, void *ptr, uint64_t bytes, uint32_t flags);
gpuhal_status_t host_unregister(gpuhal_context_t ctx, void *ptr);
gpuhal_status_t host_get_device_pointer(gpuhal_context_t ctx, void *host_ptr, gpuhal_deviceptr_t *out);

gpuhal_status_t ipc_get_handle(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, gpuhal_ipc_handle_t *out,
                               gpuhal_deviceptr_t *base, uint64_t *bytes);
gpuhal_status_t ipc_open(gpuhal_context_t ctx, const gpuhal_ipc_handle_t *handle, gpuhal_deviceptr_t *out,
                         uint64_t *bytes);
gpuhal_status_t ipc_close(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr);

}  // namespace gpuhal::cuda
