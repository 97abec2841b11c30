// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_stream.hpp"

#include <chrono>

namespace gpuhal::host {

namespace {
thread_local bool t_on_worker = false;

}  // namespace

bool on_worker_thread() {
  return t_on_worker;
}

std::shared_mutex &device_pages_mutex() {
  // A plain static: the plugin is unloaded once its threads are stopped,
  // and destroying a pthread rwlock frees nothing (a leaked heap copy would
  // be a leak once the plugin is unloaded).
  static std::shared_mutex m;
  return m;
}

void reset_device_pages_mutex_after_fork() {
  new (&device_pages_mutex()) std::shared_mutex();
}

void Progress::wait(const StreamState &stream, uint64_t ticket) {
  if (stream.completed.load(std::memory_order_seq_cst) >= ticket) return;
  // Short operations finish within microseconds: spin that long before
  // sleeping (a futex sleep and wake-up costs more than the operation).
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicroseconds);
  for (unsigned i = 1; stream.completed.load(std::memory_order_seq_cst) < ticket; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) {
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
  auto self = shared_from_this();
  worker_ = std::thread([self] { self->loop(); });
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
    __builtin_ia32_pause();
#endif
  }
  mu.lock();
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
  }
  if (wake) cv_.notify_one();  // only a sleeping worker needs the system call
}

void StreamState::loop() {
  t_on_worker = true;
  std::vector<Op> batch;
  for (;;) {
    // Spin a little before sleeping: a submitter in a burst then finds the
    // worker awake and makes no system call to wake it (the cost of an
    // asynchronous submit is then a lock and a push).
    if (!has_work_.load(std::memory_order_acquire)) {
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
    for (int i = 0; i < kGatherPauses; ++i) __builtin_ia32_pause();
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
        std::shared_lock<std::shared_mutex> pages(device_pages_mutex());
        op.run(ok);
      }
      completed.fetch_add(1, std::memory_order_seq_cst);
      progress->notify();
    }
    batch.clear();
  }
}

void StreamState::stop() {
  const bool own_thread = worker_.joinable() && std::this_thread::get_id() == worker_.get_id();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (own_thread) discard_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
  if (!worker_.joinable()) return;
  if (own_thread)
    worker_.detach();
  else
    worker_.join();
}

void StreamState::synchronize() {
  progress->wait(*this, enqueued_snapshot());
}

}  // namespace gpuhal::host
