// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's worker threads, shared by kernel launches (work-groups)
// and large copies (copy_bytes_spread): one pool per plugin, made on first
// use (shared_pool, host_exec.hpp).
//
// Thread safety: parallel_for may be called from several threads at once
// (their jobs share the workers).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace gpuhal::host {

class ThreadPool {
 public:
  // `threads` participants in all (the caller of parallel_for included).
  explicit ThreadPool(unsigned threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;
  // Runs fn(i) for every i in [0, count), on the workers and the calling
  // thread; returns when all calls returned. fn must not throw.
  void parallel_for(uint64_t count, const std::function<void(uint64_t)> &fn);
  unsigned size() const { return unsigned(workers_.size()) + 1; }
  // How many parallel_for calls, in every pool of the process, are running
  // on more than one thread: while one is, every core is taken (a waiter
  // that spins takes one from the work). Read anywhere, without a lock.
  static int spread_jobs() { return spread_jobs_.load(std::memory_order_relaxed); }

 private:
  struct Job;
  void work();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
  static std::atomic<int> spread_jobs_;
};

}  // namespace gpuhal::host
