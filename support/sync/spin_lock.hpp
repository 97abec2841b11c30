// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// SpinLock: a lock for sections of a few dozen instructions on hot paths.
//
// std::mutex costs two locked instructions per section (glibc's unlock is an
// exchange, to see waiters); this costs one (the unlock is a plain release
// store). A waiter spins briefly, then yields its core, so a holder that was
// preempted gets to run on a machine with fewer cores than threads.
// Not recursive; BasicLockable (use with std::lock_guard). Never hold it
// across a call that may block or call back into the caller.
#pragma once

#include <atomic>
#include <thread>

namespace gpuhal::detail {

class SpinLock {
 public:
  void lock() noexcept {
    for (int spins = 0; locked_.exchange(true, std::memory_order_acquire); ++spins) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (spins < 64) {
          ++spins;
#if defined(__x86_64__) || defined(__i386__)
          __builtin_ia32_pause();
#endif
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  void unlock() noexcept {
    locked_.store(false, std::memory_order_release);
  }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace gpuhal::detail
