// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_virtual_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "host_plugin.hpp"
#include "host_device_mappings.hpp"
#include "host_entries.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;

namespace {

struct Physical {
  HostContext *owner = nullptr;
  int fd = -1;
  uint64_t bytes = 0;
  int mappings = 0;
  bool released = false;  // vm_release was called: freed with its last mapping
};

struct Mapping {
  uint64_t bytes = 0;
  Physical *physical = nullptr;
  bool accessible = false;  // in the registry (read-write)
};

struct Reservation {
  HostContext *owner = nullptr;
  uint64_t bytes = 0;
  std::map<uintptr_t, Mapping> mappings;  // by start address
};

}  // namespace

struct VmState {
  std::mutex mu;
  std::map<uintptr_t, Reservation> reservations;  // by base
  std::map<Physical *, std::unique_ptr<Physical>> physical;
};

std::shared_ptr<VmState> make_virtual_memory_state() {
  return std::make_shared<VmState>();
}

namespace {

// The plugin's table, part of its state (made by the first init, deleted by
// the last shutdown): neither a static object, whose destructor would race
// the core's teardown at exit, nor a leaked block, which LeakSanitizer
// finds unreachable once the plugin is unloaded.
VmState &vm() {
  return *plugin_state().virtual_memory;
}

bool multiple(uint64_t v) { return v % page_size() == 0; }

// The reservation of `c` holding [at, at + bytes), or nullptr.
Reservation *reservation_of(HostContext *c, uintptr_t at, uint64_t bytes, uintptr_t *base) {
  auto &rs = vm().reservations;
  auto it = rs.upper_bound(at);
  if (it == rs.begin()) return nullptr;
  --it;
  if (it->second.owner != c || at - it->first > it->second.bytes || bytes > it->second.bytes - (at - it->first))
    return nullptr;
  *base = it->first;
  return &it->second;
}

// Drops one mapping's or the handle's hold on `p`; frees it with the last.
void drop(Physical *p) {
  if (p->mappings > 0 || !p->released) return;
  ::close(p->fd);
  if (p->owner->device()->limit) p->owner->device()->used.fetch_sub(p->bytes);
  vm().physical.erase(p);
}

// Returns [at, at + bytes) to the reservation: no pages, no access.
void unmap_range(HostContext *c, uintptr_t at, Mapping &m) {
  if (m.accessible) plugin_state().registry.erase(at, c, RegionKind::VirtualMapped);
  ::mmap(reinterpret_cast<void *>(at), size_t(m.bytes), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
         -1, 0);
  --m.physical->mappings;
  drop(m.physical);
}

}  // namespace

