// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Implementation objects behind the public handles.
//
// Ownership (design §4): handles hold shared_ptrs to these. A ContextImpl
// holds its RuntimeImpl (so the plugin stays loaded); streams, events and
// allocations hold their ContextImpl. Devices live inside the RuntimeImpl and
// are handed out with shared_ptr's aliasing constructor, so a Device handle
// keeps the runtime alive without a reference cycle. The primary context is
// cached weakly: it is released when nothing uses it (CUDA's primary-context
// retain/release).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dealloc_queue.hpp"
#include "fork_guard.hpp"
#include "gpuhal/context.hpp"
#include "gpuhal/memory_manager.hpp"
#include "gpuhal/runtime.hpp"
#include "backend.hpp"
#include "plugin_library.hpp"

namespace gpuhal::detail {

// The impl of a public handle, or ERROR_INVALID_HANDLE naming the call when
// the handle is empty (moved from, or default-constructed).
template <class T>
const std::shared_ptr<T> &require_handle(const std::shared_ptr<T> &impl, const char *what) {
  if (!impl)
    throw Error(Status::ERROR_INVALID_HANDLE,
                std::string(what) + ": empty handle (moved from, or default-constructed)");
  return impl;
}

struct ContextImpl;

// A host range the plugin holds registered (host_register), with how many
// of the user's registrations use it. Pieces never overlap: a registration
// over bytes some pieces cover already registers only the gaps between them
// (drivers refuse a second registration of any byte), so one user
// registration can span several adjacent pieces. See host_memory.cpp.
struct Registration {
  uint64_t size = 0;
  uint32_t flags = 0;
  int count = 0;  // user registrations touching the piece; 0 only after a failed unregister
};

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
};

// True in a child of fork() for a runtime its parent loaded.
inline bool inherited_runtime(const RuntimeImpl &r) {
  return r.forks != fork_count();
}

struct ContextImpl {
  std::shared_ptr<RuntimeImpl> runtime;
  DeviceImpl *device = nullptr;
  gpuhal_context_t handle = nullptr;
  // Bumped by reset(); objects remember the generation they were made in.
  std::atomic<uint64_t> generation{1};
  // fork_count() when the context was made: a different count means this is
  // a child of fork() holding its parent's context (fork_guard.hpp).
  uint32_t forks = 0;
  // Deferred releases of this context's objects (created with the context).
  std::unique_ptr<DeallocQueue> deallocs;
  // Registered host memory: the plugin's pieces by start address, and the
  // user's registrations (start, size) with their counts.
  std::mutex registrations_mutex;
  std::map<uintptr_t, Registration> registrations;
  std::map<std::pair<uintptr_t, uint64_t>, int> user_registrations;
  // Serves every allocation of the context (installed by create_context).
  std::unique_ptr<MemoryManager> manager;
  // The core's own kernels (DeviceArray::assign / fill), compiled on first
  // use in the current generation. The module refers to this context
  // without owning it (no cycle): ~ContextImpl drops it first, and only
  // the core's calls, made while a caller holds the context, use it.
  std::mutex builtin_mutex;
  std::shared_ptr<struct ModuleImpl> builtin_module;

  // Made over another library's vendor context (Context::adopt): never
  // reset by gpuhal.
  bool adopted = false;
  // The runtime's backend (cached: every call goes through it).
  const Backend *backend_ = nullptr;

  ~ContextImpl();
  const Backend &backend() const { return *backend_; }
  const PluginLibrary &lib() const { return *runtime->library; }
  const Logger &logger() const { return runtime->library->logger(); }
  void check(gpuhal_status_t status, const char *call) const { lib().check(status, call); }
  // A query's answer: false for NOT_READY, true for SUCCESS; any other
  // status throws naming `call`.
  bool ready(gpuhal_status_t status, const char *call) const {
    if (status == GPUHAL_NOT_READY) return false;
    check(status, call);
    return true;
  }
  // Throws ERROR_CONTEXT_DESTROYED when an object of generation `gen` is used
  // after a reset (or when the reset could not create a new context), and
  // ERROR_NOT_PERMITTED in a child of fork() for its parent's objects.
  // Inline: every call of every object does it.
  void check_alive(uint64_t gen, const char *what) const {
    if (__builtin_expect(
            gen == generation.load(std::memory_order_acquire) && handle != nullptr && forks == fork_count(), 1))
      return;
    context_destroyed(what);
  }
  // True in a child of fork() for a context its parent made: nothing of it
  // may call the plugin (destructors do nothing).
  bool inherited() const { return forks != fork_count(); }
  [[noreturn]] void context_destroyed(const char *what) const;
  uint64_t current_generation() const { return generation.load(std::memory_order_acquire); }
  // Queues `release` (a plugin call for an object of generation `gen`),
  // skipped if the context was reset before it runs.
  void defer_release(uint64_t gen, uint64_t bytes, std::function<gpuhal_status_t()> release, const char *call);
  // Reports a failed plugin release that happened in a destructor to the
  // deallocation error handler (nothing may throw from a destructor).
  void report_release_failure(gpuhal_status_t status, const char *call) const;
};

