// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's events: CUDA events made in the context (cuEventCreate,
// timing unless GPUHAL_EVENT_DISABLE_TIMING), recorded on any stream the
// context knows, waited for and timed. A sticky error seen while waiting
// releases the context's callbacks (context_error).
#include <mutex>

#include "cuda_context.hpp"
#include "cuda_stream.hpp"
#include "cuda_event.hpp"
#include "cuda_entries.hpp"
#include "cuda_thread_rules.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {

gpuhal_status_t event_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_event_t *out) {
  return create_tracked(ctx, "event_create", out, &CudaContext::events,
                        &Driver::cuEventDestroy, [&](CUevent *e) {
                          const unsigned cu_flags =
                              (flags & GPUHAL_EVENT_DISABLE_TIMING) ? CU_EVENT_DISABLE_TIMING : CU_EVENT_DEFAULT;
                          return cu_call(drv().cuEventCreate, "cuEventCreate", e, cu_flags);
                        });
}

gpuhal_status_t event_destroy(gpuhal_context_t ctx, gpuhal_event_t event) {
  return in_context(ctx, "event_destroy", [&](CudaContext *c) -> gpuhal_status_t {
    return release_tracked(
        c, [&] { return c->events.erase(reinterpret_cast<CUevent>(event)) != 0; }, GPUHAL_ERROR_INVALID_HANDLE,
        "event_destroy: not an event created in this context",
        [&] { return cu_call(drv().cuEventDestroy, "cuEventDestroy", reinterpret_cast<CUevent>(event)); },
        [&] { c->events.insert(reinterpret_cast<CUevent>(event)); });
  });
}

gpuhal_status_t event_record(gpuhal_context_t ctx, gpuhal_event_t event, gpuhal_stream_t stream) {
  return in_context(ctx, "event_record", [&](CudaContext *c) -> gpuhal_status_t {
    if (!known_stream(c, stream) || !known_event(c, event))
      return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_record: invalid stream or event");
    if (const gpuhal_status_t call_st =
            cu_call(drv().cuEventRecord, "cuEventRecord", reinterpret_cast<CUevent>(event), native(stream));
        call_st != GPUHAL_SUCCESS)
      return call_st;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t event_synchronize(gpuhal_context_t ctx, gpuhal_event_t event) {
  return in_context(ctx, "event_synchronize", [&](CudaContext *c) -> gpuhal_status_t {
    if (!known_event(c, event)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_synchronize: invalid event");
    const CUresult r = drv().cuEventSynchronize(reinterpret_cast<CUevent>(event));
    return r == CUDA_SUCCESS ? GPUHAL_SUCCESS : context_error(c, r, "cuEventSynchronize");
  });
}

gpuhal_status_t event_query(gpuhal_context_t ctx, gpuhal_event_t event) {
  return in_context(ctx, "event_query", [&](CudaContext *c) -> gpuhal_status_t {
    if (!known_event(c, event)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_query: invalid event");
    const CUresult r = drv().cuEventQuery(reinterpret_cast<CUevent>(event));
    if (r == CUDA_ERROR_NOT_READY) return GPUHAL_NOT_READY;
    if (r != CUDA_SUCCESS) return context_error(c, r, "cuEventQuery");
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t event_elapsed_ms(gpuhal_context_t ctx, gpuhal_event_t start, gpuhal_event_t end, float *ms) {
  return in_context(ctx, "event_elapsed_ms", [&](CudaContext *c) -> gpuhal_status_t {
    if (!known_event(c, start) || !known_event(c, end))
      return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_elapsed_ms: invalid event");
    if (const gpuhal_status_t call_st = cu_call(drv().cuEventElapsedTime, "cuEventElapsedTime", ms,
                                                reinterpret_cast<CUevent>(start), reinterpret_cast<CUevent>(end));
        call_st != GPUHAL_SUCCESS)
      return call_st;
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::cuda
