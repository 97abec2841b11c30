// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_stream.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <thread>

#include "fork_thread_gate.hpp"
#include "host_plugin.hpp"
#include "host_entries.hpp"
#include "host_kernel_runner.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;

__thread bool t_host_stream_worker GPUHAL_HOST_FAST_TLS = false;

PagesLock &device_pages_mutex() {
  // A plain static: the plugin is unloaded once its threads are stopped,
  // and destroying the lock frees nothing (a leaked heap copy would be a
  // leak once the plugin is unloaded).
  static PagesLock m;
  return m;
}

void reset_device_pages_mutex_after_fork() {
  new (&device_pages_mutex()) PagesLock();
}

namespace {

// Whether a waiter may spin past Progress::kSpinMicroseconds: only while a
// core is free for it, i.e. on a machine with more than one hardware thread
// and while no kernel (or large copy) is spread over the thread pool, which
// takes every core.
bool core_free_for_spinning() {
  static const bool several = std::thread::hardware_concurrency() > 1;
  return several && ThreadPool::spread_jobs() == 0;
}

}  // namespace

void Progress::wait(const StreamState &stream, uint64_t ticket) {
  if (stream.completed.load(std::memory_order_seq_cst) >= ticket) return;
  // Spin before sleeping: a futex sleep and its wake-up cost more than a
  // short operation, and tens of microseconds on a virtual machine (a 1 MiB
  // device-to-device copy with its synchronize measured 91 us when waiters
  // slept after 5 us, 42 us when they spun up to 100 us). Past the short
  // spin the waiter goes on only while a core is free for it, so that it
  // never takes a core from a kernel's work-groups.
  const auto start = std::chrono::steady_clock::now();
  const auto short_spin = start + std::chrono::microseconds(kSpinMicroseconds);
  const auto long_spin = start + std::chrono::microseconds(kLongSpinMicroseconds);
  for (unsigned i = 1; stream.completed.load(std::memory_order_seq_cst) < ticket; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i % 64 != 0) continue;
    const auto now = std::chrono::steady_clock::now();
    if (now < short_spin || (now < long_spin && core_free_for_spinning())) continue;
    // Announced before the last check (both sequentially consistent):
    // either notify() sees a waiter, or the check sees the completion.
    waiters.fetch_add(1, std::memory_order_seq_cst);
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stream.completed.load(std::memory_order_seq_cst) >= ticket; });
    }
    waiters.fetch_sub(1, std::memory_order_seq_cst);
    return;
  }
}

void Progress::notify() {
  // Called after a sequentially consistent increment of a completed count.
  if (waiters.load(std::memory_order_seq_cst) == 0) return;
  // Taking the mutex orders the notify after a waiter's predicate check.
  { std::lock_guard<std::mutex> lock(mu); }
  cv.notify_all();
}

StreamState::StreamState(std::shared_ptr<Progress> p, bool nb, bool def)
    : progress(std::move(p)), non_blocking(nb), is_default(def) {}

StreamState::~StreamState() {
  if (worker_.joinable()) worker_.detach();
}

void StreamState::start() {
  // The worker holds a reference, so the state outlives a detached worker.
  // Started and (in stop) joined through the fork gate
  // (fork_thread_gate.hpp): a fork never lands inside either.
  auto self = shared_from_this();
  worker_ = plugin::start_thread([self] { self->loop(); });
}

namespace {

// The stream's queue mutex is held for a push or a swap only (a few
// nanoseconds), by one submitter and the worker: spinning briefly beats
// sleeping in the kernel and waking up again (a futex round trip costs more
// than many submits).
void lock_spinning(std::mutex &mu) {
  for (int i = 0; i < 128; ++i) {
    if (mu.try_lock()) return;
#if defined(__x86_64__) || defined(__i386__)
    // A few pauses between attempts: each try_lock takes the mutex's cache
    // line away from its holder, whose unlock then waits to get it back.
    for (int k = 0; k < 8; ++k) __builtin_ia32_pause();
#endif
  }
  mu.lock();
}

#if defined(__x86_64__)
bool has_prefetchw() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  // CPUID 0x80000001, ECX bit 8: PREFETCHW (Intel since Broadwell, AMD).
  return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & (1u << 8)) != 0;
}
// Read once, when the plugin is loaded (no guard on the submit path).
const bool g_has_prefetchw = has_prefetchw();
#endif

