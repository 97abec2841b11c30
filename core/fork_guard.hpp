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

namespace gpuhal::detail {

extern std::atomic<uint32_t> g_forks;  // fork()s between this process and the one gpuhal started in

inline uint32_t fork_count() {
  return g_forks.load(std::memory_order_relaxed);
}
// Installs the handler that counts forks (once per process; thread-safe).
void watch_forks();

}  // namespace gpuhal::detail
