// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's events (see HsaEvent): timed events as profiled 4-byte
// device copies, the others as barrier-AND markers; waits give up when the
// context failed.
#include <cstring>
#include <stdexcept>
#include <string>

#include "handle_registry.hpp"
#include "hsa_context.hpp"

namespace gpuhal::hsa {

// ---- events ---------------------------------------------------------------------------------

gpuhal_status_t event_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_event_t *out) {
  return in_context(ctx, "event_create", [&](HsaContext *c) -> gpuhal_status_t {
    auto e = std::make_unique<HsaEvent>();
    e->timing = !(flags & GPUHAL_EVENT_DISABLE_TIMING);
    std::lock_guard<std::mutex> lock(c->mu);
    plugin::hand_out_owned(c->events, e, out);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t event_destroy(gpuhal_context_t ctx, gpuhal_event_t event) {
  return in_context(ctx, "event_destroy", [&](HsaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->mu);
    if (!c->events.erase(reinterpret_cast<HsaEvent *>(event)))
      return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_destroy: not an event created in this context");
    c->captures.forget_event(event);
    return GPUHAL_SUCCESS;  // a pending marker keeps its signal until it completed
  });
}

namespace {

// True when ROCr stamps async copies for us (enabled once per process,
// before the first timed copy, as hsa_ext_amd.h requires).
bool copy_timing_available() {
  static const bool enabled = [] {
    if (!rt().hsa_amd_profiling_async_copy_enable || !rt().hsa_amd_profiling_get_async_copy_time) return false;
    const hsa_status_t st = rt().hsa_amd_profiling_async_copy_enable(true);
    if (st != HSA_STATUS_SUCCESS)
      plugin::log(GPUHAL_LOG_WARN, "hsa: async copy profiling could not be enabled (" + rt().describe(st) +
                                       "): events are timed from barrier packets, which ROCr does not document");
    return st == HSA_STATUS_SUCCESS;
  }();
  return enabled;
}

}  // namespace

gpuhal_status_t event_record(gpuhal_context_t ctx, gpuhal_event_t event, gpuhal_stream_t stream) {
  return in_context(ctx, "event_record", [&](HsaContext *c) -> gpuhal_status_t {
    StreamLock lock(c, stream);
    HsaStream *s = lock.stream();
    if (!s) return lock.refuse("event_record");
    HsaEvent *e = find_event(c, event);
    if (!e) return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_record: invalid event");
    if (const gpuhal_status_t st = c->captures.refusal(s, s->legacy, "event_record"); st != GPUHAL_SUCCESS) return st;
    if (c->captures.record_event(e, s)) {
      // A position in the capture, no work that runs: afterwards the event
      // stands for nothing (a wait for it waits for nothing).
      e->signal.reset();
      e->timed_copy = false;
      return GPUHAL_SUCCESS;
    }
    if (e->timing && copy_timing_available()) {
      if (!c->event_scratch) {
        if (const gpuhal_status_t call_st = hsa_call(rt().hsa_amd_memory_pool_allocate, "hsa_amd_memory_pool_allocate",
                                                     c->device->device_pool, 256, 0u, &c->event_scratch);
            call_st != GPUHAL_SUCCESS)
          return call_st;
      }
      const hsa_agent_t gpu = c->device->agent;
      char *scratch = static_cast<char *>(c->event_scratch);
      if (const gpuhal_status_t st = submit_copy(s, scratch + 4, gpu, scratch, gpu, 4, nullptr); st != GPUHAL_SUCCESS)
        return st;
      e->signal = s->last;
      e->timed_copy = true;
      return GPUHAL_SUCCESS;
    }
    SignalRef marker;
    if (const gpuhal_status_t st = submit_marker(s, {}, &marker); st != GPUHAL_SUCCESS) return st;
    e->signal = std::move(marker);
    e->timed_copy = false;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t event_synchronize(gpuhal_context_t ctx, gpuhal_event_t event) {
  return in_context(ctx, "event_synchronize", [&](HsaContext *c) -> gpuhal_status_t {
    SignalRef sig;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      HsaEvent *e = find_event(c, event);
      if (!e) return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_synchronize: invalid event");
      if (const gpuhal_status_t st = c->captures.refuse_event(e, "event_synchronize"); st != GPUHAL_SUCCESS) return st;
      sig = e->signal;
    }
    if (sig) sig->wait(&c->failed);
    if (sig && sig->failed()) fail_context(c, "the work an event waited for failed");
    return context_failure(c, "event_synchronize");
  });
}

gpuhal_status_t event_query(gpuhal_context_t ctx, gpuhal_event_t event) {
  return in_context(ctx, "event_query", [&](HsaContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(c->mu);
    HsaEvent *e = find_event(c, event);
    if (!e) return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_query: invalid event");
    if (const gpuhal_status_t st = c->captures.refuse_event(e, "event_query"); st != GPUHAL_SUCCESS) return st;
    return !e->signal || e->signal->done() ? GPUHAL_SUCCESS : GPUHAL_NOT_READY;
  });
}

// The markers' timestamps (written by the packet processor on queues with
// profiling enabled), from the end of one to the end of the other.
gpuhal_status_t event_elapsed_ms(gpuhal_context_t ctx, gpuhal_event_t start, gpuhal_event_t end, float *ms) {
  return in_context(ctx, "event_elapsed_ms", [&](HsaContext *c) -> gpuhal_status_t {
    SignalRef a, b;
    bool copies = false;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      HsaEvent *ea = find_event(c, start), *eb = find_event(c, end);
      if (!ea || !eb) return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_elapsed_ms: invalid event");
      for (HsaEvent *e : {ea, eb})
        if (const gpuhal_status_t st = c->captures.refuse_event(e, "event_elapsed_ms"); st != GPUHAL_SUCCESS) return st;
      if (!ea->timing || !eb->timing)
        return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_elapsed_ms: an event was created with timing disabled");
      if (!ea->signal || !eb->signal)
        return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_elapsed_ms: an event was never recorded");
      a = ea->signal;
      b = eb->signal;
      copies = ea->timed_copy && eb->timed_copy;
    }
    if (!a->done() || !b->done()) return GPUHAL_NOT_READY;
    uint64_t end_a = 0, end_b = 0;
    if (copies) {
      hsa_amd_profiling_async_copy_time_t ta{}, tb{};
      if (const gpuhal_status_t call_st = hsa_call(rt().hsa_amd_profiling_get_async_copy_time,
                                                   "hsa_amd_profiling_get_async_copy_time", a->handle, &ta);
          call_st != GPUHAL_SUCCESS)
        return call_st;
      if (const gpuhal_status_t call_st = hsa_call(rt().hsa_amd_profiling_get_async_copy_time,
                                                   "hsa_amd_profiling_get_async_copy_time", b->handle, &tb);
          call_st != GPUHAL_SUCCESS)
        return call_st;
      end_a = ta.end;
      end_b = tb.end;
    } else {
      if (!rt().hsa_amd_profiling_get_dispatch_time)
        return fail(GPUHAL_ERROR_NOT_SUPPORTED, "event_elapsed_ms: the HSA runtime has no dispatch timestamps");
      hsa_amd_profiling_dispatch_time_t ta{}, tb{};
      if (const gpuhal_status_t call_st =
              hsa_call(rt().hsa_amd_profiling_get_dispatch_time, "hsa_amd_profiling_get_dispatch_time",
                       c->device->agent, a->handle, &ta);
          call_st != GPUHAL_SUCCESS)
        return call_st;
      if (const gpuhal_status_t call_st =
              hsa_call(rt().hsa_amd_profiling_get_dispatch_time, "hsa_amd_profiling_get_dispatch_time",
                       c->device->agent, b->handle, &tb);
          call_st != GPUHAL_SUCCESS)
        return call_st;
      end_a = ta.end;
      end_b = tb.end;
    }
    uint64_t frequency = 0;
    if (const gpuhal_status_t call_st =
            hsa_call(rt().hsa_system_get_info, "hsa_system_get_info", HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &frequency);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    if (frequency == 0)
      return fail(GPUHAL_ERROR_DRIVER, "event_elapsed_ms: the runtime reports a zero timestamp frequency");
    *ms = float((double(end_b) - double(end_a)) * 1000.0 / double(frequency));
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::hsa
