// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// MemoryPool: a stream-ordered caching pool of one context's device memory,
// as an object (CuPy's MemoryPool, PyTorch's caching allocator, RMM's pool
// resource), on every backend.
//
// Blocks come from the backend (the context's plugin, not its memory
// manager) and go back to the pool when the last handle of an allocation
// goes, into the idle list of the stream they were allocated on. An
// allocation on stream S takes, in order: an idle block of its size that
// was allocated on S (S's later work is ordered after everything the block
// was used for there); an idle block of another stream T that has no work
// pending (T.query()); a new block from the backend. So a block is reused
// on another stream only after the work of the stream it belonged to is
// done. Work on other streams than the allocation's must be ordered before
// the last handle goes (an event, a synchronisation), as with any free.
//
// Sizes: rounded up to a power of two from 256 bytes to 1 MiB, to a
// multiple of 2 MiB above; a block serves requests of its rounded size.
// Idle bytes above the release threshold are given back to the backend as
// blocks return (through the context's deferred deallocation queue, which
// waits for the context's work first); trim() gives back idle blocks now.
// A context reset frees every block with the context: the pool starts empty
// after it. On the backend's out of memory the pool gives back its idle
// blocks and retries once.
//
// MemoryPoolKind::Driver hands all of it to a stream-ordered pool the
// backend makes for this object alone (needs Capability::DriverMemoryPools;
// cuda: cuMemPoolCreate, never the device's default pool that CuPy and
// PyTorch share, nor the pool behind Context::allocate_async): RMM's
// CudaAsyncMemoryResource, cuda.core's DeviceMemoryResource. Every
// allocation and free is then a driver call (cuMemAllocFromPoolAsync,
// cuMemFreeAsync), ordered on its stream, and the driver decides reuse: a
// block freed on a stream serves that stream's later work at once, another
// stream's once the freeing stream's work before the free is done. Its
// release threshold counts reserved bytes (used and idle, as CUDA's
// CU_MEMPOOL_ATTR_RELEASE_THRESHOLD does) and releases at the next
// synchronisation; its statistics are the driver's (hits and misses are 0:
// the driver does not count them; released_bytes counts trim()). Its
// memory is shared with IPC as allocate_async memory is (the pool is made
// with a shareable handle type where the device allows; elsewhere
// get_ipc_handle is ERROR_NOT_SUPPORTED naming why).
//
// Value handle: copies share the pool; the pool lives while a handle or an
// allocation from it does, and keeps its context alive; when it goes, its
// idle blocks go back to the backend (Driver: the driver's pool is
// destroyed). Thread-safe.
#pragma once

#include <cstdint>
#include <memory>

#include "gpuhal/context.hpp"
#include "gpuhal/memory.hpp"
#include "gpuhal/memory_manager.hpp"
#include "gpuhal/stream.hpp"

namespace gpuhal {

namespace detail {
struct MemoryPoolImpl;
}

enum class MemoryPoolKind {
  Caching,  // the core's caching pool over the backend's allocations (every backend)
  Driver,   // a stream-ordered pool of the backend's own (Capability::DriverMemoryPools)
};

struct MemoryPoolOptions {
  // Idle bytes the pool keeps; above them, the longest-idle blocks go back
  // to the backend as blocks return (Driver: reserved bytes, at the next
  // synchronisation). Default: keep everything until trim().
  // (CUDA's pools release above their threshold at the next
  // synchronisation; this pool does it at the return.)
  uint64_t release_threshold = UINT64_MAX;
  // Which pool (after the threshold, so that MemoryPoolOptions{bytes} keeps
  // meaning a caching pool with that threshold).
  MemoryPoolKind kind = MemoryPoolKind::Caching;
};

struct MemoryPoolStats {
  uint64_t used_bytes = 0;       // handed out, in rounded sizes
  uint64_t reserved_bytes = 0;   // held from the backend: used + idle
  uint64_t peak_used_bytes = 0;  // the highest used_bytes since creation, a reset or reset_peak()
  uint64_t allocations = 0;      // live allocations
  uint64_t hits = 0;             // allocations served by an idle block
  uint64_t misses = 0;           // allocations that went to the backend
  uint64_t released_bytes = 0;   // given back to the backend (threshold, trim, out of memory)
};

class MemoryPool {
 public:
  MemoryPool() = default;  // empty: every call is ERROR_INVALID_HANDLE
  explicit MemoryPool(const Context &context, MemoryPoolOptions options = {});

  // `bytes` > 0 (ERROR_INVALID_VALUE), usable by `stream`'s work from now
  // on; `stream` is of the pool's context (ERROR_INVALID_VALUE otherwise).
  DeviceMemory allocate(uint64_t bytes, const Stream &stream) const;
  // On the context's default stream.
  DeviceMemory allocate(uint64_t bytes) const;
  // Stream-ordered free (cudaFreeAsync's place): `memory` (allocated from
  // this pool: ERROR_INVALID_VALUE otherwise; empty: ERROR_INVALID_HANDLE)
  // goes back in the order of `stream` (of the pool's context) instead of
  // its allocating stream's, and this handle is emptied. Work on other
  // streams that uses it must be ordered before the free's point on
  // `stream` (an event), as in CUDA. Other handles or array views of the
  // memory still keep it: it goes back when the last of them goes. Memory
  // of a context reset since is ERROR_CONTEXT_DESTROYED (the reset freed it).
  void free(DeviceMemory &memory, const Stream &stream) const;

  void set_release_threshold(uint64_t bytes) const;
  uint64_t release_threshold() const;
  // Gives idle blocks back until at most keep_bytes are idle, largest
  // first; returns the bytes given back.
  uint64_t trim(uint64_t keep_bytes = 0) const;
  MemoryPoolStats stats() const;
  void reset_peak() const;

  // A memory manager serving every device allocation of the pool's context
  // from this pool, on the default stream: Context::set_memory_manager(
  // pool.memory_manager()). It holds the pool, not the context.
  std::unique_ptr<MemoryManager> memory_manager() const;

  Context context() const;
  MemoryPoolKind kind() const;
  explicit operator bool() const { return impl_ != nullptr; }
  friend bool operator==(const MemoryPool &a, const MemoryPool &b) { return a.impl_ == b.impl_; }
  friend bool operator!=(const MemoryPool &a, const MemoryPool &b) { return !(a == b); }

 private:
  Context context_;
  MemoryPoolKind kind_ = MemoryPoolKind::Caching;
  std::shared_ptr<detail::MemoryPoolImpl> impl_;
};

}  // namespace gpuhal
