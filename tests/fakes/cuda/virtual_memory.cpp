// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver: virtual memory management (cuMemAddressReserve,
// cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease,
// cuMemAddressFree, cuMemGetAllocationGranularity). Reservations are
// PROT_NONE host mappings, physical memory a memfd, a mapping the memfd
// mapped over part of a reservation. cuda.h's rules, kept as written:
//  - cuMemAddressReserve: "The size and address parameters must be a
//    multiple of the host page size and the alignment must be a power of
//    two or zero for default alignment."
//  - cuMemAddressFree: "The size must match what was given to
//    memAddressReserve and the ptr given must match what was returned".
//  - cuMemCreate: the size must be a multiple of the granularity
//    cuMemGetAllocationGranularity answers with
//    CU_MEM_ALLOC_GRANULARITY_MINIMUM (2 MiB here, an H100's); the type
//    "must be specified as CU_MEM_ALLOCATION_TYPE_PINNED".
//  - cuMemRelease: "The memory allocation will be freed when all
//    outstanding mappings to the memory are unmapped and when all
//    outstanding references to the handle ... are also released."
//  - cuMemMap: "This range must be an address reservation previously
//    reserved with cuMemAddressReserve, and offset + size must be less than
//    the size of the memory allocation. Both ptr, size, and offset must be a
//    multiple of the value given via cuMemGetAllocationGranularity with the
//    CU_MEM_ALLOC_GRANULARITY_MINIMUM flag." "cuMemMap can only create
//    mappings on VA range reservations that are not currently mapped."
//    flags "currently must be zero".
//  - cuMemUnmap: "The range must be the entire contiguous address range
//    that was mapped to." Afterwards "Any new mapping to this virtual
//    address will need to have access granted through cuMemSetAccess, as
//    all mappings start with no accessibility setup."
//  - cuMemSetAccess: "The range must be a fully mapped address range
//    containing all allocations created by cuMemMap / cuMemCreate."
// Memory without access granted is refused by the fake's copies and
// memsets (accessible()). Not modelled: read-only access is recorded but
// writes through it are not refused; shareable handles, multicast, host
// NUMA locations (refused as invalid).
#include <sys/mman.h>
#include <unistd.h>

#include "fake_cuda.hpp"

using namespace fake_cuda;

namespace {

constexpr size_t kGranularity = size_t(2) << 20;

struct Physical {
  int fd = -1;
  size_t size = 0;
  int mappings = 0;
  bool released = false;
};
std::map<CUmemGenericAllocationHandle, Physical> g_physical;  // g_mem_mu
std::map<uintptr_t, size_t> g_reservations;                   // g_mem_mu
CUmemGenericAllocationHandle g_next_handle = 1;

bool page_multiple(uint64_t v) {
  return v % uint64_t(sysconf(_SC_PAGESIZE)) == 0;
}

bool device_prop(const CUmemAllocationProp *prop) {
  return prop && prop->type == 1 /* PINNED */ && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
         !bad_device(prop->location.id);
}

// Frees `h` when it is released and unmapped (g_mem_mu held).
void drop(CUmemGenericAllocationHandle h) {
  auto it = g_physical.find(h);
  if (it == g_physical.end() || !it->second.released || it->second.mappings) return;
  ::close(it->second.fd);
  g_used -= it->second.size;
  g_physical.erase(it);
}

// The reservation holding [p, p + n), or end (g_mem_mu held).
std::map<uintptr_t, size_t>::iterator reservation_of(uintptr_t p, size_t n) {
  auto it = g_reservations.upper_bound(p);
  if (it == g_reservations.begin()) return g_reservations.end();
  --it;
  if (p - it->first >= it->second || n > it->second - (p - it->first)) return g_reservations.end();
  return it;
}

}  // namespace

extern "C" {

API CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop, int option) {
  if (const CUresult r = initialized_entry("cuMemGetAllocationGranularity"); r != OK) return r;
  if (!granularity || !device_prop(prop) || (option != 0 && option != 1)) return INVALID_VALUE;
  *granularity = kGranularity;
  return OK;
}

API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                 unsigned long long flags) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemAddressReserve", &dev); r != OK) return r;
  if (!ptr || size == 0 || !page_multiple(size) || !page_multiple(addr) || (alignment & (alignment - 1)) || flags)
    return INVALID_VALUE;
  const size_t align = std::max<size_t>(alignment, kGranularity);
  void *p = ::mmap(nullptr, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return OUT_OF_MEMORY;
  const uintptr_t start = uintptr_t(p), base = (start + align - 1) & ~(uintptr_t(align) - 1);
  if (base > start) ::munmap(p, base - start);
  if (const uintptr_t tail = start + size + align - (base + size); tail) ::munmap(reinterpret_cast<void *>(base + size), tail);
  std::lock_guard<std::mutex> lock(g_mem_mu);
  g_reservations[base] = size;
  *ptr = base;
  return OK;
}

