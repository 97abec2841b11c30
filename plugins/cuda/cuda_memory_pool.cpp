// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend's memory pools as objects (plugin ABI 1.16): each is a
// pool of its own made with cuMemPoolCreate, never the device's default
// pool (CuPy's and PyTorch's) and never the context's pool behind
// mem_alloc_async, so tuning it changes no one else's memory. It is
// IPC-capable where the device allows (create_device_pool; its memory is
// shared as the context pool's is, cuda_ipc.cpp). Its memory is
// remembered in the context like every allocation (context_destroy frees
// what is left, then destroys the pools) and freed with mem_free_async.
#include <mutex>
#include <string>

#include "cuda_context.hpp"
#include "cuda_entries.hpp"
#include "cuda_stream.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {

namespace {

CUmemoryPool native_pool(gpuhal_mem_pool_t pool) { return reinterpret_cast<CUmemoryPool>(pool); }

// Runs body(pool) when `pool` is a live pool made by mem_pool_create in
// ctx; ERROR_INVALID_HANDLE naming `entry` otherwise (a destroyed pool's
// handle is invalid to the driver, which might reuse it).
template <class Body>
gpuhal_status_t in_pool(gpuhal_context_t ctx, gpuhal_mem_pool_t pool, const char *entry, Body &&body) {
  return in_context(ctx, entry, [&](CudaContext *c) -> gpuhal_status_t {
    {
      std::lock_guard<std::mutex> lock(c->mu);
      if (!c->object_pools.count(native_pool(pool)))
        return fail(GPUHAL_ERROR_INVALID_HANDLE, std::string(entry) + ": not a live memory pool of this context");
    }
    return body(c, native_pool(pool));
  });
}

// GPUHAL_MEM_POOL_* as the driver's attribute (the kit checked the range).
CUmemPool_attribute driver_attribute(uint32_t attribute) {
  switch (attribute) {
    case GPUHAL_MEM_POOL_RELEASE_THRESHOLD: return CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    case GPUHAL_MEM_POOL_RESERVED_CURRENT: return CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT;
    case GPUHAL_MEM_POOL_RESERVED_HIGH: return CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH;
    case GPUHAL_MEM_POOL_USED_CURRENT: return CU_MEMPOOL_ATTR_USED_MEM_CURRENT;
    default: return CU_MEMPOOL_ATTR_USED_MEM_HIGH;
  }
}

}  // namespace

