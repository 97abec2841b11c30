// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "spare_chunk.hpp"

#include "sanitizer_build.hpp"

namespace gpuhal::detail {

namespace {

// The calling thread's slot. Initial-exec: one %fs-relative access, where
// the default model for a shared object calls __tls_get_addr (a few bytes of
// the static TLS space glibc keeps for libraries loaded later).
enum class SlotState : unsigned char { Unwatched, Watched, Exited };
struct Slot {
  void *chunk;
  std::size_t bytes;
  SlotState state;
};
__thread Slot t_slot __attribute__((tls_model("initial-exec"))) = {nullptr, 0, SlotState::Unwatched};

// Frees the exiting thread's spare. A C++ thread-local object: glibc keeps
// the library loaded while its destructor is pending (a pthread key's would
// not). After it ran, the thread keeps no chunk again (a release made later
// in the thread's exit deletes its own).
struct ExitWatch {
  bool armed = false;
  ~ExitWatch() {
    void *chunk = t_slot.chunk;
    t_slot = {nullptr, 0, SlotState::Exited};
    ::operator delete(chunk);
  }
};
thread_local ExitWatch t_exit_watch;

}  // namespace

void *take_spare_chunk(std::size_t bytes) noexcept {
  Slot &s = t_slot;
  if (s.chunk == nullptr || s.bytes != bytes) return nullptr;
  void *chunk = s.chunk;
  s.chunk = nullptr;
  return chunk;
}

bool keep_spare_chunk(void *chunk, std::size_t bytes) noexcept {
  if (kAddressSanitizer) return false;
  Slot &s = t_slot;
  if (s.chunk != nullptr) return false;
  if (s.state != SlotState::Watched) {
    if (s.state == SlotState::Exited) return false;
    // Once per thread: the first use of the thread-local object constructs
    // it and registers its destructor.
    t_exit_watch.armed = true;
    s.state = SlotState::Watched;
  }
  s.chunk = chunk;
  s.bytes = bytes;
  return true;
}

}  // namespace gpuhal::detail
