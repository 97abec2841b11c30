// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's contexts: what the plugin made in each, and the shapes
// every entry that works in a context shares (in_context, create_tracked,
// release_tracked, cu_call). Each object's own state and helpers are in its
// header (cuda_stream.hpp, cuda_event.hpp, cuda_kernel.hpp, cuda_graph.hpp,
// cuda_virtual_memory.hpp).
//
// The plugin remembers what it made in a context (streams, events,
// allocations, host memory, registrations, IPC mappings, modules) so that
// context_destroy frees all of it, as the ABI requires.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cuda_driver.hpp"
#include "cuda_graph.hpp"
#include "cuda_kernel.hpp"
#include "cuda_virtual_memory.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {

using plugin::fail;
using plugin::guard;

// A stream-ordered pool's IPC state (cuda_ipc.cpp), guarded by its
// context's mu: whether the pool was made with a POSIX-descriptor handle
// type, its descriptor once exported (-1 before; open until the pool's
// exports are withdrawn) and its serial (names the pool to importers).
struct PoolShare {
  bool exportable = false;
  int fd = -1;
  uint64_t serial = 0;
};

struct CudaContext {
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext cu = nullptr;
  // cu is another library's (context_adopt): never released or reset here.
  bool adopted = false;
  std::mutex mu;  // guards the sets below
  std::unordered_set<CUstream> streams;
  std::unordered_set<CUevent> events;
  std::unordered_set<CUdeviceptr> allocations;
  std::unordered_set<void *> host_allocations;
  std::unordered_set<void *> registrations;
  // cuIpcOpenMemHandle of a handle already open in the context returns the
  // same pointer and counts a reference: each open is closed once.
  std::unordered_map<CUdeviceptr, int> ipc_mappings;
  // Stream-ordered memory (mem_alloc_async), from `pool` or, without one,
  // the device's default pool (not exportable by IPC).
  std::unordered_set<CUdeviceptr> pool_allocations;
  // IPC of `pool`'s memory (cuda_ipc.cpp), guarded by mu. Exporter side:
  // the pool's shareable descriptor (made on the first export, -1 before)
  // and its serial, and the token each exported allocation is published
  // under (withdrawn when it is freed). Importer side: the pools imported
  // (by exporting process and pool serial) and the allocations imported
  // from them (by exporting process and token), one reference per open.
  PoolShare pool_share;  // of `pool`
  std::unordered_map<CUdeviceptr, uint64_t> pool_exports;
  struct PoolImport {
    CUdeviceptr ptr = 0;
    int refs = 0;
    uint64_t bytes = 0;  // mapped from ptr on
  };
  std::map<std::pair<uint32_t, uint64_t>, CUmemoryPool> imported_pools;
  std::map<std::pair<uint32_t, uint64_t>, PoolImport> pool_imports;
  std::unordered_set<CUmodule> modules;
  std::unordered_map<const CudaKernel *, std::unique_ptr<CudaKernel>> kernels;
  // Pinned and registered host ranges (base -> bytes), for is_pinned.
  std::map<uintptr_t, size_t> pinned_ranges;
  // The pinned chunks pageable copies are staged through (cuda_staging.hpp),
  // made on the first such copy; guarded by staging_mu.
  struct StagingSlot {
    void *buffer = nullptr;
    CUevent done = nullptr;
    bool used = false;
  };
  std::mutex staging_mu;
  std::vector<StagingSlot> staging;
  // Device limits read at context creation (for launch checks).
  int shared_per_block = 0;
  int shared_optin = 0;
  // Virtual memory (cuda_virtual_memory.cpp), guarded by vm_mu: reservations
  // (base -> bytes), mappings (start -> bytes) and live physical memory,
  // all given back at context_destroy.
  std::mutex vm_mu;
  std::map<CUdeviceptr, size_t> vm_reservations, vm_mappings;
  std::unordered_map<const CudaPhysical *, std::unique_ptr<CudaPhysical>> vm_physical;
  // CU_DEVICE_ATTRIBUTE_MAX_PITCH: the largest pitch cuMemcpy3D takes (0: unknown, no 3-D copies).
  size_t max_pitch = 0;
  CUmemoryPool pool = nullptr;  // the context's own stream-ordered pool (nullptr: none; cuMemAllocAsync)
  // Pools made by mem_pool_create (cuda_memory_pool.cpp) with their IPC
  // state, and the live allocations from them (allocation -> its pool);
  // guarded by mu, destroyed at context_destroy after their memory is freed.
  std::unordered_map<CUmemoryPool, PoolShare> object_pools;
  std::unordered_map<CUdeviceptr, CUmemoryPool> object_pool_allocations;
  // Stream capture (cuda_graph.cpp), guarded by capture_mu: captures begun
  // here and not ended, by origin stream, with the graph the driver builds
  // and the kernel nodes recorded so far; `active_captures` counts them
  // without the lock (a launch asks the driver for its node only while it
  // is not zero). The graphs and execs made here (freed with the context).
  std::mutex capture_mu;
  std::unordered_map<CUstream, CudaGraph> captures;
  std::atomic<int> active_captures{0};
  std::unordered_map<const CudaGraph *, std::unique_ptr<CudaGraph>> graphs;
  std::unordered_map<const CudaGraphExec *, std::unique_ptr<CudaGraphExec>> graph_execs;
};

