// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// fork(): gpuhal objects belong to the process that made them.
//
// A child of fork() has copies of its parent's objects but none of their
// threads (stream workers, the plugin's pools, the vendor runtime's): using
// one would wait forever, and destroying one would join threads that are not
// there. The core counts forks with a pthread_atfork child handler (installed
// by the first Runtime::load); every object remembers the count it was made
// under. In a child, using an inherited object throws ERROR_NOT_PERMITTED,
// destroying one does nothing (its memory is the child's copy, given back at
// exit), and Runtime::get() loads a runtime of the child's own.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace gpuhal::detail {

extern std::atomic<uint32_t> g_forks;  // fork()s between this process and the one gpuhal started in

inline uint32_t fork_count() {
  return g_forks.load(std::memory_order_relaxed);
}
// Installs the handler that counts forks (once per process; thread-safe).
void watch_forks();

// A lock of the core's process-wide state (plugin loggers, the memory
// manager factory, a child's runtime). A child of fork() gets every one
// unlocked and usable: a thread of the parent that held it at the fork does
// not exist in the child, and the child's own runtime needs these locks.
// The state they guard is changed in short steps under them (a pointer or a
// small value assigned, a vector appended); a child forked in the middle of
// such a step can see it half done, as with any lock made afresh after fork().
// Only for objects that live until the process ends (namespace-scope or
// function-local statics); at most kMaxProcessMutexes of them.
class ProcessMutex {
 public:
  ProcessMutex();
  ProcessMutex(const ProcessMutex &) = delete;
  ProcessMutex &operator=(const ProcessMutex &) = delete;
  void lock() { m_.lock(); }
  void unlock() { m_.unlock(); }
  bool try_lock() { return m_.try_lock(); }
  // Fork child handler only: makes the lock afresh.
  void reset_in_child() { new (&m_) std::mutex(); }

 private:
  std::mutex m_;
};
constexpr int kMaxProcessMutexes = 16;

}  // namespace gpuhal::detail
