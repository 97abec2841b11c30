// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Events: complete when recorded; timing events keep the time.
#include <chrono>
#include <mutex>

#include "counting_context.hpp"
#include "counting_plugin.hpp"

namespace counting {

gpuhal_status_t event_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_event_t *out) {
  count();
  auto *e = new Event;
  e->timing = (flags & GPUHAL_EVENT_DISABLE_TIMING) == 0;
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  c->events.insert(e);
  *out = reinterpret_cast<gpuhal_event_t>(e);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t event_destroy(gpuhal_context_t ctx, gpuhal_event_t e) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  if (!c->events.erase(reinterpret_cast<Event *>(e))) return fail(GPUHAL_ERROR_INVALID_HANDLE, "counting: unknown event");
  delete reinterpret_cast<Event *>(e);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t event_record(gpuhal_context_t, gpuhal_event_t e, gpuhal_stream_t) {
  count();
  auto *ev = reinterpret_cast<Event *>(e);
  ev->recorded = true;
  ev->when = std::chrono::steady_clock::now();
  return GPUHAL_SUCCESS;
}
gpuhal_status_t event_op(gpuhal_context_t, gpuhal_event_t) {
  count();
  return GPUHAL_SUCCESS;
}
gpuhal_status_t elapsed(gpuhal_context_t, gpuhal_event_t a, gpuhal_event_t b, float *ms) {
  count();
  auto *ea = reinterpret_cast<Event *>(a), *eb = reinterpret_cast<Event *>(b);
  if (!ea->timing || !eb->timing) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: event without timing");
  if (!ea->recorded || !eb->recorded) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: event never recorded");
  *ms = std::chrono::duration<float, std::milli>(eb->when - ea->when).count();
  return GPUHAL_SUCCESS;
}

}  // namespace counting
