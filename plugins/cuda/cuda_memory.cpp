// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend's device memory: cuMemAlloc / cuMemAllocManaged /
// cuMemFree, the stream-ordered pool (cuMemAllocAsync / cuMemFreeAsync)
// and the memory info that counts the pool's idle reserve as free. Every
// allocation is remembered in its context, so that context_destroy frees
// what is left.
#include <algorithm>
#include <mutex>
#include <string>

#include "cuda_context.hpp"
#include "cuda_stream.hpp"
#include "cuda_entries.hpp"
#include "cuda_staging.hpp"
#include "cuda_thread_rules.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {

namespace {

// Bytes the default pool reserves but does not use (0 when unknown).
uint64_t pool_idle_bytes(CudaContext *c) {
  if (!c->pool || !drv().cuMemPoolGetAttribute) return 0;
  uint64_t reserved = 0, used = 0;
  if (drv().cuMemPoolGetAttribute(c->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS ||
      drv().cuMemPoolGetAttribute(c->pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) != CUDA_SUCCESS)
    return 0;
  return reserved > used ? reserved - used : 0;
}

// Keeps a new allocation in c (context_destroy frees what is left) and
// hands it out; on failure to keep it, frees it again.
gpuhal_status_t remember(CudaContext *c, CUdeviceptr p, gpuhal_deviceptr_t *out) {
  try {
    std::lock_guard<std::mutex> lock(c->mu);
    c->allocations.insert(p);
  } catch (...) {
    drv().cuMemFree(p);
    throw;
  }
  *out = p;
  return GPUHAL_SUCCESS;
}

}  // namespace

gpuhal_status_t memory_info(gpuhal_context_t ctx, uint64_t *free_bytes, uint64_t *total_bytes) {
  return in_context(ctx, "memory_info", [&](CudaContext *c) -> gpuhal_status_t {
    size_t f = 0, t = 0;
    if (const gpuhal_status_t call_st = cu_call(drv().cuMemGetInfo, "cuMemGetInfo", &f, &t); call_st != GPUHAL_SUCCESS)
      return call_st;
    // What the stream-ordered pool holds unused is not free to the driver but
    // is to gpuhal: stream-ordered allocations reuse it, and mem_alloc trims
    // the pool before it reports out of memory.
    *free_bytes = std::min<uint64_t>(t, uint64_t(f) + pool_idle_bytes(c));
    *total_bytes = t;
    return GPUHAL_SUCCESS;
  });
}

// ---- device memory ---------------------------------------------------------------

gpuhal_status_t mem_alloc(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out) {
  if (bytes == 0 || bytes > SIZE_MAX) return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_alloc: size must be positive");
  return in_context(ctx, "mem_alloc", [&](CudaContext *c) -> gpuhal_status_t {
    CUdeviceptr p = 0;
    CUresult r = drv().cuMemAlloc(&p, size_t(bytes));
    // The pool's reserve is out of cuMemAlloc's reach: given back, then once more.
    if (r == CUDA_ERROR_OUT_OF_MEMORY && drv().cuMemPoolTrimTo && pool_idle_bytes(c) > 0 &&
        drv().cuMemPoolTrimTo(c->pool, 0) == CUDA_SUCCESS)
      r = drv().cuMemAlloc(&p, size_t(bytes));
    if (r != CUDA_SUCCESS) return context_error(c, r, "cuMemAlloc");
    return remember(c, p, out);
  });
}

// cuMemAllocManaged with CU_MEM_ATTACH_GLOBAL (any stream of any device),
// freed by mem_free's cuMemFree. The device's CU_DEVICE_ATTRIBUTE_
// MANAGED_MEMORY is asked first, so that a device without it is refused by
// name rather than by the driver's bare CUDA_ERROR_NOT_SUPPORTED.
gpuhal_status_t mem_alloc_managed(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out) {
  if (bytes == 0 || bytes > SIZE_MAX)
    return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_alloc_managed: size must be positive");
  if (!drv().cuMemAllocManaged)
    return fail(GPUHAL_ERROR_NOT_SUPPORTED, "cuMemAllocManaged is not provided by this driver");
  return in_context(ctx, "mem_alloc_managed", [&](CudaContext *c) -> gpuhal_status_t {
    int supported = 0;
    if (const gpuhal_status_t call_st = cu_call(drv().cuDeviceGetAttribute, "cuDeviceGetAttribute", &supported,
                                                CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, c->device);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    if (!supported)
      return fail(
          GPUHAL_ERROR_NOT_SUPPORTED,
          "mem_alloc_managed: this device cannot have managed memory (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY is 0)");
    CUdeviceptr p = 0;
    const CUresult r = drv().cuMemAllocManaged(&p, size_t(bytes), CU_MEM_ATTACH_GLOBAL);
    if (r != CUDA_SUCCESS) return context_error(c, r, "cuMemAllocManaged");
    return remember(c, p, out);
  });
}

// ---- managed-memory prefetch and advice ----------------------------------------------------

namespace {

// `location` (plugin.h) as the driver's CUmemLocation, after checking that
// a device location is a device of this system that can act on the hint
// (cuda.h: a device location "must have non-zero value for the device
// attribute CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS").
gpuhal_status_t location_of(const char *entry, int32_t location, CUmemLocation *out) {
  if (location == GPUHAL_LOCATION_HOST) {
    *out = CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 0};
    return GPUHAL_SUCCESS;
  }
  int count = 0;
  if (const gpuhal_status_t st = cu_call(drv().cuDeviceGetCount, "cuDeviceGetCount", &count); st != GPUHAL_SUCCESS)
    return st;
  if (location < 0 || location >= count)
    return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": location " + std::to_string(location) +
                                                " is neither a device (0 .. " + std::to_string(count - 1) +
                                                ") nor GPUHAL_LOCATION_HOST");
  int concurrent = 0;
  if (const gpuhal_status_t st = cu_call(drv().cuDeviceGetAttribute, "cuDeviceGetAttribute", &concurrent,
                                         CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, CUdevice(location));
      st != GPUHAL_SUCCESS)
    return st;
  if (!concurrent)
    return fail(GPUHAL_ERROR_NOT_SUPPORTED,
                std::string(entry) + ": device " + std::to_string(location) +
                    " cannot act on managed-memory hints (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS is 0)");
  *out = CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, location};
  return GPUHAL_SUCCESS;
}

}  // namespace