// Gives back what IPC of the stream-ordered pool holds in c (context_destroy,
// after it synchronised): imported allocations (cuMemFree) and pools
// (cuMemPoolDestroy), the published exports (withdrawn) and the pool's
// shareable descriptor. Driver errors are ignored (the context is going).
void release_pool_ipc(CudaContext *c);
// Withdraws the IPC export of the pool allocation at `base`, if any (c->mu
// held): an importer asking after this is refused.
void withdraw_pool_export(CudaContext *c, CUdeviceptr base);

// The live context for a handle, or nullptr.
CudaContext *find(gpuhal_context_t handle);
gpuhal_status_t bad_context(const char *entry);

inline const Driver &drv() {
  return driver();
}

// True on the thread running a host function (cuLaunchHostFunc): "The host
// function must not make any CUDA API calls", so every entry refuses there.
bool on_callback_thread();
// True in a child process forked after the driver was initialised: CUDA is
// not fork-safe (the driver's and the plugin's threads are not there).
bool in_forked_child();

// Makes a context current on the calling thread for one entry and puts the
// caller's back after (cuCtxPushCurrent / cuCtxPopCurrent): the thread's
// context stack is shared with every other CUDA user in the process (the
// CUDA runtime, PyTorch, CuPy, Numba), so gpuhal never leaves it changed.
// Nothing is pushed when the context is already current. enter() also
// refuses a host-function thread and a forked child.
class ScopedContext {
 public:
  ScopedContext() = default;
  ScopedContext(const ScopedContext &) = delete;
  ScopedContext &operator=(const ScopedContext &) = delete;
  ~ScopedContext();
  gpuhal_status_t enter(CUcontext cu, const char *entry);

 private:
  bool pushed_ = false;
};

// The refusal of an entry on a host-function thread or in a forked child,
// or GPUHAL_SUCCESS (for entries that call the driver without a context).
gpuhal_status_t check_thread(const char *entry);

// Runs a driver entry point (NULL when this driver lacks it: then
// ERROR_NOT_SUPPORTED) and translates its result (Driver::error names the
// call): every driver call that fails the entry goes through it, as
//   if (const gpuhal_status_t call_st = cu_call(drv().cuX, "cuX", ...); call_st != GPUHAL_SUCCESS) return call_st;
template <class Fn, class... Args>
gpuhal_status_t cu_call(Fn *fn, const char *name, Args... args) {
  if (!fn) return plugin::fail(GPUHAL_ERROR_NOT_SUPPORTED, std::string(name) + " is not provided by this driver");
  const CUresult r = fn(args...);
  return r == CUDA_SUCCESS ? GPUHAL_SUCCESS : drv().error(r, name);
}

