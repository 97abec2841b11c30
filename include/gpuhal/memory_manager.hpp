// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Memory managers: Numba's External Memory Management (EMM) plugin interface,
// version 1, in C++.
//
// Every context owns one MemoryManager, made when the context is created and
// kept for its life. All device allocations of the context (device_array,
// to_device, Context::allocate, MirroredArray, ...) come from its memalloc;
// pinned and mapped host arrays from memhostalloc; IPC handles from
// get_ipc_handle; Context::memory_info from get_memory_info;
// Context::reset calls reset then initialize; DeferCleanup scopes call
// defer_cleanup_begin / end.
//
// Which manager a new context gets, first match wins:
//   1. set_memory_manager(factory) -- for contexts created afterwards;
//   2. GPUHAL_MEMORY_MANAGER: "default", "pool", or an absolute path to a
//      shared object implementing gpuhal/memory_manager.h (checked when the
//      runtime loads: a bad library is ERROR_INVALID_CONFIG saying why);
//   3. the default manager.
// As in Numba, changing the manager affects contexts created later only:
// reset() keeps the context's manager; drop every handle (or start a new
// runtime) to switch.
//
// Thread safety: the core may call a manager from several threads at once;
// managers synchronise themselves. A manager must not keep a Context handle
// (the context owns the manager: that would be a cycle); context() gives one
// on demand.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "gpuhal/context.hpp"
#include "gpuhal/host_memory.hpp"
#include "gpuhal/ipc.hpp"
#include "gpuhal/memory.hpp"

namespace gpuhal {

namespace detail {
struct ContextImpl;
void attach_memory_manager(class MemoryManager &mm, const std::shared_ptr<ContextImpl> &ctx);
void release_to_manager(class MemoryManager &mm, DevicePointer ptr, uint64_t bytes, uint64_t cookie) noexcept;
}  // namespace detail

class MemoryManager {
 public:
  static constexpr int kInterfaceVersion = 1;
  virtual ~MemoryManager();

  // Must return kInterfaceVersion; checked when the context is created.
  virtual int interface_version() const { return kInterfaceVersion; }
  // For messages and gpuhal-info: "default", "pool", a library's name.
  virtual std::string name() const = 0;
  // Called before any other entry, and again after every reset: idempotent.
  virtual void initialize() = 0;
  // `bytes` > 0 (the core checks). The returned memory is the manager's to
  // reclaim once its last handle goes.
  virtual DeviceMemory memalloc(uint64_t bytes) = 0;
  // Page-locked host memory (flags as for pinned_array / mapped_array); the
  // deleter of the returned pointer gives it back. Default: the backend's.
  virtual std::shared_ptr<void> memhostalloc(uint64_t bytes, HostMemoryFlags flags);
  // Registers existing host memory. Default: register_host.
  virtual HostRegistration mempin(const HostView &view, bool mapped);
  // A handle for bytes [offset, offset+size) of `memory` (which this manager
  // allocated). Default: the backend's allocation-relative handle.
  virtual IpcHandle get_ipc_handle(const DeviceMemory &memory, uint64_t offset, uint64_t size);
  // Default: the backend's free and total memory.
  virtual MemoryInfo get_memory_info();
  // Frees everything the manager holds (the context is about to be reset or
  // destroyed; memory handed out is freed by the backend with it).
  virtual void reset() {}
  // Cleanup that would synchronise the device should wait while a
  // DeferCleanup scope is active. Nested calls pair up.
  virtual void defer_cleanup_begin() {}
  virtual void defer_cleanup_end() {}

