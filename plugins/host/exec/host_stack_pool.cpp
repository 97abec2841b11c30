// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_stack_pool.hpp"

#include <algorithm>
#include <new>

#include "sanitizer_build.hpp"

#ifdef GPUHAL_ADDRESS_SANITIZER
#include <sanitizer/asan_interface.h>
#endif

namespace gpuhal::host {

StackPool::StackPool(size_t stack_bytes)
    : bytes_(std::max(stack_bytes, size_t(boost::context::stack_traits::minimum_size()))),
      allocator_(bytes_ + kColorSteps * kColorStep + kRecordRoom) {}

StackPool::~StackPool() {
  for (Stack &s : free_) {
#ifdef GPUHAL_ADDRESS_SANITIZER
    // Frames of instrumented code that never returned (Boost's fiber entry
    // ends with a jump) left poisoned shadow behind: clear it, or the next
    // mapping at these addresses would be reported as stack overflow.
    ASAN_UNPOISON_MEMORY_REGION(static_cast<char *>(s.sp) - s.size, s.size);
#endif
    allocator_.deallocate(s);
  }
}

StackPool::Stack StackPool::acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      Stack s = free_.back();
      free_.pop_back();
      return s;
    }
  }
  try {
    return allocator_.allocate();
  } catch (const std::bad_alloc &) {
    return Stack{};
  }
}

bool StackPool::acquire(size_t n, Stack *out) {
  size_t got = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (got < n && !free_.empty()) {
      out[got++] = free_.back();
      free_.pop_back();
    }
  }
  for (; got < n; ++got) {
    out[got] = acquire();
    if (!out[got].sp) {
      release(got, out);
      return false;
    }
  }
  return true;
}

void StackPool::release(size_t n, const Stack *stacks) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < n; ++i)
    if (stacks[i].sp) free_.push_back(stacks[i]);
}

void StackPool::release(const Stack &stack) {
  if (!stack.sp) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(stack);
}

}  // namespace gpuhal::host