// Creates the context for `device` (context_create + its deallocation
// queue), or with `adopt` one over that vendor context (context_adopt).
std::shared_ptr<ContextImpl> create_context(const std::shared_ptr<RuntimeImpl> &runtime, DeviceImpl *device,
                                            const uint64_t *adopt = nullptr);

// What a stream or an event keeps: its context (kept alive), the plugin's
// handle, and the context generation it was made in (a reset ends it).
template <class Handle>
struct ContextChild {
  std::shared_ptr<ContextImpl> ctx;
  Handle handle = nullptr;
  uint64_t generation = 0;
  // The handle after checking the context is still the one it was made in.
  Handle live(const char *what) const {
    ctx->check_alive(generation, what);
    return handle;
  }
};

// A new child object (stream, event, module) of a live context; throws
// ERROR_CONTEXT_RESET-style errors naming `what` when the context is gone.
template <class Impl>
std::shared_ptr<Impl> new_child(const std::shared_ptr<ContextImpl> &ctx, const char *what) {
  const uint64_t gen = ctx->current_generation();
  ctx->check_alive(gen, what);
  auto out = std::make_shared<Impl>();
  out->ctx = ctx;
  out->generation = gen;
  return out;
}

struct StreamImpl : ContextChild<gpuhal_stream_t> {  // handle NULL: the default stream
  bool owned = false;
  ~StreamImpl();
};

struct EventImpl : ContextChild<gpuhal_event_t> {
  ~EventImpl();
};

struct Allocation {
  std::shared_ptr<ContextImpl> ctx;
  gpuhal_deviceptr_t ptr = 0;
  uint64_t size = 0;
  uint64_t generation = 0;
  // False for device views of host memory (mapped): nothing to mem_free.
  bool owns_device_memory = true;
  // Keeps the memory behind a non-owning view alive (a mapped host buffer).
  std::shared_ptr<void> keep_alive;
  // Memory a manager handed out with MemoryManager::wrap_block: given back
  // with releaser->release_block(ptr, size, cookie) by the destructor.
  MemoryManager *releaser = nullptr;
  uint64_t cookie = 0;
  // Stream-ordered memory: freed with mem_free_async on this stream.
  std::shared_ptr<struct StreamImpl> free_stream;
  // Managed memory (mem_alloc_managed): the host addresses it at `ptr` too.
  bool managed = false;
  ~Allocation();
};

// Allocates `bytes` (> 0) in `ctx` from the backend; freed through the
// deferred queue.
std::shared_ptr<Allocation> allocate(const std::shared_ptr<ContextImpl> &ctx, uint64_t bytes, bool managed = false);
// Managed memory of `bytes` (> 0) from the backend (mem_alloc_managed),
// freed through the deferred queue like device memory.
std::shared_ptr<Allocation> allocate_managed(const std::shared_ptr<ContextImpl> &ctx, uint64_t bytes);
// The backend's mem_alloc (or mem_alloc_managed) with the out-of-memory
// rule (flush, retry once).
gpuhal_deviceptr_t backend_alloc(ContextImpl &ctx, uint64_t bytes, bool managed = false);
// Page-locked host memory from the backend, freed through the deferred queue.
std::shared_ptr<void> backend_host_alloc(const std::shared_ptr<ContextImpl> &ctx, uint64_t bytes,
                                         HostMemoryFlags flags);
// The backend's IPC handle for bytes of `mem`.
IpcHandle backend_ipc_handle(const DeviceMemory &mem, uint64_t offset, uint64_t size);
// Makes, checks, attaches and initialises the context's memory manager.
void install_memory_manager(const std::shared_ptr<ContextImpl> &ctx);
// Loads a memory-manager shared object (GPUHAL_MEMORY_MANAGER=/path).
// Throws ERROR_INVALID_CONFIG saying what is wrong with it.
MemoryManagerFactory load_memory_manager_library(const std::string &path);

}  // namespace gpuhal::detail
