// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The deferred deallocation queue of one context (Numba's _PendingDeallocs).
//
// Releases (device frees, stream and event destruction, user-supplied
// releases) are queued instead of run at once, so that dropping handles does
// not synchronise the device. The queue is flushed when it holds more than
// `max_count` items or more than `max_bytes` bytes, on out-of-memory (then
// the allocation is retried once), explicitly, and when the context goes.
// While any DeferCleanup scope is active nothing is flushed; leaving the
// outermost scope flushes if the limits are exceeded.
//
// Flushing takes what is queued, waits for all work of the context (the
// releases taken may still be in use by it), then runs them in FIFO order. A release that
// fails (throws) stops the flush: it is reported to the error handler
// (default: logged) and the remaining items stay queued. Thread-safe; one
// flush runs at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "gpuhal/error.hpp"

namespace gpuhal::detail {

class DeallocQueue {
 public:
  struct Item {
    std::function<void()> release;  // throws gpuhal::Error (or anything) on failure
    uint64_t bytes = 0;
    // 0, or the context generation of what `release` frees: the item is
    // skipped when the context was reset since (the reset freed it). Kept
    // here, not in the closure, so that a device free's closure (context
    // and pointer) fits std::function's inline storage.
    uint64_t generation = 0;
  };
  using Synchronize = std::function<void()>;  // throws on failure
  using ErrorHandler = std::function<void(const Error &)>;

  // `generation`: the context's current generation (read when an item runs).
  DeallocQueue(uint64_t max_count, uint64_t max_bytes, Synchronize sync, ErrorHandler handler,
               const std::atomic<uint64_t> *generation = nullptr);

  // Queues `item`; flushes when over a limit and not deferred, and not on a
  // thread running a stream callback (the flush synchronises and calls the
  // driver, which a callback must not do: the item waits for the next flush
  // on another thread).
  void add(Item item);

  // Marks the calling thread as running a stream callback while alive.
  class CallbackScope {
   public:
    CallbackScope();
    ~CallbackScope();
    CallbackScope(const CallbackScope &) = delete;
    CallbackScope &operator=(const CallbackScope &) = delete;

   private:
    bool outer_;
  };
  static bool in_callback();
  // Runs the queue unless deferred (or `force`). Returns the number of
  // releases that ran successfully.
  size_t flush(bool force = false);
  // Drops every item without running it (after a reset freed everything).
  void drop_all();

  void defer_begin();
  void defer_end();
  bool deferred() const;

  size_t count() const;
  uint64_t bytes() const;
  void set_error_handler(ErrorHandler handler);
  // Hands `e` to the error handler (for failed releases outside a flush:
  // destructors of registrations, IPC mappings, stream-ordered memory).
  void report(const Error &e);

 private:
  bool over_limits_locked() const { return items_.size() > max_count_ || bytes_ > max_bytes_; }

  const uint64_t max_count_;
  const uint64_t max_bytes_;
  Synchronize sync_;
  mutable std::mutex mu_;
  // The thread running flush(), if any: a release that queues more releases
  // (the last handle of an array captured by a deferred release) runs on it,
  // and must neither flush again nor wait for the flush it is part of.
  std::atomic<std::thread::id> flushing_{};
  std::mutex flush_mu_;  // one flush at a time
  // The releases a flush is running (guarded by flush_mu_); what a failure
  // leaves goes back to the front of items_ (requeue_batch, mu_ taken).
  std::deque<Item> batch_;
  void requeue_batch();
  std::deque<Item> items_;
  uint64_t bytes_ = 0;
  const std::atomic<uint64_t> *generation_;
  int defer_depth_ = 0;
  ErrorHandler handler_;
};

}  // namespace gpuhal::detail
