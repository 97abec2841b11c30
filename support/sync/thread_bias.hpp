// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ThreadBias: sections of one thread without a locked instruction, beside a
// lock every other thread takes.
//
// Most programs drive an object from one thread, and on x86 a locked
// instruction costs about as much as the short section it guards (and waits
// for the stores before it to drain). So the first thread to enter a
// section under the object's lock takes the bias (claim_or_exclude(true),
// under that lock), and from then on enters its sections with plain stores
// only: it marks itself inside (a plain store), checks that the bias was
// not revoked (a plain load), runs the section, and marks itself outside (a
// plain store). Any other thread, having taken the lock, revokes the bias,
// for good, before it goes on (claim_or_exclude): it marks the bias revoked,
// makes every running thread of the process pass a full memory barrier
// (membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED), and waits until the
// owner is outside. The barrier is what makes the owner's plain "inside"
// store and its plain "revoked?" load safe (Dekker's pattern with one side's
// fence done for it by the kernel: either the revoker sees the owner inside
// and waits, or the owner sees the revocation and takes the lock). It costs
// a few microseconds once per object, when a second thread first needs it;
// from then on everyone takes the lock.
//
// Used by the host backend's inline operations (the context's submit mutex
// is the lock) and by the core's BiasedLock (biased_lock.hpp: the deferred
// deallocation queue's lock).
//
// Without membarrier (an old kernel, a sandbox that refuses it, or a child
// of fork() that cannot register), and under ThreadSanitizer (which cannot
// see the barrier's ordering), no bias is ever taken.
//
// Thread safety: enter / try_run from any thread; claim_or_exclude with the
// object's lock held. A thread is named by the address of a thread-local
// byte: a thread that ends and a new one given the same address are never
// both running. Sections do not nest.
#pragma once

#include <atomic>
#include <cstdint>

namespace gpuhal::detail {

// True when this process can use membarrier's private expedited command
// (registered on the first call, again in a child of fork()).
bool thread_bias_available();

class ThreadBias {
 public:
  enum class Ran { NotTaken, Refused, Done };

  // On the bias owner's thread, while the bias stands: marks this thread
  // inside a section and returns true; the caller runs its section and
  // then calls leave(). False otherwise (the caller takes the lock, calls
  // claim_or_exclude and runs its section there).
  bool enter() noexcept {
    if (owner_.load(std::memory_order_relaxed) != self()) return false;
    inside_.store(1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the revoker's membarrier orders the CPU
    if (revoked_.load(std::memory_order_acquire)) {
      inside_.store(0, std::memory_order_release);
      return false;
    }
    return true;
  }
  void leave() noexcept { inside_.store(0, std::memory_order_release); }
  // Whether the calling thread is inside a section it entered with enter().
  bool entered_here() const noexcept {
    return owner_.load(std::memory_order_relaxed) == self() && inside_.load(std::memory_order_relaxed) != 0;
  }

  // enter(), `fn` (which returns false when it did not run the operation:
  // Refused), leave(). NotTaken when enter() was refused.
  template <class F>
  Ran try_run(F &&fn) {
    if (!enter()) return Ran::NotTaken;
    const bool ran = fn();
    leave();
    return ran ? Ran::Done : Ran::Refused;
  }

  // With the object's lock held. `claim`: the caller is about to run a
  // section, and takes the bias if no thread has it yet (and none ever had
  // it revoked). Then, if another thread owns the bias, revokes it and
  // waits until that thread is outside its section: when this returns, no
  // section runs without the lock.
  void claim_or_exclude(bool claim);

  // For tests: whether a thread holds the bias.
  bool biased() const {
    const uintptr_t o = owner_.load(std::memory_order_relaxed);
    return o != 0 && o != kRevoked;
  }

 private:
  static constexpr uintptr_t kRevoked = ~uintptr_t(0);
  static uintptr_t self() { return uintptr_t(&t_token_); }
  // Its address names the thread (one %fs-relative address, where
  // pthread_self() is a call through the PLT).
  static __thread char t_token_ __attribute__((tls_model("initial-exec")));

  // 0: nobody yet; kRevoked: never again; else the owner's token address.
  // Changed only under the object's lock.
  std::atomic<uintptr_t> owner_{0};
  // Written by the owner only, read by a revoker. Each on a cache line of
  // its own: the owner writes inside_ twice per section, and the revoker
  // writes revoked_ once in the object's life.
  alignas(64) std::atomic<uint32_t> inside_{0};
  alignas(64) std::atomic<uint32_t> revoked_{0};
};

}  // namespace gpuhal::detail
