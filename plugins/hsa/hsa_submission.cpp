// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's submission: queues, packets, copies, host operations
// and failure of a context (hsa_stream.hpp has the stream model; the stream
// entries are in hsa_stream.cpp, signals in hsa_signal.cpp, transfers in
// hsa_transfer.cpp, events in hsa_event.cpp).
#include <cstring>
#include <thread>
#include <unordered_map>

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

namespace {
std::mutex g_directory_mu;
std::unordered_map<const HsaStream *, HsaContext *> g_directory;

HsaContext *owner_of(gpuhal_stream_t handle) {
  std::lock_guard<std::mutex> lock(g_directory_mu);
  auto it = g_directory.find(reinterpret_cast<const HsaStream *>(handle));
  return it == g_directory.end() ? nullptr : it->second;
}
}  // namespace

void publish_stream(HsaStream *s) {
  std::lock_guard<std::mutex> lock(g_directory_mu);
  g_directory[s] = s->ctx;
}

void withdraw_stream(HsaStream *s) {
  std::lock_guard<std::mutex> lock(g_directory_mu);
  g_directory.erase(s);
}

StreamLock::StreamLock(HsaContext *c, gpuhal_stream_t handle) : mine_(c->mu) {
  stream_ = resolve_stream(c, handle);
  if (stream_) return;
  mine_.unlock();  // the directory is never looked up under a context's mu
  HsaContext *o = owner_of(handle);
  if (!o || o == c || o->ordinal != c->ordinal) {  // unknown, or of another device
    mine_.lock();
    return;
  }
  theirs_ = std::unique_lock<std::mutex>(o->mu, std::defer_lock);
  std::lock(mine_, theirs_);
  owner_ = o;
  auto it = o->streams.find(reinterpret_cast<HsaStream *>(handle));
  if (it == o->streams.end()) return;  // destroyed meanwhile
  if (o->captures.capturing(it->second.get())) {
    capturing_elsewhere_ = true;
    return;
  }
  stream_ = it->second.get();
}

gpuhal_status_t StreamLock::refuse(const char *entry) const {
  if (capturing_elsewhere_)
    return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
                std::string(entry) + ": the stream is another context's (another runtime's) and is capturing there; "
                                     "work for its capture goes through its own context");
  return fail(GPUHAL_ERROR_INVALID_HANDLE, std::string(entry) + ": invalid stream");
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
  // The fence scopes (see submit_packet in hsa_stream.hpp): agent-scope acquire only after
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
  return submit_engine_copy(
      s, "hsa_amd_memory_async_copy",
      [&](uint32_t n, const hsa_signal_t *deps, hsa_signal_t done) {
        return rt().hsa_amd_memory_async_copy(dst, dst_agent, src, src_agent, size_t(bytes), n, deps, done);
      },
      std::move(on_reap));
}

gpuhal_status_t submit_engine_copy(HsaStream *s, const char *what,
                                   const std::function<hsa_status_t(uint32_t, const hsa_signal_t *, hsa_signal_t)> &issue,
                                   std::function<void()> on_reap) {
  reap(s);
  SignalRef done;
  gpuhal_status_t st = refuse_if_failed(s->ctx, what);
  std::vector<SignalRef> deps;
  if (st == GPUHAL_SUCCESS) st = visible_dependencies(s, &deps);  // a copy engine reads what kernels wrote
  if (st == GPUHAL_SUCCESS) st = make_signal(1, &done);
  if (st == GPUHAL_SUCCESS) {
    std::vector<hsa_signal_t> handles;
    for (const auto &d : deps) handles.push_back(d->handle);
    const hsa_status_t hs =
        issue(uint32_t(handles.size()), handles.empty() ? nullptr : handles.data(), done->handle);
    if (hs == HSA_STATUS_SUCCESS) {
      Op op;
      op.done = done;
      op.keep = std::move(deps);
      op.on_reap = std::move(on_reap);
      op.what = what;
      s->inflight.push_back(std::move(op));
      s->last = std::move(done);
      s->last_on_queue = false;
      return GPUHAL_SUCCESS;
    }
    st = rt().error(hs, what);
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
  HsaContext *owner = s->ctx;  // c's, or another runtime's context (StreamLock)
  if (last) last->wait(&owner->failed);
  {
    std::lock_guard<std::mutex> lock(owner->mu);
    reap(s);
  }
  if (owner != c)
    if (const gpuhal_status_t st = context_failure(owner, entry); st != GPUHAL_SUCCESS) return st;
  return context_failure(c, entry);
}

HsaEvent *find_event(HsaContext *c, gpuhal_event_t e) {
  auto it = c->events.find(reinterpret_cast<HsaEvent *>(e));
  return it == c->events.end() ? nullptr : it->second.get();
}

}  // namespace gpuhal::hsa