gpuhal_status_t vm_granularity(gpuhal_context_t ctx, uint64_t *minimum, uint64_t *recommended) {
  return in_context(ctx, "vm_granularity", [&](HostContext *) -> gpuhal_status_t {
    if (!minimum && !recommended) return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_granularity: both outputs are NULL");
    if (minimum) *minimum = page_size();
    // Huge pages where the kernel has them (reservations of 2 MiB steps map
    // onto them), else the page.
    if (recommended) *recommended = std::max(page_size(), huge_page_size());
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t vm_reserve(gpuhal_context_t ctx, uint64_t bytes, uint64_t alignment, gpuhal_deviceptr_t *out) {
  return in_context(ctx, "vm_reserve", [&](HostContext *c) -> gpuhal_status_t {
    if (bytes == 0 || !multiple(bytes) || bytes > (uint64_t(1) << 46))
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_reserve: bytes " + std::to_string(bytes) +
                                                  " is not a positive multiple of the granularity (" +
                                                  std::to_string(page_size()) + ") below 64 TiB");
    if (alignment & (alignment - 1))
      return fail(GPUHAL_ERROR_INVALID_VALUE,
                  "vm_reserve: alignment " + std::to_string(alignment) + " is neither 0 nor a power of two");
    const uint64_t align = std::max(alignment, page_size());
    void *p = ::mmap(nullptr, size_t(bytes + align), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "vm_reserve: mmap of " + std::to_string(bytes) + " bytes failed");
    const uintptr_t start = reinterpret_cast<uintptr_t>(p), base = (start + align - 1) & ~(align - 1);
    if (base > start) ::munmap(p, size_t(base - start));
    if (const uintptr_t tail = start + bytes + align - (base + bytes); tail)
      ::munmap(reinterpret_cast<void *>(base + bytes), size_t(tail));
    std::lock_guard<std::mutex> lock(vm().mu);
    vm().reservations[base] = Reservation{c, bytes, {}};
    *out = base;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t vm_free(gpuhal_context_t ctx, gpuhal_deviceptr_t base, uint64_t bytes) {
  return in_context(ctx, "vm_free", [&](HostContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(vm().mu);
    auto it = vm().reservations.find(uintptr_t(base));
    if (it == vm().reservations.end() || it->second.owner != c || it->second.bytes != bytes)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_free: [" + hex(base) + ", +" + std::to_string(bytes) +
                                                  ") is not a reservation of this context, as reserved");
    if (!it->second.mappings.empty())
      return fail(GPUHAL_ERROR_INVALID_VALUE,
                  "vm_free: the reservation still has " + std::to_string(it->second.mappings.size()) +
                      " mapping(s); unmap them first");
    ::munmap(reinterpret_cast<void *>(uintptr_t(base)), size_t(bytes));
    vm().reservations.erase(it);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t vm_create(gpuhal_context_t ctx, uint64_t bytes, gpuhal_physical_memory_t *out) {
  return in_context(ctx, "vm_create", [&](HostContext *c) -> gpuhal_status_t {
    if (bytes == 0 || !multiple(bytes))
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_create: bytes " + std::to_string(bytes) +
                                                  " is not a positive multiple of the granularity (" +
                                                  std::to_string(page_size()) + ")");
    HostDevice *d = c->device();
    // A memfd is sparse, so ftruncate takes any size; CUDA's cuMemCreate
    // refuses more than the device has (CUDA_ERROR_OUT_OF_MEMORY), and so
    // does the host device beyond its total memory.
    if (bytes > d->total_memory)
      return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "vm_create: " + std::to_string(bytes) +
                                                  " bytes pass the device's total memory of " +
                                                  std::to_string(d->total_memory));
    if (d->limit && d->used.fetch_add(bytes) + bytes > d->limit) {
      d->used.fetch_sub(bytes);
      return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "vm_create: " + std::to_string(bytes) +
                                                  " bytes pass the device's memory limit");
    }
    const int fd = memfd_create("gpuhal-vm", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, off_t(bytes)) != 0) {
      if (fd >= 0) ::close(fd);
      if (d->limit) d->used.fetch_sub(bytes);
      return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "vm_create: a memfd of " + std::to_string(bytes) + " bytes failed");
    }
    auto p = std::make_unique<Physical>();
    p->owner = c;
    p->fd = fd;
    p->bytes = bytes;
    Physical *raw = p.get();
    std::lock_guard<std::mutex> lock(vm().mu);
    vm().physical[raw] = std::move(p);
    *out = reinterpret_cast<gpuhal_physical_memory_t>(raw);
    return GPUHAL_SUCCESS;
  });
}

namespace {
// The live, unreleased physical memory `memory` of `c`, or nullptr (vm().mu held).
Physical *physical_of(HostContext *c, gpuhal_physical_memory_t memory) {
  auto it = vm().physical.find(reinterpret_cast<Physical *>(memory));
  if (it == vm().physical.end() || it->second->owner != c || it->second->released) return nullptr;
  return it->second.get();
}
}  // namespace

gpuhal_status_t vm_release(gpuhal_context_t ctx, gpuhal_physical_memory_t memory) {
  return in_context(ctx, "vm_release", [&](HostContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(vm().mu);
    Physical *p = physical_of(c, memory);
    if (!p) return fail(GPUHAL_ERROR_INVALID_HANDLE, "vm_release: not a live physical memory handle of this context");
    p->released = true;
    drop(p);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t vm_map(gpuhal_context_t ctx, gpuhal_deviceptr_t at, uint64_t bytes, gpuhal_physical_memory_t memory,
                       uint64_t offset) {
  return in_context(ctx, "vm_map", [&](HostContext *c) -> gpuhal_status_t {
    if (bytes == 0 || !multiple(at) || !multiple(bytes) || !multiple(offset))
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_map: address, size and offset must be multiples of the granularity (" +
                                                  std::to_string(page_size()) + "), the size positive");
    std::lock_guard<std::mutex> lock(vm().mu);
    Physical *p = physical_of(c, memory);
    if (!p) return fail(GPUHAL_ERROR_INVALID_HANDLE, "vm_map: not a live physical memory handle of this context");
    if (offset > p->bytes || bytes > p->bytes - offset)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_map: offset " + std::to_string(offset) + " + " +
                                                  std::to_string(bytes) + " bytes pass the physical memory's " +
                                                  std::to_string(p->bytes));
    uintptr_t base = 0;
    Reservation *r = reservation_of(c, uintptr_t(at), bytes, &base);
    if (!r)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_map: [" + hex(at) + ", +" + std::to_string(bytes) +
                                                  ") is not inside one reservation of this context");
    auto next = r->mappings.lower_bound(uintptr_t(at));
    const bool overlaps_next = next != r->mappings.end() && next->first < uintptr_t(at) + bytes;
    const bool overlaps_prev = next != r->mappings.begin() && std::prev(next)->first + std::prev(next)->second.bytes > at;
    if (overlaps_next || overlaps_prev)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_map: [" + hex(at) + ", +" + std::to_string(bytes) +
                                                  ") is already mapped in part (unmap it first)");
    void *got = ::mmap(reinterpret_cast<void *>(uintptr_t(at)), size_t(bytes), PROT_NONE, MAP_SHARED | MAP_FIXED, p->fd,
                       off_t(offset));
    if (got == MAP_FAILED) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "vm_map: mmap of the physical memory failed");
    r->mappings[uintptr_t(at)] = Mapping{bytes, p, false};
    ++p->mappings;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t vm_unmap(gpuhal_context_t ctx, gpuhal_deviceptr_t at, uint64_t bytes) {
  return in_context(ctx, "vm_unmap", [&](HostContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(vm().mu);
    uintptr_t base = 0;
    Reservation *r = reservation_of(c, uintptr_t(at), bytes, &base);
    auto it = r ? r->mappings.find(uintptr_t(at)) : decltype(r->mappings.end()){};
    if (!r || it == r->mappings.end() || it->second.bytes != bytes)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_unmap: [" + hex(at) + ", +" + std::to_string(bytes) +
                                                  ") is not one mapping of this context (a mapping is unmapped whole)");
    unmap_range(c, it->first, it->second);
    r->mappings.erase(it);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t vm_set_access(gpuhal_context_t ctx, gpuhal_deviceptr_t at, uint64_t bytes, int32_t device,
                              uint32_t access) {
  return in_context(ctx, "vm_set_access", [&](HostContext *c) -> gpuhal_status_t {
    if (device < 0 || device >= int32_t(plugin_state().devices.size()))
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_set_access: device " + std::to_string(device) + " does not exist");
    if (access == GPUHAL_VM_ACCESS_READ)
      return fail(GPUHAL_ERROR_NOT_SUPPORTED,
                  "vm_set_access: the host backend grants read and write together (its copies write through the "
                  "process's own page protection): use GPUHAL_VM_ACCESS_READ_WRITE");
    if (access != GPUHAL_VM_ACCESS_NONE && access != GPUHAL_VM_ACCESS_READ_WRITE)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_set_access: unknown access " + std::to_string(access));
    std::lock_guard<std::mutex> lock(vm().mu);
    uintptr_t base = 0;
    Reservation *r = reservation_of(c, uintptr_t(at), bytes, &base);
    // The range must be whole mappings that follow each other without a gap.
    auto it = r ? r->mappings.find(uintptr_t(at)) : decltype(r->mappings.end()){};
    uintptr_t end = uintptr_t(at);
    std::vector<std::map<uintptr_t, Mapping>::iterator> covered;
    if (r)
      for (; it != r->mappings.end() && it->first == end && end < uintptr_t(at) + bytes; ++it) {
        covered.push_back(it);
        end += it->second.bytes;
      }
    if (bytes == 0 || end != uintptr_t(at) + bytes)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_set_access: [" + hex(at) + ", +" + std::to_string(bytes) +
                                                  ") is not a range of whole mappings of this context");
    const int prot = access == GPUHAL_VM_ACCESS_NONE ? PROT_NONE : PROT_READ | PROT_WRITE;
    if (::mprotect(reinterpret_cast<void *>(uintptr_t(at)), size_t(bytes), prot) != 0)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "vm_set_access: mprotect failed");
    for (auto &m : covered) {
      const bool want = access != GPUHAL_VM_ACCESS_NONE;
      if (want && !m->second.accessible)
        plugin_state().registry.insert(m->first, Region{m->second.bytes, c, RegionKind::VirtualMapped, 0});
      if (!want && m->second.accessible) plugin_state().registry.erase(m->first, c, RegionKind::VirtualMapped);
      m->second.accessible = want;
    }
    return GPUHAL_SUCCESS;
  });
}

void release_virtual_memory(HostContext *c) {
  std::lock_guard<std::mutex> lock(vm().mu);
  for (auto it = vm().reservations.begin(); it != vm().reservations.end();) {
    if (it->second.owner != c) {
      ++it;
      continue;
    }
    for (auto &m : it->second.mappings) unmap_range(c, m.first, m.second);
    ::munmap(reinterpret_cast<void *>(it->first), size_t(it->second.bytes));
    it = vm().reservations.erase(it);
  }
  for (auto it = vm().physical.begin(); it != vm().physical.end();) {
    Physical *p = it->second.get();
    ++it;
    if (p->owner != c) continue;
    p->released = true;
    p->mappings = 0;
    drop(p);
  }
}

}  // namespace gpuhal::host
