// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver: events.
#include "fake_cuda.hpp"

using namespace fake_cuda;

extern "C" {

// ---- events -----------------------------------------------------------------------------------
API CUresult cuEventCreate(CUevent *out, unsigned flags) {
  int dev = -1;
  if (const CUresult r = context_entry("cuEventCreate", &dev); r != OK) return r;
  if (!out || (flags & ~3u)) return INVALID_VALUE;
  auto e = std::make_shared<Event>();
  e->timing = (flags & 2u) == 0;
  e->dev = dev;
  std::lock_guard<std::mutex> lock(g_events_mu);
  g_events.emplace(e.get(), e);
  *out = e.get();
  return OK;
}
API CUresult cuEventDestroy_v2(CUevent e) {
  int dev = -1;
  if (const CUresult r = context_entry("cuEventDestroy_v2", &dev); r != OK) return r;
  // A pending record keeps the object alive (it holds a reference).
  std::lock_guard<std::mutex> lock(g_events_mu);
  return e && g_events.erase(e) ? OK : INVALID_HANDLE;
}
API CUresult cuEventRecord(CUevent e, CUstream s) {
  int dev = -1;
  if (const CUresult r = context_entry("cuEventRecord", &dev); r != OK) return r;
  const auto ev = find_event(e);
  const auto target = lookup(s);
  if (!ev) return INVALID_HANDLE;
  CUresult captured = OK;
  if (capture_record(*ev, target, &captured)) return captured;
  std::lock_guard<std::mutex> lock(ev->mu);
  CUresult r = submit(s, [ev] {
    std::lock_guard<std::mutex> l(ev->mu);
    ev->has_time = true;
    ev->when = std::chrono::steady_clock::now();
  });
  if (r != OK) return r;
  ev->stream = target;
  ev->ticket = target->last();
  ev->has_time = false;
  return OK;
}
API CUresult cuEventSynchronize(CUevent e) {
  int dev = -1;
  if (const CUresult r = context_entry("cuEventSynchronize", &dev); r != OK) return r;
  const auto ev = find_event(e);
  if (!ev) return INVALID_HANDLE;
  if (const CUresult r = refuse_captured_event(*ev); r != OK) return r;
  std::shared_ptr<Stream> src;
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(ev->mu);
    src = ev->stream;
    ticket = ev->ticket;
  }
  if (src) src->wait(ticket);
  pool_release_above_threshold(dev);
  return after_wait(dev);
}
API CUresult cuEventQuery(CUevent e) {
  int dev = -1;
  if (const CUresult r = context_entry("cuEventQuery", &dev); r != OK) return r;
  const auto ev = find_event(e);
  if (!ev) return INVALID_HANDLE;
  if (const CUresult r = refuse_captured_event(*ev); r != OK) return r;
  std::lock_guard<std::mutex> lock(ev->mu);
  if (!ev->stream) return OK;
  std::lock_guard<std::mutex> l2(ev->stream->mu);
  return ev->stream->done >= ev->ticket ? after_wait(dev) : NOT_READY;
}
API CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
  int dev = -1;
  if (const CUresult r = context_entry("cuEventElapsedTime_v2", &dev); r != OK) return r;
  if (!ms) return INVALID_VALUE;
  const auto ea = find_event(a), eb = find_event(b);
  if (!ea || !eb) return INVALID_HANDLE;
  for (const auto &ev : {ea, eb})
    if (const CUresult r = refuse_captured_event(*ev); r != OK) return r;
  // One event may be both ends (a zero interval): lock it once.
  std::unique_lock<std::mutex> lock_a(ea->mu, std::defer_lock), lock_b;
  if (eb == ea) {
    lock_a.lock();
  } else {
    lock_b = std::unique_lock<std::mutex>(eb->mu, std::defer_lock);
    std::lock(lock_a, lock_b);
  }
  if (!a->timing || !b->timing) return INVALID_HANDLE;
  if (!a->stream || !b->stream) return INVALID_HANDLE;
  if (!a->has_time || !b->has_time) return NOT_READY;
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return OK;
}


}  // extern "C"