// Asks for the cache line of `p` in a state that can be written (PREFETCHW
// where the processor has it, a plain prefetch elsewhere): a hint only.
inline __attribute__((always_inline)) void prefetch_for_write(const char *p) {
#if defined(__x86_64__)
  if (g_has_prefetchw) {
    __asm__ volatile("prefetchw %0" : : "m"(*p));
    return;
  }
#endif
  __builtin_prefetch(p, 1);
}

}  // namespace

void StreamState::push(Op op) {
  bool wake;
  {
    lock_spinning(mu_);
    std::lock_guard<std::mutex> lock(mu_, std::adopt_lock);
    queue_.push_back(std::move(op));
    has_work_.store(true, std::memory_order_release);
    wake = sleeping_;
    // The next operation's slot: the worker read it a batch ago, so writing
    // it means taking its cache line back from the worker's core, and the
    // unlock below (a locked instruction) would wait for that. Asked for
    // now, the line arrives before the next push (an asynchronous submit
    // measured 215 -> 140 ns).
    if (queue_.size() < queue_.capacity()) {
      const char *next = reinterpret_cast<const char *>(queue_.data() + queue_.size());
      prefetch_for_write(next);
      prefetch_for_write(next + sizeof(Op) - 1);
    }
  }
  if (wake) cv_.notify_one();  // only a sleeping worker needs the system call
}

void StreamState::loop() {
  t_host_stream_worker = true;
  // A lesser priority: a higher nice value for this thread alone (Linux
  // applies setpriority(PRIO_PROCESS, tid) to the thread). Raising it needs
  // no privilege; failing to is not an error (the stream still works).
  if (priority > kGreatestPriority)
    (void)setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), priority * kNicePerStep);
  std::vector<Op> batch;
  int gather = kGatherPauses;
  for (;;) {
    // Spin a little before sleeping: a submitter in a burst then finds the
    // worker awake and makes no system call to wake it (the cost of an
    // asynchronous submit is then a lock and a push).
    if (has_work_.load(std::memory_order_acquire)) {
      // Work arrived while the last batch ran: a burst. Gather longer each
      // time (up to kMaxGatherPauses, about 10 us), so that the submitter
      // finds the queue's lock and cache line its own instead of meeting
      // the worker on them at every operation.
      gather = std::min(gather * 2, kMaxGatherPauses);
    } else {
      gather = kGatherPauses;
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicroseconds);
      for (unsigned i = 1; !has_work_.load(std::memory_order_acquire); ++i) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) break;
      }
    }
    // Work has arrived: let a burst of submits gather for a moment (16
    // pauses, about 0.4 us), so that the submitter and the worker meet on
    // the mutex once per batch rather than once per operation. Measured on
    // 2 cores: an asynchronous submit 220-700 ns -> about 145 ns; an
    // operation's round trip (submit + synchronize) about 0.7 us.
#if defined(__x86_64__) || defined(__i386__)
    for (int i = 0; i < gather; ++i) __builtin_ia32_pause();
#endif
    {
      lock_spinning(mu_);
      std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
      sleeping_ = true;
      cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
      sleeping_ = false;
      if (queue_.empty()) return;
      // Everything queued so far, under one lock: submitters and the worker
      // meet on the mutex once per batch, not once per operation.
      batch.swap(queue_);
      has_work_.store(false, std::memory_order_relaxed);
    }
    for (Op &op : batch) {
      const bool ok = !discard_.load(std::memory_order_acquire);
      if (ok)
        for (const Dep &d : op.deps) progress->wait(*d.stream, d.ticket);
      if (op.run) {
        std::shared_lock<PagesLock> pages(device_pages_mutex());
        op.run(ok);
      }
      completed.fetch_add(1, std::memory_order_seq_cst);
      // After the operation's effects (release): a reader that sees the
      // count drop sees them.
      if (counts_busy() && outstanding.fetch_sub(1, std::memory_order_acq_rel) == 1)
        progress->busy_blocking.fetch_sub(1, std::memory_order_acq_rel);
      progress->notify();
    }
    batch.clear();
  }
}

void StreamState::stop() {
  const bool own_thread = worker_.joinable() && std::this_thread::get_id() == worker_.get_id();
  auto tell_to_return = [&] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      if (own_thread) discard_.store(true, std::memory_order_release);
    }
    cv_.notify_all();
  };
  if (!worker_.joinable() || own_thread) {
    tell_to_return();
    if (own_thread) worker_.detach();
    return;
  }
  plugin::end_thread(worker_, tell_to_return);
}

