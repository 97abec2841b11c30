// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// SpareChunkAllocator (core/spare_chunk.hpp): one freed chunk per thread,
// taken back by the thread's next allocation of its size.
#include <cstdint>
#include <memory>
#include <thread>

#include "catch_compat.hpp"
#include "sanitizer_build.hpp"
#include "spare_chunk.hpp"

using gpuhal::detail::keep_spare_chunk;
using gpuhal::detail::SpareChunkAllocator;
using gpuhal::detail::take_spare_chunk;

namespace {

// The address sanitizer's builds keep nothing (it then sees every
// allocation).
constexpr bool kKeeps = !gpuhal::detail::kAddressSanitizer;

struct Payload {
  uint64_t words[5] = {1, 2, 3, 4, 5};
};

// Empties this thread's slot (an earlier test may have left a chunk there).
void drain(std::size_t bytes) {
  ::operator delete(take_spare_chunk(bytes));
}

}  // namespace

TEST_CASE("spare chunk: one chunk per thread, of one size, taken once", "[spare]") {
  drain(64);
  CHECK(take_spare_chunk(64) == nullptr);
  void *a = ::operator new(64);
  void *b = ::operator new(64);
  if (!kKeeps) {
    CHECK_FALSE(keep_spare_chunk(a, 64));  // the address sanitizer sees every allocation
    ::operator delete(a);
    ::operator delete(b);
    return;
  }
  REQUIRE(keep_spare_chunk(a, 64));
  CHECK_FALSE(keep_spare_chunk(b, 64));  // the slot is full: the caller frees b
  ::operator delete(b);
  CHECK(take_spare_chunk(32) == nullptr);  // another size: not this chunk
  CHECK(take_spare_chunk(64) == a);
  CHECK(take_spare_chunk(64) == nullptr);  // taken once
  // Another thread has a slot of its own.
  REQUIRE(keep_spare_chunk(a, 64));
  std::thread([] { CHECK(take_spare_chunk(64) == nullptr); }).join();
  CHECK(take_spare_chunk(64) == a);
  ::operator delete(a);
}

TEST_CASE("spare chunk: a shared object's control block is reused on its thread, and freed at the thread's exit",
          "[spare]") {
  using Alloc = SpareChunkAllocator<Payload>;
  auto first = std::allocate_shared<Payload>(Alloc());
  const Payload *where = first.get();
  first.reset();
  auto second = std::allocate_shared<Payload>(Alloc());
  CHECK(second->words[4] == 5);  // constructed afresh
  if (kKeeps) CHECK(second.get() == where);
  // Released on another thread: the chunk goes to that thread's slot, and
  // is freed when it exits (a leak checker run of this test sees none).
  std::thread([s = std::move(second)]() mutable { s.reset(); }).join();
  auto third = std::allocate_shared<Payload>(Alloc());
  CHECK(third->words[0] == 1);
  // Two alive at once: the second one from operator new.
  auto fourth = std::allocate_shared<Payload>(Alloc());
  CHECK(fourth.get() != third.get());
}
