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
// Idle blocks: device memory released while none of the context's work was
// in flight (ContextImpl::work_idle: nothing can still be using it) waits as
// a block instead of a queued release (keep_block). Blocks are pending
// deallocations like the queued releases, as Numba counts them: each
// release adds one to count() and its size to bytes() until a flush, the
// same limits bound them, and an allocation never takes a pending one. What
// makes them cheap is what a flush over the limits (not an explicit, an
// out-of-memory or the context's last one) does with them: it keeps them,
// no longer pending, as spare blocks, and an allocation of exactly a
// spare's size, in the same context generation, takes it back without
// calling the plugin (take_block). The spares a flush over the limits finds
// untaken join its releases (spares live for one such round); an explicit
// flush frees the blocks and the spares with the rest, drop_all drops them.
// So memory_info() after an explicit flush is what Numba's would be, and a
// limit of 0 turns blocks off with the queue.
//
// Busy blocks: device memory released while work may still use it, on a
// backend whose context synchronisation waits for all work of the context,
// another library's included (ContextImpl::spares_after_sync). It is
// pending like an idle block, but becomes a spare only once the flush over
// the limits that takes it has synchronised: it is taken before that
// synchronise, as the queued releases are, so the work that used it is
// waited for. A synchronise that fails leaves it a queued release (freed by
// a later flush), never lost and never handed out.
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
#include <vector>

#include "gpuhal/error.hpp"
#include "biased_lock.hpp"

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
    // False for a spare block's free: not a pending deallocation, so not
    // counted in what a flush returns.
    bool pending = true;
  };
  using Synchronize = std::function<void()>;  // throws on failure
  using ErrorHandler = std::function<void(const Error &)>;
  // Frees one idle block's device memory; throws on failure.
  using FreeBlock = std::function<void(uint64_t device_pointer)>;

  // `generation`: the context's current generation (read when an item runs).
  // Without `free_block` no block is ever kept.
  DeallocQueue(uint64_t max_count, uint64_t max_bytes, Synchronize sync, ErrorHandler handler,
               const std::atomic<uint64_t> *generation = nullptr, FreeBlock free_block = nullptr);

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
  // Runs the queue unless deferred (or `force`), and frees the idle blocks
  // and the spare ones. Returns the number of pending releases (spares not
  // counted) that ran successfully.
  size_t flush(bool force = false);
  // Drops every item, block and spare without running or freeing it (after
  // a reset freed everything).
  void drop_all();

  // Keeps `device_pointer` (`bytes` of device memory of context generation
  // `generation`) as a block, a pending deallocation: an idle one when it
  // was released while nothing could be using it, a busy one (`busy`) when
  // work may still use it and only the flush's synchronise proves it
  // unused. Flushes as add() does when that passes a limit (the flush keeps
  // the blocks as spares, the busy ones once it has synchronised). False,
  // keeping nothing, when the block alone is over the byte limit, when 32
  // blocks are pending (under a DeferCleanup scope), or on a thread running
  // a stream callback (whose releases wait for a flush on another thread,
  // like every release): the caller queues the release instead.
  bool keep_block(uint64_t device_pointer, uint64_t bytes, uint64_t generation, bool busy = false);
  // A spare block of exactly `bytes` and `generation` (the newest spared),
  // taken out of the spares; 0 when there is none, or on a thread running a
  // stream callback (where allocations fail in the driver: one served from
  // a block would work only sometimes). Pending blocks are never taken.
  uint64_t take_block(uint64_t bytes, uint64_t generation);

  void defer_begin();
  void defer_end();
  bool deferred() const;

  size_t count() const;
  uint64_t bytes() const;
  // The limits: more than `max_count` items (with the pending blocks) or
  // more than `max_bytes` flush at the next release. New limits apply from
  // the next release on; nothing is flushed here. A count of 0 keeps no
  // block from then on.
  void set_limits(uint64_t max_count, uint64_t max_bytes);
  uint64_t max_count() const { return max_count_.load(std::memory_order_relaxed); }
  uint64_t max_bytes() const { return max_bytes_.load(std::memory_order_relaxed); }
  void set_error_handler(ErrorHandler handler);
  // Hands `e` to the error handler (for failed releases outside a flush:
  // destructors of registrations, IPC mappings, stream-ordered memory).
  void report(const Error &e);

 private:
  struct Block {
    Block(uint64_t p, uint64_t b, uint64_t g, bool busy_) : device_pointer(p), bytes(b), generation(g), busy(busy_) {}
    uint64_t device_pointer;
    uint64_t bytes;
    uint64_t generation;
    bool busy;  // work may still use it: a spare only after a synchronise
  };
  // bytes_ counts the blocks' bytes too, never the spares'.
  bool over_limits_locked() const { return items_.size() + blocks_.size() > max_count() || bytes_ > max_bytes(); }
  // A release or kept block just passed a limit, nothing defers the flush,
  // and this thread is not running one (mu_ taken).
  bool flush_due_locked() const {
    return defer_depth_ == 0 && over_limits_locked() &&
           flushing_.load(std::memory_order_relaxed) != std::this_thread::get_id();
  }
  // Moves `blocks` to the end of items_ as releases (mu_ taken); bytes_
  // grows by their bytes unless they are `pending` (counted already).
  void queue_blocks_locked(std::vector<Block> &blocks, bool pending);
  // The flush add(), keep_block() and defer_end() run when over a limit:
  // the untaken spares are queued, the idle blocks become the spares, then
  // flush() runs what is queued.
  void flush_over_limits();
  // flush(), freeing the blocks and spares or not; when not, the busy
  // blocks are taken with each batch and become spares after its
  // synchronise.
  size_t run_flush(bool force, bool free_blocks);
  // Moves busy blocks out of blocks_ into proving_ (mu_ taken), no longer
  // pending; true when there were any.
  bool take_busy_blocks_locked();
  // After a batch's synchronise: proving_ becomes spares when it succeeded
  // (blocks of the current generation only), queued releases when it failed.
  void settle_proving(bool synchronised);

  // Written under mu_ (set_limits), read without it where a stale value
  // only delays a flush by one release (relaxed loads: plain loads on x86).
  std::atomic<uint64_t> max_count_;
  std::atomic<uint64_t> max_bytes_;
  Synchronize sync_;
  // Guards items_, blocks_, spares_, bytes_, defer_depth_, handler_: short sections
  // on every release and allocation, never held across a release or a sync.
  // Biased: the thread that uses the queue first (in most programs the only
  // one) takes and keeps idle blocks without a locked instruction.
  mutable BiasedLock mu_;
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
  std::vector<Block> blocks_;  // pending, newest last; at most 32 (reserved up front)
  std::vector<Block> spares_;  // not pending, newest last; what the last flush over the limits kept
  // Busy blocks a flush took before its synchronise (guarded by flush_mu_;
  // at most 32, reserved up front).
  std::vector<Block> proving_;
  FreeBlock free_block_;
  uint64_t bytes_ = 0;
  const std::atomic<uint64_t> *generation_;
  int defer_depth_ = 0;
  ErrorHandler handler_;
};

}  // namespace gpuhal::detail