// The one shape of every entry that releases what the context tracks: take
// it out of c's books (`take` returns false when c does not know it: then
// `refusal`, `why`), release it in the driver, and put it back (`restore`)
// when the driver did not release it, so that the caller can retry or
// report it. Taken out before the release, not after: the driver may give
// the same address or handle to another thread's new object as soon as it
// is released, and that object's record must not be the one forgotten (nor
// may two threads release one object). `take` and `restore` run under
// c->mu; `release` runs without it.
template <class Take, class Release, class Restore>
gpuhal_status_t release_tracked(CudaContext *c, Take take, gpuhal_status_t refusal, const char *why,
                                Release release, Restore restore) {
  {
    std::lock_guard<std::mutex> lock(c->mu);
    if (!take()) return plugin::fail(refusal, why);
  }
  const gpuhal_status_t st = release();
  if (st != GPUHAL_SUCCESS) {
    std::lock_guard<std::mutex> lock(c->mu);
    restore();
  }
  return st;
}

// stream_create and event_create (whose `out` and `flags` the kit's argument
// rules checked before the entry: plugin_table.hpp): in the context
// create(&native) makes the driver's object,
// which is recorded in the context's `made` set and handed out. Recording
// it can fail only for memory; the object is then destroyed with `destroy`
// so that nothing the driver made is lost.
template <class Native, class Handle, class Create>
gpuhal_status_t create_tracked(gpuhal_context_t ctx, const char *entry, Handle *out,
                               std::unordered_set<Native> CudaContext::*made, CUresult (*Driver::*destroy)(Native),
                               Create create);

// The shape of every entry that works in a context: resolves the handle
// (ERROR_INVALID_HANDLE naming `entry`), makes the context current for the
// body (the caller's comes back afterwards), and runs body(c) under guard()
// (an exception becomes a status naming `entry`).
template <class Body>
gpuhal_status_t in_context(gpuhal_context_t ctx, const char *entry, Body &&body) {
  CudaContext *c = find(ctx);
  if (!c) return bad_context(entry);
  ScopedContext scoped;
  if (const gpuhal_status_t st = scoped.enter(c->cu, entry); st != GPUHAL_SUCCESS) return st;
  return plugin::guard(entry, [&]() -> gpuhal_status_t { return body(c); });
}

// Keeps a new stream-ordered allocation in c (context_destroy frees what is
// left), and where it came from with note() (under c->mu), then hands it
// out; on failure to keep it, frees it again on `stream`.
template <class Note>
gpuhal_status_t remember_async(CudaContext *c, CUdeviceptr p, CUstream stream, gpuhal_deviceptr_t *out, Note note) {
  try {
    std::lock_guard<std::mutex> lock(c->mu);
    c->allocations.insert(p);  // cuMemFree frees it too, at context_destroy
    note();
  } catch (...) {
    drv().cuMemFreeAsync(p, stream);
    throw;
  }
  *out = p;
  return GPUHAL_SUCCESS;
}

// A stream-ordered pool of c's device (cuMemPoolCreate), made with the
// POSIX-descriptor handle type where the device takes one (*exportable
// then true), else a plain one, with a warning naming `what` and the
// driver's refusal (cuda_context.cpp).
CUresult create_device_pool(CudaContext *c, CUmemoryPool *out, bool *exportable, const char *what);
// Withdraws the exports of `pool`'s allocations and closes its descriptor
// (c->mu held): mem_pool_destroy, before the pool goes (cuda_ipc.cpp).
void withdraw_pool_exports(CudaContext *c, CUmemoryPool pool, PoolShare *share);

template <class Native, class Handle, class Create>
gpuhal_status_t create_tracked(gpuhal_context_t ctx, const char *entry, Handle *out,
                               std::unordered_set<Native> CudaContext::*made, CUresult (*Driver::*destroy)(Native),
                               Create create) {
  return in_context(ctx, entry, [&](CudaContext *c) -> gpuhal_status_t {
    Native native = nullptr;
    if (const gpuhal_status_t st = create(&native); st != GPUHAL_SUCCESS) return st;
    try {
      std::lock_guard<std::mutex> lock(c->mu);
      (c->*made).insert(native);
    } catch (...) {
      (drv().*destroy)(native);
      throw;
    }
    *out = reinterpret_cast<Handle>(native);
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::cuda
