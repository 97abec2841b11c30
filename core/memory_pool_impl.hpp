// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What a MemoryPool handle holds: the pool of its kind (gpuhal/
// memory_pool.hpp). CachingMemoryPool (memory_pool.cpp) keeps idle blocks
// of the backend's allocations per stream; DriverMemoryPool
// (driver_memory_pool.cpp) hands the work to a pool the plugin makes for
// it alone (plugin ABI 1.16, mem_pool_*).
//
// A pool is a MemoryManager so that its blocks go back through the
// memory-manager machinery (wrap_block / release_block: the last handle's
// release returns them here), and so that it can serve its context's
// allocations (memory_manager()). It holds its context weakly: a pool
// installed as its context's manager is owned by the context. Whoever calls
// in holds the context (a MemoryPool handle, an allocation, the context's
// manager slot). Thread-safe.
#pragma once

#include <memory>

#include "context_impl.hpp"
#include "gpuhal/memory_pool.hpp"

namespace gpuhal::detail {

struct MemoryPoolImpl : MemoryManager {
  std::string name() const override { return "memory pool"; }
  void initialize() override {}
  DeviceMemory memalloc(uint64_t bytes) override { return allocate(bytes, context().default_stream()); }

  virtual DeviceMemory allocate(uint64_t bytes, const Stream &stream) = 0;
  // `memory` (this pool's, checked by the caller) goes back in the order of
  // `stream` when its last handle goes.
  virtual void free_on(const DeviceMemory &memory, const Stream &stream) = 0;
  virtual void set_release_threshold(uint64_t bytes) = 0;
  virtual uint64_t release_threshold() = 0;
  virtual uint64_t trim(uint64_t keep_bytes) = 0;
  virtual MemoryPoolStats snapshot() = 0;
  virtual void reset_peak() = 0;

  using MemoryManager::context;
  std::weak_ptr<MemoryPoolImpl> self;  // set by make_memory_pool
};

// Checks shared by every kind's allocate: bytes > 0 and not too many, the
// stream of the pool's context, the context alive. `what` names the call.
void check_pool_request(ContextImpl &c, uint64_t bytes, const Stream &stream, const char *what);

std::shared_ptr<MemoryPoolImpl> make_caching_pool(const std::shared_ptr<ContextImpl> &ctx, MemoryPoolOptions options);
// ERROR_NOT_SUPPORTED naming Capability::DriverMemoryPools where the
// backend has no memory pools as objects.
std::shared_ptr<MemoryPoolImpl> make_driver_pool(const std::shared_ptr<ContextImpl> &ctx, MemoryPoolOptions options);

}  // namespace gpuhal::detail