 protected:
  MemoryManager() = default;
  // The owning context. Throws ERROR_CONTEXT_DESTROYED once it is going.
  Context context() const;
  // Building blocks for managers:
  // A device allocation straight from the backend (out of memory: the
  // context's deferred queue is flushed and the allocation retried once,
  // then ERROR_OUT_OF_MEMORY). Give it back with backend_free.
  DevicePointer backend_alloc(uint64_t bytes) const;
  // Frees a backend_alloc allocation through the context's deferred queue
  // (no device synchronisation now). Never throws; failures are logged.
  void backend_free(DevicePointer ptr, uint64_t bytes) const;
  // A handle over [ptr, ptr+bytes) whose last release calls `on_release`
  // (not after a reset of the context, which freed everything).
  DeviceMemory wrap(DevicePointer ptr, uint64_t bytes, std::function<void()> on_release) const;
  // The same without a function object (the fast path of pools): the last
  // release calls release_block(ptr, bytes, cookie).
  DeviceMemory wrap_block(DevicePointer ptr, uint64_t bytes, uint64_t cookie);
  virtual void release_block(DevicePointer ptr, uint64_t bytes, uint64_t cookie);
  // The backend's memory information.
  MemoryInfo backend_memory_info() const;

 private:
  friend void detail::attach_memory_manager(MemoryManager &, const std::shared_ptr<detail::ContextImpl> &);
  friend void detail::release_to_manager(MemoryManager &, DevicePointer, uint64_t, uint64_t) noexcept;
  std::weak_ptr<detail::ContextImpl> weak_ctx_;
  detail::ContextImpl *ctx_ = nullptr;  // the owner: valid for the manager's whole life
};

// Numba's default manager: backend allocations, freed through the context's
// deferred deallocation queue.
class DefaultMemoryManager : public MemoryManager {
 public:
  std::string name() const override { return "default"; }
  void initialize() override {}
  DeviceMemory memalloc(uint64_t bytes) override;
};

// A caching manager. Requests up to max_block_bytes are rounded up to a
// power of two (at least 256 bytes) and served from per-size free lists;
// freed blocks go back to their list at once (stream ordering is the
// caller's: as with any free, no pending work may still use the memory).
// Larger requests go straight to the backend. Cached bytes above
// max_cached_bytes are released (through the deferred queue) when a block
// comes back, unless a DeferCleanup scope is active; out of memory releases
// every cached block and retries once.
struct PoolOptions {
  uint64_t max_block_bytes = uint64_t(64) << 20;
  // 0: an eighth of the device's memory.
  uint64_t max_cached_bytes = 0;
};

struct PoolStats {
  uint64_t hits = 0;          // allocations served from the cache
  uint64_t misses = 0;        // allocations that went to the backend
  uint64_t cached_bytes = 0;  // free blocks held
  uint64_t in_use_bytes = 0;  // blocks handed out (rounded sizes)
  uint64_t released = 0;      // cached blocks given back to the backend
};

class PoolMemoryManager : public MemoryManager {
 public:
  explicit PoolMemoryManager(PoolOptions options = {});
  ~PoolMemoryManager() override;
  std::string name() const override { return "pool"; }
  void initialize() override;
  DeviceMemory memalloc(uint64_t bytes) override;
  void reset() override;
  void defer_cleanup_begin() override;
  void defer_cleanup_end() override;

  PoolStats stats() const;
  // Releases every cached block; returns how many.
  size_t trim();

 protected:
  void release_block(DevicePointer ptr, uint64_t bytes, uint64_t cookie) override;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// How set_memory_manager makes a manager for each new context.
struct MemoryManagerFactory {
  std::string name;
  int interface_version = MemoryManager::kInterfaceVersion;
  std::function<std::unique_ptr<MemoryManager>()> create;
};

MemoryManagerFactory default_memory_manager();
MemoryManagerFactory pool_memory_manager(PoolOptions options = {});

// Contexts created from now on use `factory`. Throws ERROR_ABI_MISMATCH
// ("... has version N - version 1 required") for another interface version
// and ERROR_INVALID_VALUE for an empty factory. Thread-safe.
void set_memory_manager(MemoryManagerFactory factory);
// Back to GPUHAL_MEMORY_MANAGER (or the default) for new contexts.
void clear_memory_manager();

}  // namespace gpuhal
