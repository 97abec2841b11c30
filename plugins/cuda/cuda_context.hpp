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
  std::atomic<int> dynamic_opt_in{0};  // the largest dynamic size opted in so far
};

struct CudaContext {
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext cu = nullptr;
  std::mutex mu;  // guards the sets below
  std::unordered_set<CUstream> streams;
  std::unordered_set<CUevent> events;
  std::unordered_set<CUdeviceptr> allocations;
  std::unordered_set<void *> host_allocations;
  std::unordered_set<void *> registrations;
  std::unordered_set<CUdeviceptr> ipc_mappings;
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
};

// The live context for a handle, or nullptr.
CudaContext *find(gpuhal_context_t handle);
gpuhal_status_t bad_context(const char *entry);

inline const Driver &drv() {
  return driver();
}

inline CUstream native(gpuhal_stream_t s) {
  return reinterpret_cast<CUstream>(s);  // NULL, 0x1 and 0x2 mean the same in CUDA
}

// True for the special stream handles and the streams created in c.
inline bool known_stream(CudaContext *c, gpuhal_stream_t s) {
  if (!s || s == GPUHAL_STREAM_LEGACY || s == GPUHAL_STREAM_PER_THREAD) return true;
  std::lock_guard<std::mutex> lock(c->mu);
  return c->streams.count(native(s)) != 0;
}

}  // namespace gpuhal::cuda

// Runs a driver call; on failure returns the translated status from the
// enclosing entry. Optional entry points this driver lacks report
// ERROR_NOT_SUPPORTED.
#define CU_CALL(fn, ...)                                                                           \
  do {                                                                                             \
    if (!drv().fn) return fail(GPUHAL_ERROR_NOT_SUPPORTED, #fn " is not provided by this driver"); \
    const CUresult r_ = drv().fn(__VA_ARGS__);                                                     \
    if (r_ != CUDA_SUCCESS) return drv().error(r_, #fn);                                           \
  } while (0)

// Resolves the context and makes it current, or returns from the entry.
#define WITH_CONTEXT(entry)          \
  CudaContext *c = find(ctx);        \
  if (!c) return bad_context(entry); \
  CU_CALL(cuCtxSetCurrent, c->cu)
