// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The lock that keeps device memory's pages in place while operations touch
// them (host_stream.hpp, device_pages_lock()).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>

namespace gpuhal::host {

// A reader-writer lock for a writer that almost never comes: every copy,
// memset and kernel (the readers) takes it shared, an allocation's first IPC
// export (the writer) takes it to swap the allocation's pages. A reader
// pays one atomic add to enter and one atomic subtract to leave (a pthread
// rwlock costs about twice that, on the synchronous copy's hot path).
//
// Contract: lock_shared() / unlock_shared() and lock() / unlock() as
// std::shared_mutex (usable with std::shared_lock / std::unique_lock).
// Readers are preferred, as glibc's rwlock prefers them: a reader enters
// while a writer waits (a thread may take it shared twice), and waits only
// while a writer holds it, asleep on the writer's mutex; the writer waits
// for the readers to leave, yielding and then sleeping in short steps (an
// operation may run for a long time).
// Aligned to (and so sized in) whole cache lines: every operation a stream
// worker runs writes the reader count, and a global sharing its line would
// be read by submitters as a miss (measured: a flag of the submit path
// beside the process-wide lock took an asynchronous submit from 140 to
// 175 ns).
class alignas(64) PagesLock {
 public:
  void lock_shared() {
    for (;;) {
      if ((state_.fetch_add(1, std::memory_order_acquire) & kWriter) == 0) return;
      state_.fetch_sub(1, std::memory_order_relaxed);
      // The writer holds writer_mu_ for as long as it holds the lock.
      std::lock_guard<std::mutex> wait_for_writer(writer_mu_);
    }
  }
  void unlock_shared() { state_.fetch_sub(1, std::memory_order_release); }

  void lock() {
    writer_mu_.lock();  // one writer at a time; readers that find it held sleep on it
    for (unsigned spins = 0;; ++spins) {
      uint64_t none = 0;
      if (state_.compare_exchange_weak(none, kWriter, std::memory_order_acquire, std::memory_order_relaxed)) return;
      if (spins < 64)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  void unlock() {
    state_.fetch_sub(kWriter, std::memory_order_release);
    writer_mu_.unlock();
  }

 private:
  static constexpr uint64_t kWriter = uint64_t(1) << 62;
  std::atomic<uint64_t> state_{0};  // readers inside, plus kWriter while a writer holds it
  std::mutex writer_mu_;
};

}  // namespace gpuhal::host
