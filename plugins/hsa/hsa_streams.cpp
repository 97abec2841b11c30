// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's streams: queues, submission (packets, copies, host
// operations), failure of a context, and the stream entries (see
// hsa_context.hpp for the stream model; signals are in hsa_signals.cpp,
// transfers in hsa_transfers.cpp, events in hsa_events.cpp).
#include <algorithm>
#include <cstring>
#include <thread>

#include "handle_registry.hpp"
#include "hsa_context.hpp"

namespace gpuhal::hsa {

HsaContext::~HsaContext() {
  stop_host_thread(this);
}

gpuhal_status_t alloc_system(HsaContext *c, uint64_t bytes, void **out) {
  void *p = nullptr;
  if (const gpuhal_status_t call_st = hsa_call(rt().hsa_amd_memory_pool_allocate, "hsa_amd_memory_pool_allocate",
                                               host_agent().system_pool, size_t(bytes), 0u, &p);
      call_st != GPUHAL_SUCCESS)
    return call_st;
  hsa_agent_t agent = c->device->agent;
  const hsa_status_t s = rt().hsa_amd_agents_allow_access(1, &agent, nullptr, p);
  if (s != HSA_STATUS_SUCCESS) {
    rt().hsa_amd_memory_pool_free(p);
    return rt().error(s, "hsa_amd_agents_allow_access");
  }
  *out = p;
  return GPUHAL_SUCCESS;
}

namespace {

void note_error(HsaContext *c, const std::string &what) {
  std::lock_guard<std::mutex> lock(c->error_mu);
  if (c->pending_error.empty()) c->pending_error = what;
}

// The runtime's queue error callback (a kernel fault, a malformed packet):
// the queue is suspended and its packets will never complete.
void queue_error_callback(hsa_status_t status, hsa_queue_t *, void *data) {
  fail_context(static_cast<HsaContext *>(data), "the HSA queue reported an error: " + rt().describe(status) +
                                                    " (the queue is suspended: its work will not complete)");
}

// Writes one 64-byte AQL packet: the body first, then the header and setup
// with a release store, then the doorbell. Waits while the queue is full;
// gives up (false) when the context failed meanwhile (a suspended queue
// never frees a slot).
bool write_packet(hsa_queue_t *q, const void *packet, const std::atomic<bool> &failed) {
  const uint64_t index = rt().hsa_queue_add_write_index_scacq_screl(q, 1);
  while (index - rt().hsa_queue_load_read_index_scacquire(q) >= q->size) {
    if (failed.load()) return false;
    std::this_thread::yield();
  }
  auto *slot = static_cast<uint8_t *>(q->base_address) + (index & (q->size - 1)) * 64;
  std::memcpy(slot + 4, static_cast<const uint8_t *>(packet) + 4, 60);
  uint32_t header_and_setup;
  std::memcpy(&header_and_setup, packet, 4);
  __atomic_store_n(reinterpret_cast<uint32_t *>(slot), header_and_setup, __ATOMIC_RELEASE);
  rt().hsa_signal_store_screlease(q->doorbell_signal, hsa_signal_value_t(index));
  return true;
}

hsa_barrier_and_packet_t barrier_packet(const hsa_signal_t *deps, size_t n, hsa_signal_t completion) {
  hsa_barrier_and_packet_t b{};
  b.header = packet_header(HSA_PACKET_TYPE_BARRIER_AND);
  for (size_t k = 0; k < n && k < 5; ++k) b.dep_signal[k] = deps[k];
  b.completion_signal = completion;
  return b;
}

// The host operation to run next (host_mu held): the earliest of the
// greatest priority whose dependency is done or absent (one operation per
// stream's order is kept: a stream's operations share its priority and run
// in order); else the earliest of all, as before priorities, so that an
// operation never waits here for one queued behind it.
std::deque<HostOp>::iterator next_host_op(std::deque<HostOp> &ops) {
  auto best = ops.end();
  for (auto it = ops.begin(); it != ops.end(); ++it) {
    if (it->dep && !it->dep->done()) continue;
    if (best == ops.end() || it->priority < best->priority) best = it;
  }
  if (best == ops.end() || best->priority == ops.front().priority) return ops.begin();
  return best;
}

void host_thread_main(HsaContext *c) {
  for (;;) {
    HostOp op;
    {
      std::unique_lock<std::mutex> lock(c->host_mu);
      c->host_cv.wait(lock, [&] { return c->host_stop || !c->host_ops.empty(); });
      if (c->host_ops.empty()) return;  // stopping, and drained
      auto next = next_host_op(c->host_ops);
      op = std::move(*next);
      c->host_ops.erase(next);
    }
    if (op.dep) op.dep->wait(&c->failed);
    if (c->failed.load() || (op.dep && op.dep->failed())) {
      // What it waited for failed, or never will complete: it does not run,
      // and its own signal says so to what waits for it.
      if (op.dep && op.dep->failed()) fail_context(c, "an operation a host operation waited for failed");
      if (op.on_skip) op.on_skip();
      rt().hsa_signal_store_screlease(op.done->handle, -1);
      continue;
    }
    // A host operation whose runtime call failed is an ordinary error: the
    // next synchronising call returns it once, and the stream goes on.
    try {
      op.fn();
    } catch (const std::exception &e) {
      note_error(c, std::string("a host operation failed: ") + e.what());
    } catch (...) {
      note_error(c, "a host operation failed");
    }
    rt().hsa_signal_store_screlease(op.done->handle, 0);
  }
}

}  // namespace

void fail_context(HsaContext *c, const std::string &what) {
  {
    std::lock_guard<std::mutex> lock(c->error_mu);
    if (!c->failure.empty()) return;
    c->failure = what;
  }
  c->failed.store(true);
  plugin::log(GPUHAL_LOG_ERROR, "hsa: " + what);
}

namespace {
// Submissions to a failed context are refused (its queues may be suspended).
gpuhal_status_t refuse_if_failed(HsaContext *c, const char *what) {
  return c->failed.load() ? context_failure(c, what) : GPUHAL_SUCCESS;
}
}  // namespace

gpuhal_status_t context_failure(HsaContext *c, const char *entry) {
  std::string what;
  if (!c->failed.load()) {
    {
      std::lock_guard<std::mutex> lock(c->error_mu);
      what.swap(c->pending_error);
    }
    if (what.empty()) return GPUHAL_SUCCESS;
    return fail(GPUHAL_ERROR_LAUNCH_FAILED, std::string(entry) + ": " + what);
  }
  {
    std::lock_guard<std::mutex> lock(c->error_mu);
    what = c->failure;
  }
  return fail(GPUHAL_ERROR_LAUNCH_FAILED, std::string(entry) + ": " + what +
                                              "; the context is unusable until Context::reset()");
}

gpuhal_status_t create_queue(HsaContext *c, HsaStream *s) {
  const uint32_t size = std::max<uint32_t>(64, std::min<uint32_t>(c->device->queue_max_size, 1024));
  if (const gpuhal_status_t call_st =
          hsa_call(rt().hsa_queue_create, "hsa_queue_create", c->device->agent, size, HSA_QUEUE_TYPE_MULTI,
                   queue_error_callback, c, UINT32_MAX, UINT32_MAX, &s->queue);
      call_st != GPUHAL_SUCCESS)
    return call_st;
  if (s->queue->size == 0 || (s->queue->size & (s->queue->size - 1)) || !s->queue->base_address) {
    rt().hsa_queue_destroy(s->queue);
    s->queue = nullptr;
    return fail(GPUHAL_ERROR_DRIVER, "hsa_queue_create returned a queue without a power-of-two size or a ring");
  }
  // Event timing reads the packets' timestamps, which the packet processor
  // writes only for queues with profiling enabled.
  if (rt().hsa_amd_profiling_set_profiler_enabled) {
    const hsa_status_t st = rt().hsa_amd_profiling_set_profiler_enabled(s->queue, 1);
    if (st != HSA_STATUS_SUCCESS)
      plugin::log(GPUHAL_LOG_WARN, "hsa: event timing is unavailable on a stream: " + rt().describe(st));
  }
  return GPUHAL_SUCCESS;
}

void destroy_stream(HsaStream *s) {
  if (!s) return;
  for (Op &op : s->inflight) {
    if (op.done->done()) {
      if (op.on_reap) op.on_reap();
      continue;
    }
    // It never completed (its context failed): the runtime may still write
    // its signal and its buffers (a copy engine), so they are kept, not
    // reused or freed.
    quarantine_signal(op.done);
    if (op.on_reap) new std::function<void()>(std::move(op.on_reap));  // deliberately never run
  }
  s->inflight.clear();
  s->last.reset();
  if (s->queue) rt().hsa_queue_destroy(s->queue);
  release_kernargs(s);
  s->queue = nullptr;
}

void reap(HsaStream *s) {
  while (!s->inflight.empty() && s->inflight.front().done->done()) {
    Op &op = s->inflight.front();
    if (op.done->failed())
      fail_context(s->ctx, std::string(op.what) + " failed (its completion signal went negative)");
    if (op.on_reap) op.on_reap();
    s->inflight.pop_front();
  }
}

HsaStream *resolve_stream(HsaContext *c, gpuhal_stream_t handle) {
  if (!handle || handle == GPUHAL_STREAM_LEGACY) return c->legacy.get();
  if (handle == GPUHAL_STREAM_PER_THREAD) {
    auto &slot = c->per_thread[std::this_thread::get_id()];
    if (!slot) {
      auto s = std::make_unique<HsaStream>();
      s->ctx = c;
      if (create_queue(c, s.get()) != GPUHAL_SUCCESS) {
        c->per_thread.erase(std::this_thread::get_id());
        return nullptr;
      }
      slot = std::move(s);
    }
    return slot.get();
  }
  auto it = c->streams.find(reinterpret_cast<HsaStream *>(handle));
  return it == c->streams.end() ? nullptr : it->second.get();
}

std::vector<SignalRef> dependencies(HsaStream *s, bool include_last) {
  std::vector<SignalRef> deps;
  auto add = [&](const SignalRef &r) {
    if (r && !r->done()) deps.push_back(r);
  };
  if (include_last) add(s->last);
  HsaContext *c = s->ctx;
  if (s->legacy) {
    // The legacy default stream waits for every blocking stream...
    for (auto &kv : c->streams)
      if (kv.second->blocking) add(kv.second->last);
    for (auto &kv : c->per_thread) add(kv.second->last);
  } else if (s->blocking) {
    add(c->legacy->last);  // ...and they wait for it.
  }
  return deps;
}

gpuhal_status_t visible_dependencies(HsaStream *s, std::vector<SignalRef> *out) {
  if (const gpuhal_status_t st = make_visible(s); st != GPUHAL_SUCCESS) return st;
  HsaContext *c = s->ctx;
  if (s->legacy) {
    for (auto &kv : c->streams)
      if (kv.second->blocking)
        if (const gpuhal_status_t st = make_visible(kv.second.get()); st != GPUHAL_SUCCESS) return st;
    for (auto &kv : c->per_thread)
      if (const gpuhal_status_t st = make_visible(kv.second.get()); st != GPUHAL_SUCCESS) return st;
  } else if (s->blocking) {
    if (const gpuhal_status_t st = make_visible(c->legacy.get()); st != GPUHAL_SUCCESS) return st;
  }
  *out = dependencies(s);
  return GPUHAL_SUCCESS;
}

gpuhal_status_t make_visible(HsaStream *s) {
  if (!s || !s->agent_released || !s->queue) return GPUHAL_SUCCESS;
  SignalRef done;
  if (const gpuhal_status_t st = make_signal(1, &done); st != GPUHAL_SUCCESS) return st;
  hsa_barrier_and_packet_t b = barrier_packet(nullptr, 0, done->handle);
  b.header = packet_header(HSA_PACKET_TYPE_BARRIER_AND, HSA_FENCE_SCOPE_AGENT, HSA_FENCE_SCOPE_SYSTEM);
  return submit_packet(s, &b, done, {}, nullptr, "a system-scope release", HSA_FENCE_SCOPE_SYSTEM);
}

gpuhal_status_t submit_packet(HsaStream *s, const void *packet, SignalRef done, std::vector<SignalRef> extra,
                              std::function<void()> on_reap, const char *what, uint16_t release) {
  reap(s);
  if (const gpuhal_status_t st = refuse_if_failed(s->ctx, what); st != GPUHAL_SUCCESS) {
    if (on_reap) on_reap();
    return st;
  }
  std::vector<SignalRef> deps = dependencies(s, !s->last_on_queue);
  for (auto &e : extra)
    if (e && !e->done()) deps.push_back(std::move(e));
  std::vector<hsa_signal_t> handles;
  handles.reserve(deps.size());
  for (const auto &d : deps) handles.push_back(d->handle);
  Op op;
  op.done = done;
  op.keep = std::move(deps);
  op.on_reap = std::move(on_reap);
  op.what = what;
  s->inflight.push_back(std::move(op));  // before the packets: reserve first, then publish
  // Barrier-AND packets take five signals each; with the barrier bit set
  // they complete in order, so a chain of them waits for all.
  bool written = true;
  for (size_t i = 0; i < handles.size() && written; i += 5) {
    const hsa_barrier_and_packet_t b = barrier_packet(handles.data() + i, handles.size() - i, hsa_signal_t{0});
    written = write_packet(s->queue, &b, s->ctx->failed);
  }
  // The fence scopes (see hsa_context.hpp): agent-scope acquire only after
  // a packet of this queue with nothing else to wait for.
  uint8_t bytes[64];
  std::memcpy(bytes, packet, 64);
  const uint16_t acquire = s->last_on_queue && handles.empty() ? HSA_FENCE_SCOPE_AGENT : HSA_FENCE_SCOPE_SYSTEM;
  uint16_t header;
  std::memcpy(&header, bytes, 2);
  header = uint16_t((header & ~((3u << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                                (3u << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE))) |
                    (acquire << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                    (release << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
  std::memcpy(bytes, &header, 2);
  if (written) written = write_packet(s->queue, bytes, s->ctx->failed);
  s->last = std::move(done);
  s->last_on_queue = true;
  s->agent_released = release != HSA_FENCE_SCOPE_SYSTEM;
  return written ? GPUHAL_SUCCESS : refuse_if_failed(s->ctx, what);
}

// An async copy after s's dependencies. on_reap runs once it completed (or
// at once when it could not be submitted).
gpuhal_status_t submit_copy(HsaStream *s, void *dst, hsa_agent_t dst_agent, const void *src, hsa_agent_t src_agent,
                            uint64_t bytes, std::function<void()> on_reap) {
  reap(s);
  SignalRef done;
  gpuhal_status_t st = refuse_if_failed(s->ctx, "hsa_amd_memory_async_copy");
  std::vector<SignalRef> deps;
  if (st == GPUHAL_SUCCESS) st = visible_dependencies(s, &deps);  // a copy engine reads what kernels wrote
  if (st == GPUHAL_SUCCESS) st = make_signal(1, &done);
  if (st == GPUHAL_SUCCESS) {
    std::vector<hsa_signal_t> handles;
    for (const auto &d : deps) handles.push_back(d->handle);
    const hsa_status_t hs =
        rt().hsa_amd_memory_async_copy(dst, dst_agent, src, src_agent, size_t(bytes), uint32_t(handles.size()),
                                       handles.empty() ? nullptr : handles.data(), done->handle);
    if (hs == HSA_STATUS_SUCCESS) {
      Op op;
      op.done = done;
      op.keep = std::move(deps);
      op.on_reap = std::move(on_reap);
      op.what = "hsa_amd_memory_async_copy";
      s->inflight.push_back(std::move(op));
      s->last = std::move(done);
      s->last_on_queue = false;
      return GPUHAL_SUCCESS;
    }
    st = rt().error(hs, "hsa_amd_memory_async_copy");
  }
  if (on_reap) on_reap();
  return st;
}

// A marker on s's queue after s's work and `extra`: what event records,
// event waits and barriers are.
gpuhal_status_t submit_marker(HsaStream *s, std::vector<SignalRef> extra, SignalRef *out) {
  SignalRef done;
  if (const gpuhal_status_t st = make_signal(1, &done); st != GPUHAL_SUCCESS) return st;
  const hsa_barrier_and_packet_t b = barrier_packet(nullptr, 0, done->handle);
  if (out) *out = done;
  return submit_packet(s, &b, done, std::move(extra), nullptr, "a barrier packet");
}

namespace {

void start_host_thread(HsaContext *c) {
  std::lock_guard<std::mutex> lock(c->host_mu);
  if (!c->host_thread.joinable()) c->host_thread = std::thread(host_thread_main, c);
}

}  // namespace

gpuhal_status_t submit_host_op(HsaStream *s, std::function<void()> fn, std::function<void()> on_reap,
                               std::function<void()> on_skip) {
  reap(s);
  if (const gpuhal_status_t st = refuse_if_failed(s->ctx, "a host operation"); st != GPUHAL_SUCCESS) {
    if (on_reap) on_reap();
    return st;
  }
  std::vector<SignalRef> deps;
  if (const gpuhal_status_t st = visible_dependencies(s, &deps); st != GPUHAL_SUCCESS) {  // the host reads them
    if (on_reap) on_reap();
    return st;
  }
  SignalRef dep;
  if (deps.size() == 1) {
    dep = deps[0];
  } else if (deps.size() > 1) {
    // One signal for the host thread to wait on: a marker after them all.
    if (const gpuhal_status_t st = submit_marker(s, deps, &dep); st != GPUHAL_SUCCESS) {
      if (on_reap) on_reap();
      return st;
    }
  }
  SignalRef done;
  if (const gpuhal_status_t st = make_signal(1, &done); st != GPUHAL_SUCCESS) {
    if (on_reap) on_reap();
    return st;
  }
  start_host_thread(s->ctx);
  {
    std::lock_guard<std::mutex> lock(s->ctx->host_mu);
    s->ctx->host_ops.push_back(HostOp{s->priority, dep, done, std::move(fn), std::move(on_skip)});
  }
  s->ctx->host_cv.notify_one();
  Op op;
  op.done = done;
  if (dep) op.keep.push_back(dep);
  op.on_reap = std::move(on_reap);
  op.what = "a host operation";
  s->inflight.push_back(std::move(op));
  s->last = std::move(done);
  s->last_on_queue = false;
  return GPUHAL_SUCCESS;
}

void stop_host_thread(HsaContext *c) {
  {
    std::lock_guard<std::mutex> lock(c->host_mu);
    c->host_stop = true;
  }
  c->host_cv.notify_all();
  if (c->host_thread.joinable()) c->host_thread.join();
}

gpuhal_status_t synchronize_context(HsaContext *c) {
  std::vector<SignalRef> lasts;
  {
    std::lock_guard<std::mutex> lock(c->mu);
    auto add = [&](HsaStream *s) {
      (void)make_visible(s);  // the host looks next (a failure shows as the context's error below)
      if (s && s->last) lasts.push_back(s->last);
    };
    add(c->legacy.get());
    for (auto &kv : c->streams) add(kv.second.get());
    for (auto &kv : c->per_thread) add(kv.second.get());
  }
  for (const auto &s : lasts) s->wait(&c->failed);
  {
    std::lock_guard<std::mutex> lock(c->mu);
    reap(c->legacy.get());
    for (auto &kv : c->streams) reap(kv.second.get());
    for (auto &kv : c->per_thread) reap(kv.second.get());
  }
  return context_failure(c, "context_synchronize");
}

// Waits for s's last operation (c->mu not held), then reaps.
gpuhal_status_t wait_stream(HsaContext *c, HsaStream *s, SignalRef last, const char *entry) {
  if (last) last->wait(&c->failed);
  {
    std::lock_guard<std::mutex> lock(c->mu);
    reap(s);
  }
  return context_failure(c, entry);
}

HsaEvent *find_event(HsaContext *c, gpuhal_event_t e) {
  auto it = c->events.find(reinterpret_cast<HsaEvent *>(e));
  return it == c->events.end() ? nullptr : it->second.get();
}

// ---- streams --------------------------------------------------------------------------------

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

gpuhal_status_t stream_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_stream_t *out) {
  if (const gpuhal_status_t st = plugin::check_create_args("stream_create", out, flags, GPUHAL_STREAM_NON_BLOCKING);
      st != GPUHAL_SUCCESS)
    return st;
  return in_context(ctx, "stream_create", [&](HsaContext *c) -> gpuhal_status_t {
    auto s = std::make_unique<HsaStream>();
    s->ctx = c;
    s->blocking = !(flags & GPUHAL_STREAM_NON_BLOCKING);
    if (const gpuhal_status_t st = create_queue(c, s.get()); st != GPUHAL_SUCCESS) return st;
    std::lock_guard<std::mutex> lock(c->mu);
    try {
      plugin::hand_out_owned(c->streams, s, out);
    } catch (...) {
      destroy_stream(s.get());  // its queue; s itself goes with the unique_ptr
      throw;
    }
    return GPUHAL_SUCCESS;
  });
}

// Pending work still completes: the call waits for it, then releases the
// stream's queue.
// Stream priorities (ABI 1.9): -1 .. 1 onto hsa_amd_queue_priority_t.
gpuhal_status_t context_stream_priority_range(gpuhal_context_t ctx, int32_t *least, int32_t *greatest) {
  return in_context(ctx, "context_stream_priority_range", [&](HsaContext *) -> gpuhal_status_t {
    if (least) *least = 1;
    if (greatest) *greatest = -1;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_create_with_priority(gpuhal_context_t ctx, uint32_t flags, int32_t priority,
                                            gpuhal_stream_t *out) {
  if (const gpuhal_status_t st =
          plugin::check_create_args("stream_create_with_priority", out, flags, GPUHAL_STREAM_NON_BLOCKING);
      st != GPUHAL_SUCCESS)
    return st;
  return in_context(ctx, "stream_create_with_priority", [&](HsaContext *c) -> gpuhal_status_t {
    auto s = std::make_unique<HsaStream>();
    s->ctx = c;
    s->blocking = !(flags & GPUHAL_STREAM_NON_BLOCKING);
    s->priority = std::clamp<int>(priority, -1, 1);  // clamped, as cuStreamCreateWithPriority clamps
    if (const gpuhal_status_t st = create_queue(c, s.get()); st != GPUHAL_SUCCESS) return st;
    if (s->priority != 0) {
      // hsa_amd_queue_priority_t: LOW 0, NORMAL 1 (the default), HIGH 2.
      const gpuhal_status_t st =
          hsa_call(rt().hsa_amd_queue_set_priority, "hsa_amd_queue_set_priority", s->queue, 1 - s->priority);
      if (st != GPUHAL_SUCCESS) {
        destroy_stream(s.get());
        return st;
      }
    }
    std::lock_guard<std::mutex> lock(c->mu);
    try {
      plugin::hand_out_owned(c->streams, s, out);
    } catch (...) {
      destroy_stream(s.get());
      throw;
    }
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_priority(gpuhal_context_t ctx, gpuhal_stream_t stream, int32_t *out) {
  return in_context(ctx, "stream_priority", [&](HsaContext *c) -> gpuhal_status_t {
    if (!out) return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_priority: null output pointer");
    std::lock_guard<std::mutex> lock(c->mu);
    HsaStream *s = resolve_stream(c, stream);
    if (!s) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_priority: invalid stream");
    *out = s->priority;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_destroy(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_context(ctx, "stream_destroy", [&](HsaContext *c) -> gpuhal_status_t {
    std::unique_ptr<HsaStream> owned;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      owned = plugin::take_owned(c->streams, reinterpret_cast<HsaStream *>(stream));
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
      std::lock_guard<std::mutex> lock(c->mu);
      s = resolve_stream(c, stream);
      if (!s) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_synchronize: invalid stream");
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
    std::lock_guard<std::mutex> lock(c->mu);
    HsaStream *s = resolve_stream(c, stream);
    if (!s) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_query: invalid stream");
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
    std::lock_guard<std::mutex> lock(c->mu);
    HsaStream *s = resolve_stream(c, stream);
    HsaEvent *e = find_event(c, event);
    if (!s || !e) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_wait_event: invalid stream or event");
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
    std::lock_guard<std::mutex> lock(c->mu);
    HsaStream *s = resolve_stream(c, stream);
    if (!s) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_barrier: invalid stream");
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
    std::lock_guard<std::mutex> lock(c->mu);
    HsaStream *s = resolve_stream(c, stream);
    if (!s) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_add_callback: invalid stream");
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
