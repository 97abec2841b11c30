#include "fork_guard.hpp"

#include <pthread.h>

#include <mutex>

namespace gpuhal::detail {

std::atomic<uint32_t> g_forks{0};

void watch_forks() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, [] { g_forks.fetch_add(1); }); });
}

}  // namespace gpuhal::detail
