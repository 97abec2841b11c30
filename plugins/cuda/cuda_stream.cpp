// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's streams: CUDA streams, stream barriers as events plus
// cuStreamWaitEvent, callbacks as cuLaunchHostFunc (cuda_thread_rules.hpp);
// the events themselves are cuda_event.cpp's. Streams made outside gpuhal in the context's own
// CUDA context are accepted (external streams). A sticky error seen while
// synchronising releases the context's callbacks (context_error).
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_context.hpp"
#include "cuda_stream.hpp"
#include "cuda_event.hpp"
#include "cuda_entries.hpp"
#include "cuda_thread_rules.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {

// ---- streams ---------------------------------------------------------------------------

gpuhal_status_t stream_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_stream_t *out) {
  return create_tracked(ctx, "stream_create", out, &CudaContext::streams,
                        &Driver::cuStreamDestroy, [&](CUstream *s) {
                          const unsigned cu_flags = (flags & GPUHAL_STREAM_NON_BLOCKING) ? CU_STREAM_NON_BLOCKING : 0u;
                          return cu_call(drv().cuStreamCreate, "cuStreamCreate", s, cu_flags);
                        });
}

// Stream priorities (ABI 1.9): the driver's, clamped by it
// (cuStreamCreateWithPriority: "priority ... outside the meaningful range
// ... is automatically clamped").
gpuhal_status_t context_stream_priority_range(gpuhal_context_t ctx, int32_t *least, int32_t *greatest) {
  return in_context(ctx, "context_stream_priority_range", [&](CudaContext *) -> gpuhal_status_t {
    int l = 0, g = 0;
    if (const gpuhal_status_t st = cu_call(drv().cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", &l, &g);
        st != GPUHAL_SUCCESS)
      return st;
    if (least) *least = l;
    if (greatest) *greatest = g;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_create_with_priority(gpuhal_context_t ctx, uint32_t flags, int32_t priority,
                                            gpuhal_stream_t *out) {
  return create_tracked(ctx, "stream_create_with_priority", out,
                        &CudaContext::streams, &Driver::cuStreamDestroy, [&](CUstream *s) {
                          const unsigned cu_flags = (flags & GPUHAL_STREAM_NON_BLOCKING) ? CU_STREAM_NON_BLOCKING : 0u;
                          return cu_call(drv().cuStreamCreateWithPriority, "cuStreamCreateWithPriority", s, cu_flags,
                                         int(priority));
                        });
}

gpuhal_status_t stream_priority(gpuhal_context_t ctx, gpuhal_stream_t stream, int32_t *out) {
  return in_context(ctx, "stream_priority", [&](CudaContext *c) -> gpuhal_status_t {
    if (!known_stream(c, stream)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_priority: invalid stream");
    int p = 0;
    if (const gpuhal_status_t st = cu_call(drv().cuStreamGetPriority, "cuStreamGetPriority", native(stream), &p);
        st != GPUHAL_SUCCESS)
      return st;
    *out = p;
    return GPUHAL_SUCCESS;
  });
}

// ABI 1.15. cuCtxSynchronize "blocks until the current context has
// completed all preceding requested tasks", every stream of the context,
// whoever made it: so a stream cuStreamGetCtx places in c's CUcontext (as
// CuPy's and PyTorch's streams are, on the device's primary context) is
// waited for. A stream of a green context answers a context of its own
// (cuStreamGetCtx: "equivalent to the one returned by cuCtxFromGreenCtx"),
// so it is 0, as is every stream of another context.
gpuhal_status_t context_waits_for_stream(gpuhal_context_t ctx, gpuhal_stream_t stream, int32_t *out) {
  return in_context(ctx, "context_waits_for_stream", [&](CudaContext *c) -> gpuhal_status_t {
    *out = known_stream(c, stream) ? 1 : 0;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_destroy(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_context(ctx, "stream_destroy", [&](CudaContext *c) -> gpuhal_status_t {
    return release_tracked(
        c, [&] { return c->streams.erase(native(stream)) != 0; }, GPUHAL_ERROR_INVALID_HANDLE,
        "stream_destroy: not a stream created in this context",
        [&] {
          forget_capture(c, native(stream));
          return cu_call(drv().cuStreamDestroy, "cuStreamDestroy", native(stream));
        },
        [&] { c->streams.insert(native(stream)); });
  });
}

gpuhal_status_t stream_synchronize(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_context(ctx, "stream_synchronize", [&](CudaContext *c) -> gpuhal_status_t {
    if (!known_stream(c, stream)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_synchronize: invalid stream");
    const CUresult r = drv().cuStreamSynchronize(native(stream));
    return r == CUDA_SUCCESS ? GPUHAL_SUCCESS : context_error(c, r, "cuStreamSynchronize");
  });
}

gpuhal_status_t stream_query(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_context(ctx, "stream_query", [&](CudaContext *c) -> gpuhal_status_t {
    if (!known_stream(c, stream)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_query: invalid stream");
    const CUresult r = drv().cuStreamQuery(native(stream));
    if (r == CUDA_ERROR_NOT_READY) return GPUHAL_NOT_READY;
    if (r != CUDA_SUCCESS) return context_error(c, r, "cuStreamQuery");
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_wait_event(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_event_t event) {
  return in_context(ctx, "stream_wait_event", [&](CudaContext *c) -> gpuhal_status_t {
    if (!known_stream(c, stream) || !known_event(c, event))
      return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_wait_event: invalid stream or event");
    if (const gpuhal_status_t call_st =
            cu_call(drv().cuStreamWaitEvent, "cuStreamWaitEvent", native(stream), reinterpret_cast<CUevent>(event), 0u);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_add_callback(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_host_fn fn, void *user) {
  if (!fn) return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_add_callback: null function");
  return in_context(ctx, "stream_add_callback", [&](CudaContext *c) -> gpuhal_status_t {
    if (!known_stream(c, stream)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_add_callback: invalid stream");
    if (stream_capturing(c, native(stream))) {
      std::shared_ptr<void> keep;
      if (const gpuhal_status_t st = queue_recorded_callback(c, native(stream), fn, user, &keep); st != GPUHAL_SUCCESS)
        return st;
      keep_for_capture(c, native(stream), std::move(keep));
      return GPUHAL_SUCCESS;
    }
    return queue_callback(c, native(stream), fn, user);
  });
}

// Events + cuStreamWaitEvent; "all prior work" records a private event on
// the legacy default stream and on every stream the context created.
gpuhal_status_t stream_barrier(gpuhal_context_t ctx, gpuhal_stream_t stream, const gpuhal_event_t *events,
                               uint32_t count, uint32_t flags) {
  if (count && !events) return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_barrier: null event list");
  if (flags & ~GPUHAL_BARRIER_ALL_PRIOR_WORK) return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_barrier: unknown flags");
  return in_context(ctx, "stream_barrier", [&](CudaContext *c) -> gpuhal_status_t {
    if (!known_stream(c, stream)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_barrier: invalid stream");
    for (uint32_t i = 0; i < count; ++i)
      if (!known_event(c, events[i])) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_barrier: invalid event");
    for (uint32_t i = 0; i < count; ++i) {
      if (const gpuhal_status_t call_st = cu_call(drv().cuStreamWaitEvent, "cuStreamWaitEvent", native(stream),
                                                  reinterpret_cast<CUevent>(events[i]), 0u);
          call_st != GPUHAL_SUCCESS)
        return call_st;
    }
    if (!(flags & GPUHAL_BARRIER_ALL_PRIOR_WORK)) return GPUHAL_SUCCESS;
    std::vector<CUstream> sources{api::stream_legacy()};
    {
      std::lock_guard<std::mutex> lock(c->mu);
      sources.insert(sources.end(), c->streams.begin(), c->streams.end());
    }
    for (CUstream src : sources) {
      if (src == native(stream)) continue;
      CUevent e = nullptr;
      if (const gpuhal_status_t call_st = cu_call(drv().cuEventCreate, "cuEventCreate", &e, CU_EVENT_DISABLE_TIMING);
          call_st != GPUHAL_SUCCESS)
        return call_st;
      CUresult r = drv().cuEventRecord(e, src);
      if (r == CUDA_SUCCESS) r = drv().cuStreamWaitEvent(native(stream), e, 0u);
      drv().cuEventDestroy(e);  // released once the wait is satisfied
      if (r != CUDA_SUCCESS) return drv().error(r, "cuEventRecord/cuStreamWaitEvent");
    }
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::cuda
