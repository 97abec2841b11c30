// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// RuntimeImpl and DeviceImpl: a loaded backend and its devices (see
// handle_access.hpp for the ownership rules).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "backend.hpp"
#include "fork_guard.hpp"
#include "gpuhal/config.hpp"
#include "gpuhal/memory_manager.hpp"
#include "gpuhal/runtime.hpp"
#include "plugin_library.hpp"

namespace gpuhal::detail {

struct ContextImpl;

struct DeviceImpl {
  struct RuntimeImpl *runtime = nullptr;
  int ordinal = 0;
  DeviceProperties properties;
  std::mutex mutex;  // guards primary
  std::weak_ptr<ContextImpl> primary;
};

struct RuntimeImpl {
  uint32_t forks = fork_count();  // fork_guard.hpp
  Config config;
  std::unique_ptr<PluginLibrary> library;
  std::unique_ptr<Backend> backend;  // over `library`, made with it
  std::vector<LoadAttempt> attempts;
  std::vector<std::unique_ptr<DeviceImpl>> devices;
  // GPUHAL_MEMORY_MANAGER's choice (empty: the default manager).
  MemoryManagerFactory memory_manager;
  // The deallocation queue's limits for contexts made from now on: the
  // config's, until Runtime::set_pending_deallocation_limits. Read by
  // create_context under the device's mutex (see that function).
  std::mutex dealloc_limits_mutex;
  uint64_t dealloc_count = 0;
  double dealloc_ratio = 0;
};

// The byte limit of `ratio` of a device's memory, after checking the ratio
// (ERROR_INVALID_VALUE naming `call` outside 0..1).
uint64_t dealloc_byte_limit(const DeviceImpl &device, double ratio, const char *call);

// True in a child of fork() for a runtime its parent loaded.
inline bool inherited_runtime(const RuntimeImpl &r) {
  return r.forks != fork_count();
}

}  // namespace gpuhal::detail
