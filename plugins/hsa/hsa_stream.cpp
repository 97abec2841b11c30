// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's stream entries: create (with a priority), destroy,
// synchronize, query, waits, barriers and callbacks, each with the capture
// rules of plugins/common/capture_book.hpp (hsa_submission.cpp has the queues
// and the submission they use).
#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "handle_registry.hpp"
#include "hsa_context.hpp"

namespace gpuhal::hsa {

namespace {

// What synchronises or queries `s` (c->mu held): the legacy stream's
// capture rule, then a capturing stream's refusal (capture_book.hpp).
gpuhal_status_t refuse_synchronising(HsaContext *c, HsaStream *s, const char *entry, const char *what) {
  if (const gpuhal_status_t st = c->captures.refusal(s, s->legacy, entry); st != GPUHAL_SUCCESS) return st;
  return c->captures.refuse(s, entry, what);
}

// A wait of `s` for `e` as capture sees it (c->mu held): *handled when
// recorded, joined or refused there.
gpuhal_status_t wait_in_capture(HsaContext *c, HsaStream *s, gpuhal_stream_t handle, HsaEvent *e, const char *entry,
                                bool *handled) {
  return c->captures.wait(s, e, e->signal != nullptr, plugin::default_stream_handle(handle), s->blocking && !s->legacy,
                          entry, handled);
}

}  // namespace

namespace {

// stream_create and stream_create_with_priority: a stream with its own
// queue, of `priority` (-1 .. 1, clamped, as cuStreamCreateWithPriority
// clamps) mapped onto hsa_amd_queue_priority_t (LOW 0, NORMAL 1 = the
// default, HIGH 2).
gpuhal_status_t create_stream(gpuhal_context_t ctx, const char *entry, uint32_t flags, int32_t priority,
                              gpuhal_stream_t *out) {
  return in_context(ctx, entry, [&](HsaContext *c) -> gpuhal_status_t {
    auto s = std::make_unique<HsaStream>();
    s->ctx = c;
    s->blocking = !(flags & GPUHAL_STREAM_NON_BLOCKING);
    s->priority = std::clamp<int>(priority, -1, 1);
    if (const gpuhal_status_t st = create_queue(c, s.get()); st != GPUHAL_SUCCESS) return st;
    if (s->priority != 0) {
      const gpuhal_status_t st =
          hsa_call(rt().hsa_amd_queue_set_priority, "hsa_amd_queue_set_priority", s->queue, 1 - s->priority);
      if (st != GPUHAL_SUCCESS) {
        destroy_stream(s.get());
        return st;
      }
    }
    std::lock_guard<std::mutex> lock(c->mu);
    HsaStream *made = s.get();
    try {
      publish_stream(made);
      plugin::hand_out_owned(c->streams, s, out);  // throws before it takes s, or not at all
    } catch (...) {
      withdraw_stream(made);
      destroy_stream(made);  // its queue; s itself goes with the unique_ptr
      throw;
    }
    return GPUHAL_SUCCESS;
  });
}

}  // namespace

gpuhal_status_t stream_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_stream_t *out) {
  return create_stream(ctx, "stream_create", flags, 0, out);
}

