// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend's virtual memory (plugin.h, ABI 1.10): CUDA's virtual
// memory management. Physical memory is pinned device memory of the
// context's device (CU_MEM_ALLOCATION_TYPE_PINNED); the driver checks the
// granularity, the reservation and mapping rules (cuda.h, quoted in the
// fake driver), and this file keeps what the context made, to give it back
// at context_destroy and to refuse handles of other contexts.
#include <string>

#include "cuda_context.hpp"
#include "cuda_entries.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {

namespace {

bool have_vmm() {
  const Driver &d = drv();
  return d.cuMemAddressReserve && d.cuMemAddressFree && d.cuMemCreate && d.cuMemRelease && d.cuMemMap &&
         d.cuMemUnmap && d.cuMemSetAccess && d.cuMemGetAllocationGranularity;
}

gpuhal_status_t no_vmm(const char *entry) {
  return fail(GPUHAL_ERROR_NOT_SUPPORTED,
              std::string(entry) + ": this driver has no virtual memory management (cuMemAddressReserve ...)");
}

// What cuMemCreate and cuMemGetAllocationGranularity are asked about:
// pinned memory on the context's device.
CUmemAllocationProp device_memory_prop(const CudaContext *c) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, c->device};
  return prop;
}

}  // namespace

gpuhal_status_t vm_granularity(gpuhal_context_t ctx, uint64_t *minimum, uint64_t *recommended) {
  return in_context(ctx, "vm_granularity", [&](CudaContext *c) -> gpuhal_status_t {
    if (!have_vmm()) return no_vmm("vm_granularity");
    if (!minimum && !recommended) return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_granularity: both outputs are NULL");
    const CUmemAllocationProp prop = device_memory_prop(c);
    size_t g = 0;
    if (minimum) {
      if (const gpuhal_status_t st = cu_call(drv().cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity", &g,
                                             &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
          st != GPUHAL_SUCCESS)
        return st;
      *minimum = g;
    }
    if (recommended) {
      if (const gpuhal_status_t st = cu_call(drv().cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity", &g,
                                             &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
          st != GPUHAL_SUCCESS)
        return st;
      *recommended = g;
    }
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t vm_reserve(gpuhal_context_t ctx, uint64_t bytes, uint64_t alignment, gpuhal_deviceptr_t *out) {
  return in_context(ctx, "vm_reserve", [&](CudaContext *c) -> gpuhal_status_t {
    if (!have_vmm()) return no_vmm("vm_reserve");
    CUdeviceptr p = 0;
    if (const gpuhal_status_t st = cu_call(drv().cuMemAddressReserve, "cuMemAddressReserve", &p, size_t(bytes),
                                           size_t(alignment), CUdeviceptr(0), 0ull);
        st != GPUHAL_SUCCESS)
      return st;
    std::lock_guard<std::mutex> lock(c->vm_mu);
    c->vm_reservations[p] = size_t(bytes);
    *out = p;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t vm_free(gpuhal_context_t ctx, gpuhal_deviceptr_t base, uint64_t bytes) {
  return in_context(ctx, "vm_free", [&](CudaContext *c) -> gpuhal_status_t {
    if (!have_vmm()) return no_vmm("vm_free");
    std::lock_guard<std::mutex> lock(c->vm_mu);
    auto it = c->vm_reservations.find(base);
    if (it == c->vm_reservations.end() || it->second != bytes)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_free: not a reservation of this context, as reserved");
    auto m = c->vm_mappings.lower_bound(base);
    if (m != c->vm_mappings.end() && m->first < base + bytes)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_free: the reservation still has mappings; unmap them first");
    if (const gpuhal_status_t st = cu_call(drv().cuMemAddressFree, "cuMemAddressFree", base, size_t(bytes));
        st != GPUHAL_SUCCESS)
      return st;
    c->vm_reservations.erase(it);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t vm_create(gpuhal_context_t ctx, uint64_t bytes, gpuhal_physical_memory_t *out) {
  return in_context(ctx, "vm_create", [&](CudaContext *c) -> gpuhal_status_t {
    if (!have_vmm()) return no_vmm("vm_create");
    const CUmemAllocationProp prop = device_memory_prop(c);
    auto p = std::make_unique<CudaPhysical>();
    p->bytes = bytes;
    if (const gpuhal_status_t st = cu_call(drv().cuMemCreate, "cuMemCreate", &p->handle, size_t(bytes), &prop, 0ull);
        st != GPUHAL_SUCCESS)
      return st;
    std::lock_guard<std::mutex> lock(c->vm_mu);
    *out = reinterpret_cast<gpuhal_physical_memory_t>(p.get());
    c->vm_physical[p.get()] = std::move(p);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t vm_release(gpuhal_context_t ctx, gpuhal_physical_memory_t memory) {
  return in_context(ctx, "vm_release", [&](CudaContext *c) -> gpuhal_status_t {
    if (!have_vmm()) return no_vmm("vm_release");
    std::lock_guard<std::mutex> lock(c->vm_mu);
    auto it = c->vm_physical.find(reinterpret_cast<const CudaPhysical *>(memory));
    if (it == c->vm_physical.end())
      return fail(GPUHAL_ERROR_INVALID_HANDLE, "vm_release: not a live physical memory handle of this context");
    // cuda.h: "The generic memory handle can be freed when there are still
    // outstanding mappings made with this handle"; the memory goes with them.
    if (const gpuhal_status_t st = cu_call(drv().cuMemRelease, "cuMemRelease", it->second->handle);
        st != GPUHAL_SUCCESS)
      return st;
    c->vm_physical.erase(it);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t vm_map(gpuhal_context_t ctx, gpuhal_deviceptr_t at, uint64_t bytes, gpuhal_physical_memory_t memory,
                       uint64_t offset) {
  return in_context(ctx, "vm_map", [&](CudaContext *c) -> gpuhal_status_t {
    if (!have_vmm()) return no_vmm("vm_map");
    std::lock_guard<std::mutex> lock(c->vm_mu);
    auto it = c->vm_physical.find(reinterpret_cast<const CudaPhysical *>(memory));
    if (it == c->vm_physical.end())
      return fail(GPUHAL_ERROR_INVALID_HANDLE, "vm_map: not a live physical memory handle of this context");
    if (const gpuhal_status_t st =
            cu_call(drv().cuMemMap, "cuMemMap", at, size_t(bytes), size_t(offset), it->second->handle, 0ull);
        st != GPUHAL_SUCCESS)
      return st;
    c->vm_mappings[at] = size_t(bytes);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t vm_unmap(gpuhal_context_t ctx, gpuhal_deviceptr_t at, uint64_t bytes) {
  return in_context(ctx, "vm_unmap", [&](CudaContext *c) -> gpuhal_status_t {
    if (!have_vmm()) return no_vmm("vm_unmap");
    std::lock_guard<std::mutex> lock(c->vm_mu);
    if (const gpuhal_status_t st = cu_call(drv().cuMemUnmap, "cuMemUnmap", at, size_t(bytes)); st != GPUHAL_SUCCESS)
      return st;
    c->vm_mappings.erase(at);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t vm_set_access(gpuhal_context_t ctx, gpuhal_deviceptr_t at, uint64_t bytes, int32_t device,
                              uint32_t access) {
  return in_context(ctx, "vm_set_access", [&](CudaContext *) -> gpuhal_status_t {
    if (!have_vmm()) return no_vmm("vm_set_access");
    if (access != GPUHAL_VM_ACCESS_NONE && access != GPUHAL_VM_ACCESS_READ && access != GPUHAL_VM_ACCESS_READ_WRITE)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_set_access: unknown access " + std::to_string(access));
    // GPUHAL_VM_ACCESS_* are CUmemAccess_flags' values.
    const CUmemAccessDesc desc{CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, device}, int(access)};
    return cu_call(drv().cuMemSetAccess, "cuMemSetAccess", at, size_t(bytes), &desc, size_t(1));
  });
}

void release_virtual_memory(CudaContext *c) {
  const Driver &d = drv();
  if (!have_vmm()) return;
  std::lock_guard<std::mutex> lock(c->vm_mu);
  for (const auto &m : c->vm_mappings) (void)d.cuMemUnmap(m.first, m.second);
  for (const auto &p : c->vm_physical) (void)d.cuMemRelease(p.second->handle);
  for (const auto &r : c->vm_reservations) (void)d.cuMemAddressFree(r.first, r.second);
  c->vm_mappings.clear();
  c->vm_physical.clear();
  c->vm_reservations.clear();
}

}  // namespace gpuhal::cuda