gpuhal_status_t mem_pool_create(gpuhal_context_t ctx, uint32_t, gpuhal_mem_pool_t *out) {
  if (!drv().cuMemPoolCreate || !drv().cuMemAllocFromPoolAsync || !drv().cuMemPoolDestroy ||
      !drv().cuMemPoolTrimTo || !drv().cuMemPoolGetAttribute || !drv().cuMemPoolSetAttribute)
    return fail(GPUHAL_ERROR_NOT_SUPPORTED, "mem_pool_create: this driver has no memory pools (cuMemPoolCreate)");
  return in_context(ctx, "mem_pool_create", [&](CudaContext *c) -> gpuhal_status_t {
    CUmemoryPool pool = nullptr;
    bool exportable = false;
    // A new pool's release threshold is already 0 (cuda.h's default),
    // which plugin.h promises.
    if (const CUresult r = create_device_pool(c, &pool, &exportable, "a memory pool (mem_pool_create)");
        r != CUDA_SUCCESS)
      return drv().error(r, "cuMemPoolCreate");
    try {
      std::lock_guard<std::mutex> lock(c->mu);
      c->object_pools[pool] = PoolShare{exportable, -1, 0};
    } catch (...) {
      drv().cuMemPoolDestroy(pool);
      throw;
    }
    *out = reinterpret_cast<gpuhal_mem_pool_t>(pool);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t mem_pool_destroy(gpuhal_context_t ctx, gpuhal_mem_pool_t pool) {
  return in_context(ctx, "mem_pool_destroy", [&](CudaContext *c) -> gpuhal_status_t {
    PoolShare kept;
    return release_tracked(
        c,
        [&] {
          auto it = c->object_pools.find(native_pool(pool));
          if (it == c->object_pools.end()) return false;
          // Its memory is no longer offered to importers (what they opened stays theirs).
          withdraw_pool_exports(c, it->first, &it->second);
          kept = it->second;
          c->object_pools.erase(it);
          return true;
        },
        GPUHAL_ERROR_INVALID_HANDLE, "mem_pool_destroy: not a live memory pool of this context",
        // cuda.h: with allocations still out "the function will return
        // immediately and the resources associated with the pool will be
        // released automatically once there are no more outstanding
        // allocations".
        [&] { return cu_call(drv().cuMemPoolDestroy, "cuMemPoolDestroy", native_pool(pool)); },
        [&] { c->object_pools[native_pool(pool)] = kept; });
  });
}

gpuhal_status_t mem_pool_alloc_async(gpuhal_context_t ctx, gpuhal_mem_pool_t pool, uint64_t bytes,
                                     gpuhal_stream_t stream, gpuhal_deviceptr_t *out) {
  if (bytes > SIZE_MAX) return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_pool_alloc_async: size too large");
  return in_pool(ctx, pool, "mem_pool_alloc_async", [&](CudaContext *c, CUmemoryPool p) -> gpuhal_status_t {
    if (!known_stream(c, stream)) return fail(GPUHAL_ERROR_INVALID_HANDLE, "mem_pool_alloc_async: invalid stream");
    CUdeviceptr ptr = 0;
    if (const gpuhal_status_t st = cu_call(drv().cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", &ptr,
                                           size_t(bytes), p, native(stream));
        st != GPUHAL_SUCCESS)
      return st;
    return remember_async(c, ptr, native(stream), out, [&] { c->object_pool_allocations[ptr] = p; });
  });
}

gpuhal_status_t mem_pool_trim(gpuhal_context_t ctx, gpuhal_mem_pool_t pool, uint64_t keep_bytes) {
  return in_pool(ctx, pool, "mem_pool_trim", [&](CudaContext *, CUmemoryPool p) {
    return cu_call(drv().cuMemPoolTrimTo, "cuMemPoolTrimTo", p, size_t(keep_bytes > SIZE_MAX ? SIZE_MAX : keep_bytes));
  });
}

gpuhal_status_t mem_pool_get_attribute(gpuhal_context_t ctx, gpuhal_mem_pool_t pool, uint32_t attribute,
                                       uint64_t *out) {
  return in_pool(ctx, pool, "mem_pool_get_attribute", [&](CudaContext *, CUmemoryPool p) {
    // Every attribute gpuhal names is a cuuint64_t in the driver.
    return cu_call(drv().cuMemPoolGetAttribute, "cuMemPoolGetAttribute", p, driver_attribute(attribute),
                   static_cast<void *>(out));
  });
}

gpuhal_status_t mem_pool_set_attribute(gpuhal_context_t ctx, gpuhal_mem_pool_t pool, uint32_t attribute,
                                       uint64_t value) {
  return in_pool(ctx, pool, "mem_pool_set_attribute", [&](CudaContext *, CUmemoryPool p) -> gpuhal_status_t {
    if (attribute == GPUHAL_MEM_POOL_RESERVED_CURRENT || attribute == GPUHAL_MEM_POOL_USED_CURRENT)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_pool_set_attribute: the current reserved and used bytes are read-only");
    // cuda.h on the high watermarks: "High watermark can only be reset to zero."
    if (attribute != GPUHAL_MEM_POOL_RELEASE_THRESHOLD && value != 0)
      return fail(GPUHAL_ERROR_INVALID_VALUE,
                  "mem_pool_set_attribute: a high watermark can only be reset to 0, not " + std::to_string(value));
    return cu_call(drv().cuMemPoolSetAttribute, "cuMemPoolSetAttribute", p, driver_attribute(attribute),
                   static_cast<void *>(&value));
  });
}

}  // namespace gpuhal::cuda
