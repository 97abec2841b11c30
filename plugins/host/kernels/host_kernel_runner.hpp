// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend: running a kernel launch.
//
// Work-groups are spread over a plugin-wide thread pool (the stream's worker
// takes part). A group of a kernel without barriers runs all its work-items
// as a plain loop inside the module (run_group). A group of a kernel with
// barriers runs each work-item as a fiber (Boost.Context, a stack each with
// a guard page below it): the scheduler resumes the fibers in turn, each
// runs until its next barrier or its end, and a barrier round ends when all
// have come back, so every work-item reaches a barrier before any passes
// it. A work-item that returns early counts as arrived at every later
// barrier (what OpenCL implementations do; on a GPU it is undefined).
//
// Thread safety: ThreadPool::parallel_for may be called from several
// threads at once (their jobs share the workers).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/context/protected_fixedsize_stack.hpp>
#include <boost/context/stack_context.hpp>

#include "host_kernel_abi.hpp"

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

// Reusable fiber stacks, made by Boost.Context's protected_fixedsize_stack
// (mmap'd, a guard page at the low end) and kept for the next group: a
// group of 256 work-items would otherwise map and unmap 256 stacks. Each
// stack has stack_bytes() for the kernel's frames, plus room for the
// fiber's record and the staggered tops.
// Thread safety: every member may be called from several threads at once.
class StackPool {
 public:
  using Stack = boost::context::stack_context;  // sp is nullptr: no stack
  explicit StackPool(size_t stack_bytes);
  ~StackPool();
  StackPool(const StackPool &) = delete;
  StackPool &operator=(const StackPool &) = delete;
  size_t stack_bytes() const { return bytes_; }
  // sp is nullptr when memory is exhausted.
  Stack acquire();
  void release(const Stack &stack);
  // n stacks under one lock (a work-group's worth); false, with the ones
  // acquired given back, when memory is exhausted.
  bool acquire(size_t n, Stack *out);
  void release(size_t n, const Stack *stacks);

 private:
  size_t bytes_;
  boost::context::protected_fixedsize_stack allocator_;
  std::mutex mu_;
  std::vector<Stack> free_;
};

struct KernelLaunch {
  const gpuhal_host_kernel *kernel = nullptr;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t dynamic_shared_bytes = 0;
  std::vector<unsigned char> storage;  // the argument values, copied at launch
  std::vector<void *> args;            // args[i] points into storage
  gpuhal_host_assert_record *assert_state = nullptr;  // the module's (null: none)
  // gpuhal_host_group::prefetch_limits for the launch (empty: none; one per
  // argument otherwise).
  std::vector<uint64_t> prefetch_limits;
};

// Runs every group of `launch`; returns "" or what went wrong (a barrier
// reached in a kernel compiled as barrier-free, no memory for stacks, a
// failed gpuhal_assert: then no further group starts, and the module's
// assert record is cleared for the next launch).
std::string run_kernel(ThreadPool &pool, StackPool &stacks, const KernelLaunch &launch);

}  // namespace gpuhal::host
