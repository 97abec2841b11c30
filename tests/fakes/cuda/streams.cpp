// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver: streams and host functions.
#include "fake_cuda.hpp"

using namespace fake_cuda;

extern "C" {

// ---- streams --------------------------------------------------------------------------------
API CUresult cuStreamCreate(CUstream *out, unsigned flags) {
  int dev = -1;
  if (const CUresult r = context_entry("cuStreamCreate", &dev); r != OK) return r;
  if (!out || (flags & ~1u)) return INVALID_VALUE;
  auto s = std::make_shared<Stream>();
  s->blocking = (flags & 1u) == 0;
  s->dev = dev;
  s->start();
  std::lock_guard<std::mutex> lock(g_streams_mu);
  g_streams.emplace(s.get(), s);
  *out = s.get();
  return OK;
}
// "Stream priorities follow a convention where lower numbers imply greater
// priorities ... If the user attempts to create a stream with a priority
// value that is outside the meaningful range ..., the priority is
// automatically clamped" (cuCtxGetStreamPriorityRange).
API CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  int dev = -1;
  if (const CUresult r = context_entry("cuCtxGetStreamPriorityRange", &dev); r != OK) return r;
  if (least) *least = 0;
  if (greatest) *greatest = kGreatestPriority;
  return OK;
}
API CUresult cuStreamCreateWithPriority(CUstream *out, unsigned flags, int priority) {
  if (const CUresult f = injected("cuStreamCreateWithPriority"); f != OK) return f;
  const CUresult r = cuStreamCreate(out, flags);
  if (r != OK) return r;
  (*out)->priority = priority < kGreatestPriority ? kGreatestPriority : priority > 0 ? 0 : priority;
  return OK;
}
API CUresult cuStreamGetPriority(CUstream s, int *priority) {
  int dev = -1;
  if (const CUresult r = context_entry("cuStreamGetPriority", &dev); r != OK) return r;
  if (!priority) return INVALID_VALUE;
  *priority = lookup(s)->priority;
  return OK;
}
API CUresult cuStreamDestroy_v2(CUstream s) {
  int dev = -1;
  if (const CUresult r = context_entry("cuStreamDestroy_v2", &dev); r != OK) return r;
  std::shared_ptr<Stream> owned;
  {
    std::lock_guard<std::mutex> lock(g_streams_mu);
    auto it = g_streams.find(s);
    if (!s || it == g_streams.end()) return INVALID_HANDLE;
    owned = it->second;
    g_streams.erase(it);
  }
  capture_stream_destroyed(owned.get());
  owned->drain();  // pending work still completes
  owned->finish();
  return OK;
}
API CUresult cuStreamSynchronize(CUstream s) {
  int dev = -1;
  if (const CUresult r = context_entry("cuStreamSynchronize", &dev); r != OK) return r;
  const std::shared_ptr<Stream> target = lookup(s);
  if (const CUresult r = refuse_if_capturing(target, CAPTURE_UNSUPPORTED); r != OK) return r;
  if (target == g_legacy)
    if (const CUresult r = refuse_sync_in_capture(dev, false); r != OK) return r;
  target->drain();
  pool_release_above_threshold(dev);
  return after_wait(dev);
}
API CUresult cuStreamQuery(CUstream s) {
  int dev = -1;
  if (const CUresult r = context_entry("cuStreamQuery", &dev); r != OK) return r;
  const std::shared_ptr<Stream> target = lookup(s);
  if (const CUresult r = refuse_if_capturing(target, CAPTURE_UNSUPPORTED); r != OK) return r;
  if (target == g_legacy)
    if (const CUresult r = refuse_sync_in_capture(dev, false); r != OK) return r;
  return target->idle() ? after_wait(dev) : NOT_READY;
}
// The context a stream belongs to (the current one for the special handles).
API CUresult cuStreamGetCtx(CUstream s, void **ctx) {
  int dev = -1;
  if (const CUresult r = context_entry("cuStreamGetCtx", &dev); r != OK) return r;
  if (!ctx) return INVALID_VALUE;
  const auto st = lookup(s);
  *ctx = &g_ctx_token[st->dev >= 0 ? st->dev : dev];
  return OK;
}
API CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  int dev = -1;
  if (const CUresult r = context_entry("cuStreamWaitEvent", &dev); r != OK) return r;
  const auto ev = find_event(e);
  if (flags != 0 || !ev) return INVALID_HANDLE;
  const std::shared_ptr<Stream> target = lookup(s);
  CUresult captured = OK;
  if (capture_wait(*ev, target, &captured)) return captured;
  std::shared_ptr<Stream> src;
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(ev->mu);
    src = ev->stream;
    ticket = ev->ticket;
  }
  if (!src) return OK;  // never recorded: no-op
  return submit(s, [src, ticket] { src->wait(ticket); });
}
API CUresult cuLaunchHostFunc(CUstream s, void (*fn)(void *), void *user) {
  int dev = -1;
  if (const CUresult r = context_entry("cuLaunchHostFunc", &dev); r != OK) return r;
  if (!fn) return INVALID_VALUE;
  // submit() drops it when the context has hit an error: never called then.
  return submit(
      s,
      [fn, user] {
        t_in_host_fn = true;
        fn(user);
        t_in_host_fn = false;
      },
      kHostNode);
}


}  // extern "C"
