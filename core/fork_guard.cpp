// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "fork_guard.hpp"

#include <pthread.h>

#include <cstdlib>
#include <new>

namespace gpuhal::detail {

std::atomic<uint32_t> g_forks{0};

namespace {

// Every ProcessMutex, in the order they were made; constant-initialised, so
// usable from static constructors of any translation unit.
std::atomic<ProcessMutex *> g_locks[kMaxProcessMutexes];
std::atomic<int> g_lock_count{0};

void in_child() {
  g_forks.fetch_add(1);
  const int n = g_lock_count.load();
  for (int i = 0; i < n && i < kMaxProcessMutexes; ++i)
    if (ProcessMutex *m = g_locks[i].load()) m->reset_in_child();
}

}  // namespace

void watch_forks() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, in_child); });
}

ProcessMutex::ProcessMutex() {
  const int i = g_lock_count.fetch_add(1);
  if (i >= kMaxProcessMutexes) std::abort();  // a programming error: raise kMaxProcessMutexes
  g_locks[i].store(this);
  watch_forks();
}

}  // namespace gpuhal::detail