gpuhal_status_t mem_prefetch_async(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, uint64_t bytes, int32_t location,
                                   gpuhal_stream_t stream) {
  return in_context(ctx, "mem_prefetch_async", [&](CudaContext *) -> gpuhal_status_t {
    if (!drv().cuMemPrefetchAsync_v2)
      return fail(GPUHAL_ERROR_NOT_SUPPORTED,
                  "mem_prefetch_async: this driver has no cuMemPrefetchAsync_v2 (CUDA 12.2 or later has it)");
    CUmemLocation where{};
    if (const gpuhal_status_t st = location_of("mem_prefetch_async", location, &where); st != GPUHAL_SUCCESS)
      return st;
    if (bytes == 0) return GPUHAL_SUCCESS;
    return cu_call(drv().cuMemPrefetchAsync_v2, "cuMemPrefetchAsync_v2", ptr, size_t(bytes), where, 0u,
                   native(stream));
  });
}

gpuhal_status_t mem_advise(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, uint64_t bytes, uint32_t advice,
                           int32_t location) {
  return in_context(ctx, "mem_advise", [&](CudaContext *) -> gpuhal_status_t {
    if (advice < GPUHAL_ADVISE_SET_READ_MOSTLY || advice > GPUHAL_ADVISE_UNSET_ACCESSED_BY)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_advise: unknown advice " + std::to_string(advice));
    if (!drv().cuMemAdvise_v2)
      return fail(GPUHAL_ERROR_NOT_SUPPORTED, "mem_advise: this driver has no cuMemAdvise_v2 (CUDA 12.2 or later has it)");
    // The location is ignored for these three (cuda.h); it must still be valid.
    CUmemLocation where{};
    if (const gpuhal_status_t st = location_of("mem_advise", location, &where); st != GPUHAL_SUCCESS) return st;
    if (bytes == 0) return GPUHAL_SUCCESS;
    // GPUHAL_ADVISE_* are CUmem_advise's values.
    return cu_call(drv().cuMemAdvise_v2, "cuMemAdvise_v2", ptr, size_t(bytes), CUmem_advise(advice), where);
  });
}

namespace {
// mem_free and mem_free_async: the allocation out of c's books (every set
// it is in), then `free` (cuMemFree or cuMemFreeAsync), and back when it
// failed (release_tracked).
template <class Free>
gpuhal_status_t release_allocation(CudaContext *c, gpuhal_deviceptr_t ptr, const char *refusal, Free free) {
  bool from_pool = false;
  CUmemoryPool object_pool = nullptr;
  return release_tracked(
      c,
      [&] {
        if (!c->allocations.erase(ptr)) return false;
        from_pool = c->pool_allocations.erase(ptr) != 0;
        if (auto it = c->object_pool_allocations.find(ptr); it != c->object_pool_allocations.end()) {
          object_pool = it->second;
          c->object_pool_allocations.erase(it);
        }
        // Before the free: no importer may map it after.
        if (from_pool || object_pool) withdraw_pool_export(c, ptr);
        return true;
      },
      GPUHAL_ERROR_INVALID_VALUE, refusal, free,
      [&] {
        c->allocations.insert(ptr);
        if (from_pool) c->pool_allocations.insert(ptr);
        if (object_pool) c->object_pool_allocations[ptr] = object_pool;
      });
}
}  // namespace

gpuhal_status_t mem_free(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr) {
  return in_context(ctx, "mem_free", [&](CudaContext *c) -> gpuhal_status_t {
    return release_allocation(c, ptr, "mem_free: not a live allocation of this context",
                              [&] { return cu_call(drv().cuMemFree, "cuMemFree", ptr); });
  });
}

gpuhal_status_t mem_alloc_async(gpuhal_context_t ctx, uint64_t bytes, gpuhal_stream_t stream, gpuhal_deviceptr_t *out) {
  if (bytes == 0 || bytes > SIZE_MAX) return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_alloc_async: size must be positive");
  return in_context(ctx, "mem_alloc_async", [&](CudaContext *c) -> gpuhal_status_t {
    if (!known_stream(c, stream)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "mem_alloc_async: invalid stream");
    CUdeviceptr p = 0;
    const gpuhal_status_t call_st =
        c->pool ? cu_call(drv().cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", &p, size_t(bytes), c->pool,
                          native(stream))
                : cu_call(drv().cuMemAllocAsync, "cuMemAllocAsync", &p, size_t(bytes), native(stream));
    if (call_st != GPUHAL_SUCCESS) return call_st;
    return remember_async(c, p, native(stream), out, [&] { c->pool_allocations.insert(p); });
  });
}

gpuhal_status_t mem_free_async(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, gpuhal_stream_t stream) {
  return in_context(ctx, "mem_free_async", [&](CudaContext *c) -> gpuhal_status_t {
    if (!known_stream(c, stream)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "mem_free_async: invalid stream");
    return release_allocation(c, ptr, "mem_free_async: not a live allocation of this context",
                              [&] { return cu_call(drv().cuMemFreeAsync, "cuMemFreeAsync", ptr, native(stream)); });
  });
}

}  // namespace gpuhal::cuda
