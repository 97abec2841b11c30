// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "thread_bias.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "sanitizer_build.hpp"

namespace gpuhal::detail {

__thread char ThreadBias::t_token_;

namespace {

int membarrier(int cmd) {
  return int(syscall(__NR_membarrier, cmd, 0u, 0));
}

// The process the registration was made in, and whether it succeeded.
// Registration is per process: a child of fork() registers again. Two
// threads registering at once both get the same answer (the call is
// idempotent): no lock, so nothing for a fork to leave held.
std::atomic<pid_t> g_registered_pid{0};
std::atomic<bool> g_registered{false};

}  // namespace

bool thread_bias_available() {
  if (kThreadSanitizer) return false;
  const pid_t pid = getpid();
  if (g_registered_pid.load(std::memory_order_acquire) == pid) return g_registered.load(std::memory_order_relaxed);
  const int cmds = membarrier(MEMBARRIER_CMD_QUERY);
  const bool ok = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                  membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  g_registered.store(ok, std::memory_order_relaxed);
  g_registered_pid.store(pid, std::memory_order_release);
  return ok;
}

void ThreadBias::claim_or_exclude(bool claim) {
  const uintptr_t owner = owner_.load(std::memory_order_relaxed);
  const uintptr_t me = self();
  if (owner == me || owner == kRevoked) return;
  if (owner == 0) {
    // Nobody holds it, and nobody can take it without the object's lock,
    // which the caller holds: no section runs without it yet.
    if (claim) owner_.store(thread_bias_available() ? me : kRevoked, std::memory_order_relaxed);
    return;
  }
  // Another thread's: revoke for good. The exchange is this side's full
  // barrier, membarrier the owner's: after both, either the owner's
  // "inside" store is visible here, or its next "revoked?" load sees the
  // revocation.
  revoked_.exchange(1, std::memory_order_seq_cst);
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
    // Registered in this process before the bias was given out, so this
    // does not fail. If it ever did: a wait far longer than any store
    // buffer takes to drain (a preempted thread's drains when it is
    // switched out), after which the owner's "inside" store is visible if
    // it made one before seeing the flag.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (unsigned spins = 0; inside_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < 1000) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();  // the owner runs a long section (a copy), or is preempted
    }
  }
  owner_.store(kRevoked, std::memory_order_relaxed);
}

}  // namespace gpuhal::detail
