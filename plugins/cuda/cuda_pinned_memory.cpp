// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's host memory: pinned and mapped allocations
// (cuMemHostAlloc; gpuhal's flag bits are CUDA's) and registrations
// (cuMemHostRegister), remembered per context for is_pinned and for
// context_destroy.
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_context.hpp"
#include "cuda_entries.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {

// ---- host memory -------------------------------------------------------------------------

namespace {
// host_alloc and host_register: records a range the driver pinned in `made`
// and in the pinned ranges.
void remember_pinned(CudaContext *c, std::unordered_set<void *> CudaContext::*made, void *ptr, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(c->mu);
  (c->*made).insert(ptr);
  c->pinned_ranges[reinterpret_cast<uintptr_t>(ptr)] = size_t(bytes);
}

// host_free and host_unregister: `ptr` must be in `made` (else `refusal`,
// `why`); once the driver released it, it leaves `made` and the pinned
// ranges.
gpuhal_status_t release_pinned(const char *entry, gpuhal_context_t ctx, void *ptr,
                               std::unordered_set<void *> CudaContext::*made, gpuhal_status_t refusal, const char *why,
                               CUresult (*Driver::*release)(void *), const char *call) {
  return in_context(ctx, entry, [&](CudaContext *c) -> gpuhal_status_t {
    size_t range_bytes = 0;
    return release_tracked(
        c,
        [&] {
          if (!(c->*made).erase(ptr)) return false;
          auto range = c->pinned_ranges.find(reinterpret_cast<uintptr_t>(ptr));
          if (range != c->pinned_ranges.end()) {
            range_bytes = range->second;
            c->pinned_ranges.erase(range);
          }
          return true;
        },
        refusal, why, [&] { return cu_call(drv().*release, call, ptr); },
        [&] {
          (c->*made).insert(ptr);
          if (range_bytes) c->pinned_ranges.emplace(reinterpret_cast<uintptr_t>(ptr), range_bytes);
        });
  });
}
// True when [a, a + n) shares a byte with a pinned or registered range.
bool overlaps_pinned(CudaContext *c, uintptr_t a, uint64_t n) {
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = c->pinned_ranges.lower_bound(a + n);  // the first range starting at or after the end
  return it != c->pinned_ranges.begin() && std::prev(it)->first + std::prev(it)->second > a;
}
}  // namespace

gpuhal_status_t host_alloc(gpuhal_context_t ctx, uint64_t bytes, uint32_t flags, void **out) {
  if (const gpuhal_status_t st =
          plugin::check_host_memory_args("host_alloc", plugin::HostArg::Output, out, bytes, flags);
      st != GPUHAL_SUCCESS)
    return st;
  return in_context(ctx, "host_alloc", [&](CudaContext *c) -> gpuhal_status_t {
    // gpuhal's flag bits are CUDA's CU_MEMHOSTALLOC_* bits.
    void *p = nullptr;
    if (const gpuhal_status_t call_st = cu_call(drv().cuMemHostAlloc, "cuMemHostAlloc", &p, size_t(bytes), flags);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    remember_pinned(c, &CudaContext::host_allocations, p, bytes);
    *out = p;
    return GPUHAL_SUCCESS;
  });
}


gpuhal_status_t host_free(gpuhal_context_t ctx, void *ptr) {
  return release_pinned("host_free", ctx, ptr, &CudaContext::host_allocations, GPUHAL_ERROR_INVALID_VALUE,
                        "host_free: not a host allocation of this context", &Driver::cuMemFreeHost, "cuMemFreeHost");
}

gpuhal_status_t host_register(gpuhal_context_t ctx, void *ptr, uint64_t bytes, uint32_t flags) {
  if (const gpuhal_status_t st =
          plugin::check_host_memory_args("host_register", plugin::HostArg::Range, ptr, bytes, flags);
      st != GPUHAL_SUCCESS)
    return st;
  return in_context(ctx, "host_register", [&](CudaContext *c) -> gpuhal_status_t {
    // Refused here rather than by the driver, which says INVALID_VALUE for
    // a range inside cuMemHostAlloc's memory (seen on an H100), not that it
    // is page-locked already.
    if (overlaps_pinned(c, reinterpret_cast<uintptr_t>(ptr), bytes))
      return fail(GPUHAL_ERROR_ALREADY_REGISTERED,
                  "host_register: the range overlaps pinned or registered memory of this context");
    const unsigned cu_flags = ((flags & GPUHAL_HOST_ALLOC_PORTABLE) ? CU_MEMHOSTREGISTER_PORTABLE : 0u) |
                              ((flags & GPUHAL_HOST_ALLOC_MAPPED) ? CU_MEMHOSTREGISTER_DEVICEMAP : 0u);
    if (const gpuhal_status_t call_st =
            cu_call(drv().cuMemHostRegister, "cuMemHostRegister", ptr, size_t(bytes), cu_flags);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    remember_pinned(c, &CudaContext::registrations, ptr, bytes);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t host_unregister(gpuhal_context_t ctx, void *ptr) {
  return release_pinned("host_unregister", ctx, ptr, &CudaContext::registrations, GPUHAL_ERROR_NOT_REGISTERED,
                        "host_unregister: not registered in this context", &Driver::cuMemHostUnregister,
                        "cuMemHostUnregister");
}

gpuhal_status_t host_get_device_pointer(gpuhal_context_t ctx, void *host_ptr, gpuhal_deviceptr_t *out) {
  if (!host_ptr || !out) return fail(GPUHAL_ERROR_INVALID_VALUE, "host_get_device_pointer: null pointer");
  return in_context(ctx, "host_get_device_pointer", [&](CudaContext *) -> gpuhal_status_t {
    CUdeviceptr d = 0;
    if (const gpuhal_status_t call_st =
            cu_call(drv().cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer", &d, host_ptr, 0u);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    *out = d;
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::cuda
