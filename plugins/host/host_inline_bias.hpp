// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A context's inline operations without a locked instruction, for the one
// thread that uses the context alone.
//
// A synchronous copy on an idle context runs on the calling thread, holding
// the context's submit mutex so that work submitted meanwhile is ordered
// after it and an IPC export does not move its pages under it
// (HostContext::run_inline_if_idle). The mutex's unlock is a locked
// instruction right after the copy, and on x86 a locked instruction waits
// for the copy's stores to drain: measured on a 4 KiB copy, the lock pair
// cost 23 ns of 52, where memcpy alone takes 30.
//
// Most programs drive a context from one thread. So the first thread to run
// an operation inline takes the context's bias (under the submit mutex),
// and from then on runs inline operations with plain stores only: it marks
// itself inside (a plain store), checks that the bias was not revoked (a
// plain load), runs the operation, and marks itself outside (a plain store).
// Any other thread that needs the submit mutex (a submit, an inline
// operation of its own, an IPC export) revokes the bias, for good, before
// it goes on: it marks the bias revoked, makes every running thread of the
// process pass a full memory barrier (membarrier(2),
// MEMBARRIER_CMD_PRIVATE_EXPEDITED), and waits until the owner is outside.
// The barrier is what makes the owner's plain "inside" store and its plain
// "revoked?" load safe (Dekker's pattern with one side's fence done for it
// by the kernel: either the revoker sees the owner inside and waits, or the
// owner sees the revocation and takes the mutex). It costs a few
// microseconds once per context, when a second thread first needs it; from
// then on everyone takes the mutex, as before. The owner's own submits need
// nothing: its program order keeps them apart from its inline operations.
//
// Without membarrier (an old kernel, a sandbox that refuses it, or a child
// of fork() that cannot register), and under ThreadSanitizer (which cannot
// see the barrier's ordering), no bias is ever taken.
//
// Thread safety: try_run from any thread; claim_or_exclude with the
// context's submit mutex held. A thread is named by the address of a
// thread-local byte: a thread that ends and a new one given the same
// address are never both running.
#pragma once

#include <atomic>
#include <cstdint>

namespace gpuhal::host {

// True when this process can use membarrier's private expedited command
// (registered on the first call, again in a child of fork()).
bool inline_bias_available();

class InlineBias {
 public:
  enum class Ran { NotTaken, Refused, Done };

  // On the bias owner's thread, while the bias stands: runs `fn` (which
  // returns false when it did not run the operation: Refused) with no locked
  // instruction. NotTaken otherwise (the caller takes the submit mutex,
  // calls claim_or_exclude and runs the operation there).
  template <class F>
  Ran try_run(F &&fn) {
    if (owner_.load(std::memory_order_relaxed) != self()) return Ran::NotTaken;
    inside_.store(1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the revoker's membarrier orders the CPU
    if (revoked_.load(std::memory_order_acquire)) {
      inside_.store(0, std::memory_order_release);
      return Ran::NotTaken;
    }
    const bool ran = fn();
    inside_.store(0, std::memory_order_release);
    return ran ? Ran::Done : Ran::Refused;
  }

  // With the submit mutex held. `claim`: the caller is about to run an
  // operation inline, and takes the bias if no thread has it yet (and none
  // ever had it revoked). Then, if another thread owns the bias, revokes it
  // and waits until that thread is outside its inline operation: when this
  // returns, no inline operation runs without the submit mutex.
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

  // 0: nobody yet; kRevoked: never again; else the owner's pthread_self().
  // Changed only under the submit mutex.
  std::atomic<uintptr_t> owner_{0};
  // Written by the owner only, read by a revoker. Each on a cache line of
  // its own: the owner writes inside_ twice per operation, and the revoker
  // writes revoked_ once in the context's life.
  alignas(64) std::atomic<uint32_t> inside_{0};
  alignas(64) std::atomic<uint32_t> revoked_{0};
};

}  // namespace gpuhal::host
