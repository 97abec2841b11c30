// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's events: a record is a position on its stream
// (ticket); synchronising waits for that position; timing is the host clock
// when the position completed.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "host_plugin.hpp"
#include "host_entries.hpp"
#include "host_stream.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;

gpuhal_status_t event_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_event_t *out) {
  return in_context(ctx, "event_create", [&](HostContext *c) -> gpuhal_status_t {
    *out = c->create_event((flags & GPUHAL_EVENT_DISABLE_TIMING) == 0);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t event_destroy(gpuhal_context_t ctx, gpuhal_event_t event) {
  return in_context(ctx, "event_destroy", [&](HostContext *c) -> gpuhal_status_t {
    return c->destroy_event(event) ? GPUHAL_SUCCESS
                                   : fail(GPUHAL_ERROR_INVALID_HANDLE, "event_destroy: invalid event handle");
  });
}

gpuhal_status_t event_record(gpuhal_context_t ctx, gpuhal_event_t event, gpuhal_stream_t stream) {
  return in_stream(ctx, stream, "event_record",
                   [&](HostContext *c, const std::shared_ptr<StreamState> &s) -> gpuhal_status_t {
                     auto e = c->event(event);
                     if (!e) return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_record: invalid event handle");
                     c->record(e, s);
                     return GPUHAL_SUCCESS;
                   });
}

gpuhal_status_t event_synchronize(gpuhal_context_t ctx, gpuhal_event_t event) {
  return in_context(ctx, "event_synchronize", [&](HostContext *c) -> gpuhal_status_t {
    if (on_worker_thread()) return would_deadlock("event_synchronize");
    auto e = c->event(event);
    if (!e) return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_synchronize: invalid event handle");
    if (gpuhal_status_t st = c->captures.refuse_event(e.get(), "event_synchronize")) return st;
    Dep d;
    if (event_dep(e, &d)) d.stream->progress->wait(*d.stream, d.ticket);
    return kernel_failure(c);
  });
}

gpuhal_status_t event_query(gpuhal_context_t ctx, gpuhal_event_t event) {
  return in_context(ctx, "event_query", [&](HostContext *c) -> gpuhal_status_t {
    auto e = c->event(event);
    if (!e) return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_query: invalid event handle");
    if (gpuhal_status_t st = c->captures.refuse_event(e.get(), "event_query")) return st;
    Dep d;
    if (!event_dep(e, &d)) return GPUHAL_SUCCESS;
    return d.stream->completed.load() >= d.ticket ? GPUHAL_SUCCESS : GPUHAL_NOT_READY;
  });
}

gpuhal_status_t event_elapsed_ms(gpuhal_context_t ctx, gpuhal_event_t start, gpuhal_event_t end, float *ms) {
  return in_context(ctx, "event_elapsed_ms", [&](HostContext *c) -> gpuhal_status_t {
    auto a = c->event(start), b = c->event(end);
    if (!a || !b) return fail(GPUHAL_ERROR_INVALID_HANDLE, "event_elapsed_ms: invalid event handle");
    for (const auto *e : {&a, &b})
      if (gpuhal_status_t st = c->captures.refuse_event(e->get(), "event_elapsed_ms")) return st;
    std::chrono::steady_clock::time_point ta, tb;
    for (auto *pair : {&a, &b}) {
      const auto &e = *pair;
      std::lock_guard<std::mutex> lock(e->mu);
      if (!e->timing)
        return fail(GPUHAL_ERROR_INVALID_VALUE, "event_elapsed_ms: an event was created with timing disabled");
      if (e->ticket == 0) return fail(GPUHAL_ERROR_INVALID_VALUE, "event_elapsed_ms: an event was never recorded");
      if (!e->has_time) return fail(GPUHAL_NOT_READY, "event_elapsed_ms: the recorded work has not completed");
      (pair == &a ? ta : tb) = e->when;
    }
    *ms = std::chrono::duration<float, std::milli>(tb - ta).count();
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::host
