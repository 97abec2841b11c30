// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// WorkClock: whether any work of one context can still be in flight.
//
// Device memory released while none of its context's work is in flight
// cannot be in use by the device, so it may be kept as an idle block, which
// the next flush over the limits makes a spare for an allocation of its
// size without synchronising (DeallocQueue). Memory released while work may
// be in flight waits for a flush, which synchronises the context first.
//
// The clock counts the calls that put work on a stream (Backend counts them
// around the plugin call: `begun` before, `ended` after) and remembers how
// many had ended before the last context synchronisation that succeeded
// with none in progress (`completed`). The context is idle when no call has
// begun since: begun == completed. Reading `ended` before `begun` makes a
// synchronisation count only calls that had returned when it started; a call
// that begins later, or was still in the plugin, keeps the context busy until
// the next one.
//
// What the clock cannot see makes the context busy for good (`external`):
// work another library puts on the context's vendor handles (handed out by
// native_context / Stream::native_handle, wrapped by external_stream, or an
// adopted context), and another context's kernels reaching this one's
// memory through peer access.
//
// Thread safety: all members are atomics; any thread may count, synchronise
// and ask. Correctness needs the user's own ordering only: work that uses a
// block was submitted before the block's last handle went, so its `begun`
// count is visible to the thread that releases the block.
#pragma once

#include <atomic>
#include <cstdint>

namespace gpuhal::detail {

struct WorkClock {
  std::atomic<uint64_t> begun{0};
  std::atomic<uint64_t> ended{0};
  std::atomic<uint64_t> completed{0};
  std::atomic<bool> external{false};

  bool idle() const {
    return !external.load(std::memory_order_relaxed) &&
           begun.load(std::memory_order_seq_cst) == completed.load(std::memory_order_acquire);
  }
  // Brackets one synchronisation of the whole context: read before it
  // starts, then (after it succeeded) finish() with that reading.
  struct Reading {
    uint64_t ended = 0;
    bool quiet = false;  // no call was in progress at the reading
  };
  Reading read() const {
    const uint64_t e = ended.load(std::memory_order_seq_cst);
    const uint64_t b = begun.load(std::memory_order_seq_cst);
    return {e, b == e};
  }
  void finish(const Reading &r) {
    if (!r.quiet) return;
    uint64_t seen = completed.load(std::memory_order_relaxed);
    while (seen < r.ended && !completed.compare_exchange_weak(seen, r.ended, std::memory_order_acq_rel)) {
    }
  }
  // Counts one call that submits work, for its duration.
  class Submission {
   public:
    explicit Submission(WorkClock *clock) : clock_(clock) {
      if (clock_) clock_->begun.fetch_add(1, std::memory_order_seq_cst);
    }
    ~Submission() {
      if (clock_) clock_->ended.fetch_add(1, std::memory_order_seq_cst);
    }
    Submission(const Submission &) = delete;
    Submission &operator=(const Submission &) = delete;

   private:
    WorkClock *clock_;
  };
};

}  // namespace gpuhal::detail
