// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// SpareChunkAllocator: an allocator that keeps one freed chunk per thread for
// the next allocation of its size on that thread.
//
// For std::allocate_shared of an object made and dropped at a high rate on
// one thread (a device allocation's handle: Context::allocate, A2 in
// docs/performance.md): a handle's last release keeps its control block's
// chunk in the thread's spare slot, and the next handle made on the thread
// takes it back, with a few plain loads and stores where malloc + free took
// about 4 ns. Anything else (the slot full, another size, another type)
// goes to operator new / delete.
//
// Ownership: the slot owns its chunk; a thread's chunk is freed when the
// thread exits (a thread-local object's destructor, registered on the
// thread's first spare). The main thread's is freed at the process's exit. Thread safety: each thread has its own
// slot; a chunk may be freed on any thread. Not used under the address
// sanitizer, which then sees every handle's own allocation.
#pragma once

#include <cstddef>
#include <new>

namespace gpuhal::detail {

// The calling thread's spare chunk of `bytes`, or nullptr (the slot empty,
// or holding another size). Never throws.
void *take_spare_chunk(std::size_t bytes) noexcept;
// Keeps `chunk` (of `bytes`, from operator new) as the calling thread's
// spare; false when the slot is taken (the caller deletes it).
bool keep_spare_chunk(void *chunk, std::size_t bytes) noexcept;

template <class T>
struct SpareChunkAllocator {
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "operator new's alignment only");
  using value_type = T;
  SpareChunkAllocator() = default;
  template <class U>
  SpareChunkAllocator(const SpareChunkAllocator<U> &) noexcept {}  // NOLINT: rebinding, as std::allocator
  T *allocate(std::size_t n) {
    if (n == 1) {
      if (void *p = take_spare_chunk(sizeof(T))) return static_cast<T *>(p);
    }
    return static_cast<T *>(::operator new(n * sizeof(T)));
  }
  void deallocate(T *p, std::size_t n) noexcept {
    if (n == 1 && keep_spare_chunk(p, sizeof(T))) return;
    ::operator delete(p);
  }
  template <class U>
  friend bool operator==(const SpareChunkAllocator &, const SpareChunkAllocator<U> &) {
    return true;
  }
  template <class U>
  friend bool operator!=(const SpareChunkAllocator &, const SpareChunkAllocator<U> &) {
    return false;
  }
};

}  // namespace gpuhal::detail