void StreamState::synchronize() {
  progress->wait(*this, enqueued_snapshot());
}

// ---- the stream entries of the plugin table ------------------------------------------------------------

namespace {

// A wait of `s` for `e` as capture sees it (capture_book.hpp): *handled
// when recorded, joined or refused there.
gpuhal_status_t wait_in_capture(HostContext *c, const std::shared_ptr<StreamState> &s, gpuhal_stream_t handle,
                                const std::shared_ptr<HostEvent> &e, const char *entry, bool *handled) {
  *handled = false;
  if (!c->captures.any()) return GPUHAL_SUCCESS;
  bool recorded_outside;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    recorded_outside = e->ticket != 0;
  }
  return c->captures.wait(s.get(), e.get(), recorded_outside, default_stream_handle(handle),
                          !s->non_blocking && !s->is_default, entry, handled);
}

}  // namespace

namespace {

// stream_create and stream_create_with_priority: `priority` clamped into
// the range, as cuStreamCreateWithPriority clamps it.
gpuhal_status_t create_stream(gpuhal_context_t ctx, const char *entry, uint32_t flags, int32_t priority,
                              gpuhal_stream_t *out) {
  return in_context(ctx, entry, [&](HostContext *c) -> gpuhal_status_t {
    const int p = std::clamp<int>(priority, StreamState::kGreatestPriority, StreamState::kLeastPriority);
    *out = c->create_stream((flags & GPUHAL_STREAM_NON_BLOCKING) != 0, p);
    return GPUHAL_SUCCESS;
  });
}

}  // namespace

gpuhal_status_t stream_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_stream_t *out) {
  return create_stream(ctx, "stream_create", flags, 0, out);
}

