// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// "counting": a small third-party gpuhal plugin. One synchronous CPU
// device: every operation runs at once on the calling thread (so streams
// are trivially in order and events complete when recorded), and every
// entry point counts its calls. At shutdown the counts are logged at info
// level (GPUHAL_LOG=info).
//
// Besides the required entries it claims two optional groups, to show how:
// host memory (pinned allocations and registrations; mapped ones have a
// device address, the same as the host's) and IPC (device memory lives in
// memfds, which another process of the same user opens through /proc).
// stream_barrier, stream-ordered memory, peer access and kernels stay NULL,
// which gpuhal reports as unsupported. gpuhal-conform checks all of it.
//
// Its files follow gpuhal's backend layout: counting_plugin.cpp (the table,
// init, shutdown), then one file per object (device, context, memory,
// pinned_memory, ipc, transfer, stream, event); this header holds what they
// share, counting_context.hpp a context's state.
#pragma once

#include <gpuhal/plugin.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace counting {

// The calling thread's last error (last_error), the core's log callback
// from init, and the count of calls every entry adds to.
extern thread_local std::string t_error;
extern gpuhal_log_fn g_log;
extern void *g_log_user;
extern std::atomic<uint64_t> g_calls;

inline gpuhal_status_t fail(gpuhal_status_t s, const char *msg) {
  t_error = msg;
  return s;
}
inline void count() {
  g_calls.fetch_add(1, std::memory_order_relaxed);
}

// The entries, each defined in the file of its object.
gpuhal_status_t init(const gpuhal_init_args_t *args);
void shutdown();
gpuhal_status_t device_count(int32_t *n);
gpuhal_status_t device_properties(int32_t ordinal, gpuhal_device_properties_t *out);
gpuhal_status_t context_create(int32_t ordinal, gpuhal_context_t *out);
gpuhal_status_t context_destroy(gpuhal_context_t ctx);
gpuhal_status_t no_op_ctx(gpuhal_context_t);
gpuhal_status_t memory_info(gpuhal_context_t, uint64_t *f, uint64_t *t);
gpuhal_status_t mem_alloc(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out);
gpuhal_status_t mem_free(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr);
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
gpuhal_status_t copy(gpuhal_context_t, uint32_t, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src, uint64_t bytes);
gpuhal_status_t copy_async(gpuhal_context_t c, uint32_t k, gpuhal_deviceptr_t d, gpuhal_deviceptr_t s, uint64_t n,
                           gpuhal_stream_t);
gpuhal_status_t set(gpuhal_context_t, gpuhal_deviceptr_t dst, uint8_t v, uint64_t bytes);
gpuhal_status_t set_async(gpuhal_context_t c, gpuhal_deviceptr_t d, uint8_t v, uint64_t n, gpuhal_stream_t);
gpuhal_status_t stream_create(gpuhal_context_t ctx, uint32_t, gpuhal_stream_t *out);
gpuhal_status_t stream_destroy(gpuhal_context_t ctx, gpuhal_stream_t s);
gpuhal_status_t stream_op(gpuhal_context_t, gpuhal_stream_t);
gpuhal_status_t stream_wait_event(gpuhal_context_t, gpuhal_stream_t, gpuhal_event_t);
gpuhal_status_t add_callback(gpuhal_context_t, gpuhal_stream_t, gpuhal_host_fn fn, void *user);
gpuhal_status_t event_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_event_t *out);
gpuhal_status_t event_destroy(gpuhal_context_t ctx, gpuhal_event_t e);
gpuhal_status_t event_record(gpuhal_context_t, gpuhal_event_t e, gpuhal_stream_t);
gpuhal_status_t event_op(gpuhal_context_t, gpuhal_event_t);
gpuhal_status_t elapsed(gpuhal_context_t, gpuhal_event_t a, gpuhal_event_t b, float *ms);

}  // namespace counting
