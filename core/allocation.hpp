// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Allocation: what DeviceMemory holds; and the backend's allocation
// services the core's memory managers build on.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "context_impl.hpp"
#include "gpuhal/host_memory.hpp"
#include "gpuhal/ipc.hpp"
#include "gpuhal/memory.hpp"
#include "gpuhal/memory_manager.hpp"

namespace gpuhal::detail {

struct StreamImpl;

struct Allocation {
  // User-provided, so that make_shared<Allocation>() stores each member's
  // initial value instead of first zeroing the whole object (a `rep stos`,
  // whose start-up cost was a tenth of an allocation + release).
  Allocation() noexcept {}
  std::shared_ptr<ContextImpl> ctx;
  gpuhal_deviceptr_t ptr = 0;
  uint64_t size = 0;
  uint64_t generation = 0;
  // False for device views of host memory (mapped): nothing to mem_free.
  bool owns_device_memory = true;
  // A device view of host memory (mapped, registered) or of a DLPack
  // producer's memory: nothing the backend's context frees, so nothing a
  // reset must keep (HostVisibleMemory leaves it alone).
  bool views_host_memory = false;
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
  // Handed beyond gpuhal's sight (get_ipc_handle: other processes may still
  // map it after the release; to_dlpack: the consumer may still have work
  // on it), so it is never kept as an idle block for reuse.
  std::atomic<bool> exported{false};
  // Host code may address it behind gpuhal's back (managed memory; device
  // memory exported through DLPack where it is host memory): tracked in the
  // context's HostVisibleMemory so that a reset keeps it as host memory.
  std::atomic<bool> host_visible{false};
  // Tracks it as host-visible (once).
  void mark_host_visible();
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