// Stream priorities (ABI 1.9): -1 (high) .. 1 (low).
gpuhal_status_t context_stream_priority_range(gpuhal_context_t ctx, int32_t *least, int32_t *greatest) {
  return in_context(ctx, "context_stream_priority_range", [&](HsaContext *) -> gpuhal_status_t {
    if (least) *least = 1;
    if (greatest) *greatest = -1;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_create_with_priority(gpuhal_context_t ctx, uint32_t flags, int32_t priority,
                                            gpuhal_stream_t *out) {
  return create_stream(ctx, "stream_create_with_priority", flags, priority, out);
}

gpuhal_status_t stream_priority(gpuhal_context_t ctx, gpuhal_stream_t stream, int32_t *out) {
  return in_context(ctx, "stream_priority", [&](HsaContext *c) -> gpuhal_status_t {
    StreamLock lock(c, stream);
    HsaStream *s = lock.stream();
    if (!s) return lock.refuse("stream_priority");
    *out = s->priority;
    return GPUHAL_SUCCESS;
  });
}

// Pending work still completes: the call waits for it, then releases the
// stream's queue.
gpuhal_status_t stream_destroy(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_context(ctx, "stream_destroy", [&](HsaContext *c) -> gpuhal_status_t {
    std::unique_ptr<HsaStream> owned;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      owned = plugin::take_owned(c->streams, reinterpret_cast<HsaStream *>(stream));
      if (owned) withdraw_stream(owned.get());
    }
    if (!owned) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_destroy: not a stream created in this context");
    c->captures.stream_destroyed(owned.get());
    if (owned->last) owned->last->wait(&c->failed);
    {
      std::lock_guard<std::mutex> lock(c->mu);
      reap(owned.get());
    }
    destroy_stream(owned.get());
    return context_failure(c, "stream_destroy");
  });
}

gpuhal_status_t stream_synchronize(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_context(ctx, "stream_synchronize", [&](HsaContext *c) -> gpuhal_status_t {
    SignalRef last;
    HsaStream *s = nullptr;
    {
      StreamLock lock(c, stream);
      s = lock.stream();
      if (!s) return lock.refuse("stream_synchronize");
      if (const gpuhal_status_t st = refuse_synchronising(c, s, "stream_synchronize", "synchronising a capturing stream");
          st != GPUHAL_SUCCESS)
        return st;
      if (const gpuhal_status_t st = make_visible(s); st != GPUHAL_SUCCESS) return st;  // the host looks next
      last = s->last;
    }
    return wait_stream(c, s, last, "stream_synchronize");
  });
}

gpuhal_status_t stream_query(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_context(ctx, "stream_query", [&](HsaContext *c) -> gpuhal_status_t {
    StreamLock lock(c, stream);
    HsaStream *s = lock.stream();
    if (!s) return lock.refuse("stream_query");
    if (const gpuhal_status_t st = refuse_synchronising(c, s, "stream_query", "querying a capturing stream");
        st != GPUHAL_SUCCESS)
      return st;
    if (const gpuhal_status_t st = make_visible(s); st != GPUHAL_SUCCESS) return st;  // idle means visible
    if (s->last && !s->last->done() && !c->failed.load()) return GPUHAL_NOT_READY;
    reap(s);
    return context_failure(c, "stream_query");
  });
}

gpuhal_status_t stream_wait_event(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_event_t event) {
  return in_context(ctx, "stream_wait_event", [&](HsaContext *c) -> gpuhal_status_t {
    StreamLock lock(c, stream);
    HsaStream *s = lock.stream();
    if (!s) return lock.refuse("stream_wait_event");
    HsaEvent *e = find_event(c, event);
    if (!e) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_wait_event: invalid event");
    if (const gpuhal_status_t st = c->captures.refusal(s, s->legacy, "stream_wait_event"); st != GPUHAL_SUCCESS)
      return st;
    bool handled = false;
    if (const gpuhal_status_t st = wait_in_capture(c, s, stream, e, "stream_wait_event", &handled);
        st != GPUHAL_SUCCESS || handled)
      return st;
    if (!e->signal || e->signal->done()) return GPUHAL_SUCCESS;
    return submit_marker(s, {e->signal}, nullptr);
  });
}

// Barrier-AND packets on the stream's queue carrying the events' signals
// (and, for all prior work, every stream's last signal), five per packet.
gpuhal_status_t stream_barrier(gpuhal_context_t ctx, gpuhal_stream_t stream, const gpuhal_event_t *events,
                               uint32_t count, uint32_t flags) {
  if (count && !events) return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_barrier: null event list");
  if (flags & ~GPUHAL_BARRIER_ALL_PRIOR_WORK) return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_barrier: unknown flags");
  return in_context(ctx, "stream_barrier", [&](HsaContext *c) -> gpuhal_status_t {
    StreamLock lock(c, stream);
    HsaStream *s = lock.stream();
    if (!s) return lock.refuse("stream_barrier");
    if (const gpuhal_status_t st = c->captures.refusal(s, s->legacy, "stream_barrier"); st != GPUHAL_SUCCESS) return st;
    for (uint32_t i = 0; i < count; ++i)
      if (!find_event(c, events[i])) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_barrier: invalid event");
    if (flags & GPUHAL_BARRIER_ALL_PRIOR_WORK)
      if (const gpuhal_status_t st = c->captures.refuse(
              s, "stream_barrier", "waiting for all prior work of the context (GPUHAL_BARRIER_ALL_PRIOR_WORK)");
          st != GPUHAL_SUCCESS)
        return st;
    std::vector<SignalRef> extra;
    for (uint32_t i = 0; i < count; ++i) {
      HsaEvent *e = find_event(c, events[i]);
      bool handled = false;
      if (const gpuhal_status_t st = wait_in_capture(c, s, stream, e, "stream_barrier", &handled);
          st != GPUHAL_SUCCESS)
        return st;
      if (!handled && e->signal && !e->signal->done()) extra.push_back(e->signal);
    }
    if (c->captures.capturing(s)) {
      if (!extra.empty())  // the stream joined a capture for one event, then met an outside one
        if (const gpuhal_status_t st = c->captures.refuse(s, "stream_barrier", "waiting for work outside the capture");
            st != GPUHAL_SUCCESS)
          return st;
      return GPUHAL_SUCCESS;  // the waits are recorded
    }
    if (flags & GPUHAL_BARRIER_ALL_PRIOR_WORK) {
      auto add = [&](HsaStream *o) {
        if (o != s && o->last && !o->last->done()) extra.push_back(o->last);
      };
      add(c->legacy.get());
      for (auto &kv : c->streams) add(kv.second.get());
      for (auto &kv : c->per_thread) add(kv.second.get());
    }
    if (extra.empty()) return GPUHAL_SUCCESS;
    return submit_marker(s, std::move(extra), nullptr);
  });
}

gpuhal_status_t stream_add_callback(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_host_fn fn, void *user) {
  if (!fn) return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_add_callback: null function");
  return in_context(ctx, "stream_add_callback", [&](HsaContext *c) -> gpuhal_status_t {
    StreamLock lock(c, stream);
    HsaStream *s = lock.stream();
    if (!s) return lock.refuse("stream_add_callback");
    if (const gpuhal_status_t st = c->captures.refusal(s, s->legacy, "stream_add_callback"); st != GPUHAL_SUCCESS)
      return st;
    // Recorded: run at each launch of the graph, which owns `user` (the
    // core's); nothing to release when a launch fails.
    if (record_in_capture(c, s, [fn, user](HsaStream *t) {
          return submit_host_op(t, [fn, user] { fn(user, GPUHAL_SUCCESS); }, nullptr);
        }))
      return GPUHAL_SUCCESS;
    // A callback the failed context will not run is released (the core
    // frees it without running it).
    return submit_host_op(
        s, [fn, user] { fn(user, GPUHAL_SUCCESS); }, nullptr, [fn, user] { fn(user, GPUHAL_ERROR_LAUNCH_FAILED); });
  });
}

}  // namespace gpuhal::hsa