gpuhal_status_t context_stream_priority_range(gpuhal_context_t ctx, int32_t *least, int32_t *greatest) {
  return in_context(ctx, "context_stream_priority_range", [&](HostContext *) -> gpuhal_status_t {
    if (least) *least = StreamState::kLeastPriority;
    if (greatest) *greatest = StreamState::kGreatestPriority;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_create_with_priority(gpuhal_context_t ctx, uint32_t flags, int32_t priority,
                                            gpuhal_stream_t *out) {
  return create_stream(ctx, "stream_create_with_priority", flags, priority, out);
}

gpuhal_status_t stream_priority(gpuhal_context_t ctx, gpuhal_stream_t stream, int32_t *out) {
  return in_context(ctx, "stream_priority", [&](HostContext *c) -> gpuhal_status_t {
    std::shared_ptr<StreamState> s = c->stream(stream);
    if (!s) return bad_stream("stream_priority");
    *out = s->priority;
    return GPUHAL_SUCCESS;
  });
}

// ABI 1.15: context_synchronize waits for the context's own streams only;
// another context's stream (another runtime's, StreamDirectory) is 0, as is
// a handle that is no stream.
gpuhal_status_t context_waits_for_stream(gpuhal_context_t ctx, gpuhal_stream_t stream, int32_t *out) {
  return in_context(ctx, "context_waits_for_stream", [&](HostContext *c) -> gpuhal_status_t {
    *out = c->owns_stream(stream) ? 1 : 0;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t stream_destroy(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_context(ctx, "stream_destroy", [&](HostContext *c) -> gpuhal_status_t {
    if (!stream || stream == GPUHAL_STREAM_LEGACY || stream == GPUHAL_STREAM_PER_THREAD)
      return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_destroy: a default stream cannot be destroyed");
    return c->destroy_stream(stream) ? GPUHAL_SUCCESS
                                     : fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_destroy: invalid stream handle");
  });
}

gpuhal_status_t stream_synchronize(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_context(ctx, "stream_synchronize", [&](HostContext *c) -> gpuhal_status_t {
    if (on_worker_thread()) return would_deadlock("stream_synchronize");
    std::shared_ptr<StreamState> s = c->stream(stream);
    if (!s) return bad_stream("stream_synchronize");
    if (gpuhal_status_t st = c->captures.refusal(s.get(), s->is_default, "stream_synchronize")) return st;
    if (gpuhal_status_t st = c->captures.refuse(s.get(), "stream_synchronize", "synchronising a capturing stream"))
      return st;
    s->synchronize();
    return kernel_failure(c);
  });
}

gpuhal_status_t stream_query(gpuhal_context_t ctx, gpuhal_stream_t stream) {
  return in_stream(ctx, stream, "stream_query",
                   [&](HostContext *c, const std::shared_ptr<StreamState> &s) -> gpuhal_status_t {
                     if (gpuhal_status_t st = c->captures.refuse(s.get(), "stream_query", "querying a capturing stream"))
                       return st;
                     return s->idle() ? GPUHAL_SUCCESS : GPUHAL_NOT_READY;
                   });
}

gpuhal_status_t stream_wait_event(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_event_t event) {
  return in_stream(ctx, stream, "stream_wait_event",
                   [&](HostContext *c, const std::shared_ptr<StreamState> &s) -> gpuhal_status_t {
                     auto e = c->event(event);
                     if (!e) return fail(GPUHAL_ERROR_INVALID_HANDLE, "stream_wait_event: invalid event handle");
                     bool handled = false;
                     if (gpuhal_status_t st = wait_in_capture(c, s, stream, e, "stream_wait_event", &handled))
                       return st;
                     if (handled) return GPUHAL_SUCCESS;
                     Dep d;
                     if (!event_dep(e, &d)) return GPUHAL_SUCCESS;  // never recorded: nothing to wait for
                     c->submit(s, nullptr, {d});
                     return GPUHAL_SUCCESS;
                   });
}

gpuhal_status_t stream_add_callback(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_host_fn fn, void *user) {
  return in_stream(ctx, stream, "stream_add_callback",
                   [&](HostContext *c, const std::shared_ptr<StreamState> &s) -> gpuhal_status_t {
                     if (!fn) return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_add_callback: null function");
                     c->submit(s,
                               [fn, user](bool ok) { fn(user, ok ? GPUHAL_SUCCESS : GPUHAL_ERROR_CONTEXT_DESTROYED); });
                     return GPUHAL_SUCCESS;
                   });
}

gpuhal_status_t stream_barrier(gpuhal_context_t ctx, gpuhal_stream_t stream, const gpuhal_event_t *events,
                               uint32_t count, uint32_t flags) {
  return in_stream(ctx, stream, "stream_barrier",
                   [&](HostContext *c, const std::shared_ptr<StreamState> &s) -> gpuhal_status_t {
                     if (flags & ~GPUHAL_BARRIER_ALL_PRIOR_WORK)
                       return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_barrier: unknown flags " + hex(flags));
                     if (count && !events) return fail(GPUHAL_ERROR_INVALID_VALUE, "stream_barrier: null event list");
                     if (flags & GPUHAL_BARRIER_ALL_PRIOR_WORK)
                       if (gpuhal_status_t st = c->captures.refuse(
                               s.get(), "stream_barrier",
                               "waiting for all prior work of the context (GPUHAL_BARRIER_ALL_PRIOR_WORK)"))
                         return st;
                     std::vector<Dep> deps;
                     for (uint32_t i = 0; i < count; ++i) {
                       auto e = c->event(events[i]);
                       if (!e)
                         return fail(GPUHAL_ERROR_INVALID_HANDLE,
                                     "stream_barrier: invalid event handle at index " + std::to_string(i));
                       bool handled = false;
                       if (gpuhal_status_t st = wait_in_capture(c, s, stream, e, "stream_barrier", &handled))
                         return st;
                       Dep d;
                       if (!handled && event_dep(e, &d)) deps.push_back(d);
                     }
                     if (c->captures.capturing(s.get())) {
                       if (!deps.empty())  // the stream joined a capture for one event, then met an outside one
                         if (gpuhal_status_t st = c->captures.refuse(s.get(), "stream_barrier",
                                                                     "waiting for work outside the capture"))
                           return st;
                       return GPUHAL_SUCCESS;  // the waits are recorded
                     }
                     if (flags & GPUHAL_BARRIER_ALL_PRIOR_WORK)
                       for (auto &d : c->all_prior_work()) deps.push_back(d);
                     c->submit(s, nullptr, std::move(deps));
                     return GPUHAL_SUCCESS;
                   });
}

// ---- StreamDirectory ----------------------------------------------------------

void StreamDirectory::add(const std::shared_ptr<StreamState> &s, const HostDevice *device) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_[s.get()] = {s, device};
}

void StreamDirectory::remove(const StreamState *s) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.erase(s);
}

std::shared_ptr<StreamState> StreamDirectory::find(gpuhal_stream_t handle, const HostDevice *device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(reinterpret_cast<const StreamState *>(handle));
  if (it == streams_.end() || it->second.second != device) return nullptr;
  return it->second.first.lock();
}

}  // namespace gpuhal::host
