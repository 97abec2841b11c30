// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend streams: in-order queues, each run by its own worker thread.
//
// Ordering model: every operation submitted to a stream gets a ticket (1, 2,
// ...). A stream's `completed` counter says how many of its operations have
// finished. A dependency is (stream, ticket): satisfied once that stream's
// completed >= ticket. Events, stream waits, barriers and the legacy default
// stream are all expressed as dependencies checked by the worker before it
// runs an operation. Tickets and queue pushes happen under the context's
// submit mutex, so the dependency order matches submission order and no
// cycle can form.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "gpuhal/plugin.h"
#include "host_pages_lock.hpp"

namespace gpuhal::host {

struct StreamState;

// The plugin's few per-thread variables on the hot path use the
// initial-exec TLS model: one %fs-relative access instead of a call to
// __tls_get_addr (a dlopen'ed library's default), about 2 ns each on a 4 KiB
// synchronous copy's 40. They take a few dozen bytes of the static TLS
// space glibc keeps for libraries loaded later (512 bytes by default).
#define GPUHAL_HOST_FAST_TLS __attribute__((tls_model("initial-exec")))

// Set on stream worker threads (host_stream.cpp).
extern __thread bool t_host_stream_worker GPUHAL_HOST_FAST_TLS;

// True on a stream worker thread (inside an operation or callback), where a
// blocking wait on the context could wait for itself.
inline bool on_worker_thread() {
  return t_host_stream_worker;
}

// Device memory's pages can move: the first IPC export of an allocation
// swaps its anonymous pages for a memfd under the same addresses. Every
// operation a stream worker runs holds this shared; the swap holds it
// exclusively, and every context's submit mutex, which an operation run
// inline on the caller's thread holds (HostContext::hold_submissions), so
// no write lands on pages that are being left behind. Process-wide: copies
// may cross contexts.
PagesLock &device_pages_mutex();
// In a child of fork(): a fresh, unlocked pages lock.
void reset_device_pages_mutex_after_fork();

// Context-wide completion signal: workers notify after each operation,
// waiters (dependencies, synchronize calls) wait on it.
// Completion of stream operations, shared by a context's streams. wait()
// spins for a few microseconds, then sleeps on the condition variable;
// notify() (after each completion) wakes sleepers only when there are any.
struct Progress {
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<int> waiters{0};
  // How many of the context's blocking streams (not the legacy default one)
  // have work outstanding. Incremented only under the context's submit
  // mutex (a stream's first outstanding operation), decremented by the
  // stream's worker after its last one completed: read under the submit
  // mutex, zero means that no blocking stream has work, without walking
  // them (the legacy default stream's check on every synchronous copy).
  std::atomic<int> busy_blocking{0};
  static constexpr int kSpinMicroseconds = 5;        // always
  static constexpr int kLongSpinMicroseconds = 100;  // while a core is free
  void wait(const StreamState &stream, uint64_t ticket);
  void notify();
};

struct Dep {
  std::shared_ptr<StreamState> stream;
  uint64_t ticket;
};

struct Op {
  // Runs on the worker. `ok` is false when the stream is being torn down
  // without running its remaining work (callbacks then see an error status).
  std::function<void(bool ok)> run;
  std::vector<Dep> deps;
};

struct StreamState : std::enable_shared_from_this<StreamState> {
  StreamState(std::shared_ptr<Progress> progress, bool non_blocking, bool is_default);
  ~StreamState();

  std::shared_ptr<Progress> progress;
  const bool non_blocking;
  const bool is_default;
  // Stream priority (ABI 1.9), set before start(): 0 is the greatest (and
  // the default streams'), kLeastPriority the least. A stream of a lesser
  // priority runs its worker thread at a higher nice value (5 per step), so
  // that where workers compete for the cores a greater-priority stream's
  // operations are served first. Raising a thread's priority above the
  // process's needs privileges: the greatest priority is the normal one.
  int priority = 0;
  static constexpr int kGreatestPriority = 0;
  static constexpr int kLeastPriority = 2;
  static constexpr int kNicePerStep = 5;

  // Tickets handed out; incremented only under the context's submit mutex,
  // read anywhere. On a cache line of its own: the worker reads the
  // members above at every operation, and a submitter writes this one at
  // every submit (sharing their line would move it between the cores twice
  // an operation).
  alignas(64) std::atomic<uint64_t> enqueued{0};
  // Written by the worker: on a cache line of its own, away from what
  // submitters write.
  alignas(64) std::atomic<uint64_t> completed{0};

  // Operations submitted and not yet completed, kept for blocking streams
  // only (Progress::busy_blocking counts the streams where it is not zero).
  std::atomic<uint64_t> outstanding{0};
  bool counts_busy() const { return !non_blocking && !is_default; }

  bool idle() const { return completed.load(std::memory_order_acquire) >= enqueued_snapshot(); }
  uint64_t enqueued_snapshot() const { return enqueued.load(std::memory_order_acquire); }

  // Starts the worker thread (throws std::system_error if it cannot).
  void start();
  // Appends an operation. Caller holds the context's submit mutex and has
  // already incremented `enqueued` for it.
  void push(Op op);
  // Lets queued work finish, then ends the worker. Called from the worker
  // itself (a callback destroying its own stream), it detaches instead and
  // the remaining operations are discarded.
  void stop();
  // Blocks until every operation submitted before the call has completed.
  void synchronize();

 private:
  void loop();
  // Read by the worker at every operation, written once (stop() from the
  // worker itself): on a line of its own, away from what submitters write.
  alignas(64) std::atomic<bool> discard_{false};
  // What a submitter and the worker both write, on its own cache line.
  alignas(64) std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Op> queue_;  // swapped with the worker's batch: both keep their capacity
  bool stopping_ = false;
  bool sleeping_ = false;              // the worker waits on cv_ (guarded by mu_)
  std::atomic<bool> has_work_{false};  // queue_ is not empty (read while spinning)
  static constexpr int kSpinMicroseconds = 20;
  static constexpr int kGatherPauses = 16;
  static constexpr int kMaxGatherPauses = 128;
  std::thread worker_;
};

}  // namespace gpuhal::host
