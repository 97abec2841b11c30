// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Fiber stacks for the work-items of kernels with barriers (run_kernel,
// host_kernel_runner.hpp), one pool per plugin (shared_stacks, host_exec.hpp).
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include <boost/context/protected_fixedsize_stack.hpp>
#include <boost/context/stack_context.hpp>

namespace gpuhal::host {

// Reusable fiber stacks, made by Boost.Context's protected_fixedsize_stack
// (mmap'd, a guard page at the low end) and kept for the next group: a
// group of 256 work-items would otherwise map and unmap 256 stacks. Each
// stack has stack_bytes() for the kernel's frames, plus room for the
// fiber's record and the staggered tops.
// Thread safety: every member may be called from several threads at once.
class StackPool {
 public:
  using Stack = boost::context::stack_context;  // sp is nullptr: no stack
  // Room above the frames a kernel may use: Boost.Context keeps the fiber's
  // record at the top of its stack (aligned down to 256 bytes, 64 bytes of
  // gap below it), and run_kernel staggers the tops of a group's stacks by
  // up to kColorSteps * kColorStep bytes (so that work-items' frames do not
  // all map to the same cache sets).
  static constexpr size_t kColorStep = 256, kColorSteps = 16;
  static constexpr size_t kRecordRoom = 1024;
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

}  // namespace gpuhal::host
