// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's per-context bookkeeping and the helpers its entry files
// share (cuda_plugin.cpp: memory, streams, events; cuda_kernels.cpp: device
// code).
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
#include "plugin_support.hpp"

namespace gpuhal::cuda {

using plugin::fail;
using plugin::guard;

// A kernel handle: the function and what launches need to know about it,
// read from the driver once when the kernel is looked up (no driver query
// on the launch path).
struct CudaKernel {
  CUfunction function = nullptr;
  CUmodule module = nullptr;
  int max_threads = 0;                 // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
  int static_shared = 0;               // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is one value per function
  // and the last cuFuncSetAttribute wins: raised only under opt_in_mu, to the
  // largest size any launch needed, so that a slower thread's smaller value
  // never lands after a larger one. dynamic_opt_in is what the driver holds.
  std::mutex opt_in_mu;
  std::atomic<int> dynamic_opt_in{0};
};

// Stream capture (cuda_graphs.cpp): a kernel launch recorded into a graph,
// with what cuGraphExecKernelNodeSetParams needs to replace its arguments.
struct CudaKernelNode {
  CUgraphNode node = nullptr;
  CUfunction function = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
  uint32_t arg_count = 0;
};
struct CudaGraph {
  CUgraph graph = nullptr;
  std::vector<CudaKernelNode> kernels;     // in capture order
  std::vector<std::shared_ptr<void>> kept;  // the recorded callbacks
};
struct CudaGraphExec {
  CUgraphExec exec = nullptr;
  std::vector<CudaKernelNode> kernels;
  std::vector<std::shared_ptr<void>> kept;
};

// Physical memory of cuMemCreate behind a gpuhal_physical_memory_t.
struct CudaPhysical {
  CUmemGenericAllocationHandle handle = 0;
  uint64_t bytes = 0;
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
  // Memory of the default stream-ordered pool (not exportable by IPC).
  std::unordered_set<CUdeviceptr> pool_allocations;
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
  // Stream capture (cuda_graphs.cpp), guarded by capture_mu: captures begun
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

// A launch on `stream` succeeded while a capture of c runs: its node is
// recorded when the stream captures (cuda_graphs.cpp).
void note_captured_launch(CudaContext *c, CUstream stream, CUfunction f, const gpuhal_launch_config_t &config,
                          uint32_t arg_count);
// True when `stream` captures (asked of the driver only while a capture of c
// runs); then `keep` goes to its capture.
bool keep_for_capture(CudaContext *c, CUstream stream, std::shared_ptr<void> keep);
bool stream_capturing(CudaContext *c, CUstream stream);
// A stream destroyed: a capture it began is forgotten.
void forget_capture(CudaContext *c, CUstream stream);
// context_destroy: the context's graphs and execs released in the driver.
void release_graphs(CudaContext *c);

// Lets k take `dynamic` bytes of dynamic shared memory when static and
// dynamic together pass the device's default per-block limit (the driver
// wants an opt-in above it); raised only, under k->opt_in_mu.
gpuhal_status_t opt_in_dynamic_shared(const CudaContext *c, CudaKernel *k, uint32_t dynamic);
// The kernel of c behind `handle`, or nullptr.
CudaKernel *kernel_of(CudaContext *c, gpuhal_kernel_t handle);

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

// Gives back every mapping, physical allocation and reservation of c
// (context_destroy, after it synchronised).
void release_virtual_memory(CudaContext *c);

inline CUstream native(gpuhal_stream_t s) {
  return reinterpret_cast<CUstream>(s);  // NULL, 0x1 and 0x2 mean the same in CUDA
}

// True for an event created in c.
inline bool known_event(CudaContext *c, gpuhal_event_t e) {
  std::lock_guard<std::mutex> lock(c->mu);
  return c->events.count(reinterpret_cast<CUevent>(e)) != 0;
}

// True for a stream made outside gpuhal (Context::external_stream) in c's
// context, as the driver tells (cuStreamGetCtx).
bool external_stream_of(CudaContext *c, gpuhal_stream_t s);

// True for the special stream handles, the streams created in c and
// streams of c's context made outside gpuhal.
inline bool known_stream(CudaContext *c, gpuhal_stream_t s) {
  if (!s || s == GPUHAL_STREAM_LEGACY || s == GPUHAL_STREAM_PER_THREAD) return true;
  {
    std::lock_guard<std::mutex> lock(c->mu);
    if (c->streams.count(native(s)) != 0) return true;
  }
  return external_stream_of(c, s);
}

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

// The one shape of every entry that releases what the context tracks:
// refuse what c does not know (`refusal`, `why`), release it in the driver,
// and forget it only once the driver really released it (a failed release
// leaves it known, so the caller can retry or report it). `known` and
// `forget` run under c->mu; `release` runs without it.
template <class Known, class Release, class Forget>
gpuhal_status_t release_tracked(CudaContext *c, Known known, gpuhal_status_t refusal, const char *why,
                                Release release, Forget forget) {
  {
    std::lock_guard<std::mutex> lock(c->mu);
    if (!known()) return plugin::fail(refusal, why);
  }
  if (const gpuhal_status_t st = release(); st != GPUHAL_SUCCESS) return st;
  std::lock_guard<std::mutex> lock(c->mu);
  forget();
  return GPUHAL_SUCCESS;
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