API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemAddressFree", &dev); r != OK) return r;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto it = g_reservations.find(uintptr_t(ptr));
  if (it == g_reservations.end() || it->second != size) return INVALID_VALUE;
  ::munmap(reinterpret_cast<void *>(uintptr_t(ptr)), size);
  g_reservations.erase(it);
  return OK;
}

API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                         unsigned long long flags) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemCreate", &dev); r != OK) return r;
  if (!handle || size == 0 || size % kGranularity || !device_prop(prop) || flags) return INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  if (g_used + size > g_capacity) return OUT_OF_MEMORY;
  const int fd = memfd_create("fake-cuda-vmm", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, off_t(size)) != 0) {
    if (fd >= 0) ::close(fd);
    return OUT_OF_MEMORY;
  }
  g_used += size;
  *handle = g_next_handle++;
  g_physical[*handle] = Physical{fd, size, 0, false};
  return OK;
}

API CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemRelease", &dev); r != OK) return r;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto it = g_physical.find(handle);
  if (it == g_physical.end() || it->second.released) return INVALID_VALUE;  // undefined in cuda.h: refused here
  it->second.released = true;
  drop(handle);
  return OK;
}

API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                      unsigned long long flags) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemMap", &dev); r != OK) return r;
  if (size == 0 || ptr % kGranularity || size % kGranularity || offset % kGranularity || flags) return INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto ph = g_physical.find(handle);
  if (ph == g_physical.end() || ph->second.released) return INVALID_VALUE;
  if (offset > ph->second.size || size > ph->second.size - offset) return INVALID_VALUE;
  if (reservation_of(uintptr_t(ptr), size) == g_reservations.end()) return INVALID_VALUE;
  auto next = g_vm_mappings.lower_bound(uintptr_t(ptr));
  if (next != g_vm_mappings.end() && next->first < uintptr_t(ptr) + size) return INVALID_VALUE;  // already mapped
  if (next != g_vm_mappings.begin() && std::prev(next)->first + std::prev(next)->second.size > uintptr_t(ptr))
    return INVALID_VALUE;
  if (::mmap(reinterpret_cast<void *>(uintptr_t(ptr)), size, PROT_NONE, MAP_SHARED | MAP_FIXED, ph->second.fd,
             off_t(offset)) == MAP_FAILED)
    return OUT_OF_MEMORY;
  ++ph->second.mappings;
  g_vm_mappings[uintptr_t(ptr)] = VmMapping{size, handle, 0};
  return OK;
}

API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemUnmap", &dev); r != OK) return r;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto it = g_vm_mappings.find(uintptr_t(ptr));
  if (it == g_vm_mappings.end() || it->second.size != size) return INVALID_VALUE;  // the entire mapping only
  ::mmap(reinterpret_cast<void *>(uintptr_t(ptr)), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
         -1, 0);
  const CUmemGenericAllocationHandle h = it->second.handle;
  g_vm_mappings.erase(it);
  if (auto ph = g_physical.find(h); ph != g_physical.end()) --ph->second.mappings;
  drop(h);
  return OK;
}

API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemSetAccess", &dev); r != OK) return r;
  if (!desc || count == 0 || size == 0) return INVALID_VALUE;
  for (size_t i = 0; i < count; ++i)
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || bad_device(desc[i].location.id) ||
        (desc[i].flags != 0 && desc[i].flags != 1 && desc[i].flags != 3))
      return INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  // Whole mappings, one after the other.
  auto it = g_vm_mappings.find(uintptr_t(ptr));
  uintptr_t end = uintptr_t(ptr);
  std::vector<VmMapping *> covered;
  for (; it != g_vm_mappings.end() && it->first == end && end < uintptr_t(ptr) + size; ++it) {
    covered.push_back(&it->second);
    end += it->second.size;
  }
  if (end != uintptr_t(ptr) + size) return INVALID_VALUE;
  const int flags = desc[count - 1].flags;
  if (::mprotect(reinterpret_cast<void *>(uintptr_t(ptr)), size, flags ? PROT_READ | PROT_WRITE : PROT_NONE) != 0)
    return INVALID_VALUE;
  for (VmMapping *m : covered) m->access = flags;
  return OK;
}

}  // extern "C"
