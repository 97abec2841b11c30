// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// BiasedLock: a SpinLock whose first user takes it without a locked
// instruction, as long as no other thread ever takes it.
//
// For the short sections of one context's hot paths that, in most programs,
// one thread runs (the deferred deallocation queue's: an allocation that
// takes an idle block back and the release that keeps it, each one section).
// A SpinLock costs one locked instruction per section; on this path that
// was about a quarter of an allocation + release. The first thread to lock
// takes the ThreadBias (thread_bias.hpp) and from then on locks and unlocks
// with plain stores. The first time any other thread locks, it takes the
// spin lock and revokes the bias for good, waiting for the owner's section
// in flight; from then on every thread takes the spin lock (as before).
//
// BasicLockable (use with std::lock_guard); not recursive. Never hold it
// across a call that may block or call back into the caller (the revoker
// waits for the owner's section to end). Without membarrier, and under
// ThreadSanitizer, it is the spin lock alone.
#pragma once

#include "spin_lock.hpp"
#include "thread_bias.hpp"

namespace gpuhal::detail {

class BiasedLock {
 public:
  void lock() noexcept {
    if (bias_.enter()) return;
    spin_.lock();
    bias_.claim_or_exclude(true);
  }
  void unlock() noexcept {
    // Only the owner writes "inside", and it is set only between its
    // enter() and this: a section taken through the spin lock never is.
    if (bias_.entered_here()) {
      bias_.leave();
      return;
    }
    spin_.unlock();
  }
  // For tests: whether a thread holds the bias.
  bool biased() const { return bias_.biased(); }

 private:
  ThreadBias bias_;
  SpinLock spin_;
};

}  // namespace gpuhal::detail
