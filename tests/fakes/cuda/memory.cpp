// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver: device memory and transfers.
#include "fake_cuda.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <deque>
#include <utility>

using namespace fake_cuda;

namespace fake_cuda {

namespace {
// cuda.h promises nothing about a freed address: after cuMemFree the
// driver may return it from the next cuMemAlloc of any thread at once (it
// suballocates small allocations from blocks it keeps, so in practice it
// does). A plugin that forgets an allocation after cuMemFree, not before,
// then loses the new allocation another thread got at that address. The
// fake takes the unpleasant side of that freedom: the last kRecentBlocks freed device blocks (g_mem_mu held), handed
// out again for an allocation of the same rounded size, newest first.
constexpr size_t kRecentBlocks = 64;
std::deque<std::pair<size_t, void *>> &g_recent = *new std::deque<std::pair<size_t, void *>>;

size_t rounded(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

void *take_recent_block(size_t bytes) {
  for (auto it = g_recent.rbegin(); it != g_recent.rend(); ++it)
    if (it->first == rounded(bytes)) {
      void *p = it->second;
      g_recent.erase(std::next(it).base());
      return p;
    }
  return std::aligned_alloc(256, rounded(bytes));
}

void keep_recent_block(size_t bytes, void *p) {
  g_recent.emplace_back(rounded(bytes), p);
  if (g_recent.size() > kRecentBlocks) {
    std::free(g_recent.front().second);
    g_recent.pop_front();
  }
}
}  // namespace

// Device memory for `dev`; pool (a slot, -1 for none): what that pool holds
// idle is used first (stream-ordered allocation), else it is not available.
void *map_host_pages(size_t bytes) {
  void *p = mmap(nullptr, (bytes + 4095) / 4096 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void unmap_host_pages(void *p, size_t bytes) {
  munmap(p, (bytes + 4095) / 4096 * 4096);
}

CUresult allocate(CUdeviceptr *p, size_t bytes, int dev, int pool, bool managed) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  if (pool >= 0 && g_pool_idle[pool] >= bytes) {
    g_pool_idle[pool] -= bytes;
  } else if (bytes > g_capacity - g_used - pool_idle_total()) {
    return OUT_OF_MEMORY;
  }
  void *mem = managed ? map_host_pages(bytes) : take_recent_block(bytes);
  if (!mem) return OUT_OF_MEMORY;
  g_used += bytes;
  *p = reinterpret_cast<uintptr_t>(mem);
  static uint64_t serials = 0;
  g_device[*p] = Alloc{bytes, dev, pool, managed, ++serials};
  if (pool >= 0) {
    g_pool_used[pool] += bytes;
    g_pool_used_high[pool] = std::max(g_pool_used_high[pool], g_pool_used[pool]);
    g_pool_reserved_high[pool] = std::max(g_pool_reserved_high[pool], g_pool_used[pool] + g_pool_idle[pool]);
  }
  return OK;
}

// Frees an allocation (g_mem_mu held); pool memory goes back to the pool.
void release_locked(std::map<CUdeviceptr, Alloc>::iterator it, bool to_pool) {
  g_used -= it->second.size;
  const int pool = it->second.pool;
  if (pool >= 0) g_pool_used[pool] -= std::min(g_pool_used[pool], uint64_t(it->second.size));
  if (to_pool && pool >= 0 && !g_pool_destroyed[pool]) g_pool_idle[pool] += it->second.size;
  const bool last_of_destroyed = pool >= 0 && g_pool_destroyed[pool];
  if (it->second.managed)
    unmap_host_pages(reinterpret_cast<void *>(uintptr_t(it->first)), it->second.size);
  else
    keep_recent_block(it->second.size, reinterpret_cast<void *>(uintptr_t(it->first)));
  g_device.erase(it);
  if (last_of_destroyed) {  // a destroyed pool goes with its last allocation
    bool outstanding = false;
    for (auto &kv : g_device) outstanding = outstanding || kv.second.pool == pool;
    if (!outstanding) free_pool_slot_locked(pool);
  }
}

}  // namespace fake_cuda

extern "C" {

API CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemGetInfo_v2", &dev); r != OK) return r;
  if (!free_bytes || !total) return INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  *free_bytes = size_t(g_capacity - g_used - pool_idle_total());  // what pools hold is not free
  *total = size_t(g_capacity);
  return OK;
}
API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemAlloc_v2", &dev); r != OK) return r;
  if (!p || bytes == 0) return INVALID_VALUE;
  return allocate(p, bytes, dev, -1, false);
}

// cuda.h, cuMemAllocManaged: "If the device doesn't support allocating
// managed memory, CUDA_ERROR_NOT_SUPPORTED is returned. [...] If bytesize
// is 0, cuMemAllocManaged returns CUDA_ERROR_INVALID_VALUE." and "flags
// must be one of CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST". "The pointer
// is valid on the CPU and on all GPUs in the system that support managed
// memory": the fake's device memory is the host's, so it is.
API CUresult cuMemAllocManaged(CUdeviceptr *p, size_t bytes, unsigned flags) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemAllocManaged", &dev); r != OK) return r;
  if (!managed_memory_supported()) return NOT_SUPPORTED;
  if (!p || bytes == 0 || (flags != 0x1 && flags != 0x2)) return INVALID_VALUE;
  return allocate(p, bytes, dev, -1, true);
}

API CUresult cuMemFree_v2(CUdeviceptr p) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemFree_v2", &dev); r != OK) return r;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  if (free_pool_import_locked(dev, p)) return OK;
  auto it = g_device.find(p);
  if (it == g_device.end()) return INVALID_VALUE;
  release_locked(it, false);
  return OK;
}

API CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemGetAddressRange_v2", &dev); r != OK) return r;
  CUdeviceptr b;
  size_t s;
  if (!device_range(p, 0, &b, &s)) return INVALID_VALUE;
  if (base) *base = b;
  if (size) *size = s;
  return OK;
}

// ---- transfers ----------------------------------------------------------------------------
API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemcpyHtoDAsync_v2", &dev); r != OK) return r;
  if (n == 0) return OK;
  if (!src || !accessible(dst, n)) return INVALID_VALUE;
  if (host_range_mixed(src, n)) return INVALID_VALUE;  // partly registered (fake_cuda.hpp)
  if (!accessible(uintptr_t(src), n)) {
    // Pageable memory in a capture is not modelled: refused (fake_cuda.hpp).
    if (const CUresult r = refuse_if_capturing(lookup(s), NOT_SUPPORTED); r != OK) return r;
    // Pageable memory: the driver stages it, reading the source before it
    // returns (counted for the tests of the plugin's own staging).
    g_pageable_h2d_bytes += n;
    auto copy = std::make_shared<std::vector<uint8_t>>(static_cast<const uint8_t *>(src),
                                                       static_cast<const uint8_t *>(src) + n);
    return submit(s, [=] { std::memcpy(reinterpret_cast<void *>(uintptr_t(dst)), copy->data(), n); });
  }
  return submit(s, [=] { std::memcpy(reinterpret_cast<void *>(uintptr_t(dst)), src, n); });
}
API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemcpyDtoHAsync_v2", &dev); r != OK) return r;
  if (n == 0) return OK;
  if (!dst || !accessible(src, n)) return INVALID_VALUE;
  if (host_range_mixed(dst, n)) return INVALID_VALUE;  // partly registered (fake_cuda.hpp)
  if (!accessible(uintptr_t(dst), n))  // pageable, in a capture: not modelled (fake_cuda.hpp)
    if (const CUresult r = refuse_if_capturing(lookup(s), NOT_SUPPORTED); r != OK) return r;
  return submit(s, [=] { std::memcpy(dst, reinterpret_cast<const void *>(uintptr_t(src)), n); });
}
API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemcpyDtoDAsync_v2", &dev); r != OK) return r;
  if (n == 0) return OK;
  if (!accessible(dst, n) || !accessible(src, n)) return INVALID_VALUE;
  return submit(s, [=] {
    std::memmove(reinterpret_cast<void *>(uintptr_t(dst)), reinterpret_cast<const void *>(uintptr_t(src)), n);
  });
}
API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemsetD8Async", &dev); r != OK) return r;
  if (n == 0) return OK;
  if (!accessible(dst, n)) return INVALID_VALUE;
  return submit(s, [=] { std::memset(reinterpret_cast<void *>(uintptr_t(dst)), v, n); }, kMemsetNode);
}
// ---- managed-memory hints (cuMemPrefetchAsync_v2, cuMemAdvise_v2) ------------------------------
// cuda.h, kept as written:
//  - "The memory range must refer to managed memory allocated via
//    ::cuMemAllocManaged" (the fake has no __managed__ variables and no
//    pageable-memory access: any other range is CUDA_ERROR_INVALID_VALUE).
//  - Prefetch: a device location's id "must have non-zero value for the
//    device attribute ::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS"
//    (else CUDA_ERROR_INVALID_DEVICE); "flags for future use, must be zero
//    now"; the host location's id "will be ignored".
//  - Advise: SET_READ_MOSTLY, UNSET_READ_MOSTLY and UNSET_PREFERRED_LOCATION
//    ignore the location; SET_PREFERRED_LOCATION and SET_ACCESSED_BY take a
//    device (valid ordinal, concurrent managed access) or the host; "All
//    other location types are invalid."
// Host NUMA locations are not modelled (refused as invalid). The fake's
// managed memory is host memory: a prefetch migrates nothing; it is
// ordered on its stream like any work.
namespace {

bool managed_range(CUdeviceptr p, size_t n) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto it = g_device.upper_bound(p);
  if (it == g_device.begin()) return false;
  --it;
  return it->second.managed && p >= it->first && p - it->first + n <= it->second.size;
}

CUresult check_location(const CUmemLocation &l, bool host_ok) {
  if (l.type == CU_MEM_LOCATION_TYPE_HOST) return host_ok ? OK : INVALID_VALUE;
  if (l.type != CU_MEM_LOCATION_TYPE_DEVICE) return INVALID_VALUE;
  if (bad_device(l.id)) return INVALID_DEVICE;
  if (!managed_memory_supported() || std::getenv("FAKE_CUDA_NO_CONCURRENT_MANAGED_ACCESS")) return INVALID_DEVICE;
  return OK;
}

void remember_hint(int call, int advice, const CUmemLocation &l, size_t n) {
  std::lock_guard<std::mutex> lock(g_hint_mu);
  g_last_hint = Hint{call, advice, l.type, l.id, n};
}

}  // namespace

API CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t n, CUmemLocation location, unsigned flags, CUstream s) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemPrefetchAsync_v2", &dev); r != OK) return r;
  if (flags != 0 || !managed_range(p, n)) return INVALID_VALUE;
  if (const CUresult r = check_location(location, true); r != OK) return r;
  remember_hint(1, 0, location, n);
  return submit(s, [] {});
}

API CUresult cuMemAdvise_v2(CUdeviceptr p, size_t n, int advice, CUmemLocation location) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemAdvise_v2", &dev); r != OK) return r;
  if (advice < 1 || advice > 6 || !managed_range(p, n)) return INVALID_VALUE;
  // SET_PREFERRED_LOCATION (3), SET_ACCESSED_BY (5) and UNSET_ACCESSED_BY (6) name a processor.
  if (advice == 3 || advice == 5 || advice == 6)
    if (const CUresult r = check_location(location, true); r != OK) return r;
  remember_hint(2, advice, location, n);
  return OK;
}

// ---- 3-D copies (cuMemcpy3D) ---------------------------------------------------------------
// cuda.h, cuMemcpy3D, kept as written:
//  - "The ::srcLOD and ::dstLOD members of the ::CUDA_MEMCPY3D structure must
//    be set to 0", and reserved0 / reserved1 "Must be NULL".
//  - "If specified, ::srcPitch must be greater than or equal to
//    ::WidthInBytes + ::srcXInBytes, and ::dstPitch must be greater than or
//    equal to ::WidthInBytes + dstXInBytes."
//  - "If specified, ::srcHeight must be greater than or equal to ::Height +
//    ::srcY, and ::dstHeight must be greater than or equal to ::Height +
//    ::dstY." (srcHeight "may be 0 if Depth==1")
//  - "::cuMemcpy3D() returns an error if any pitch is greater than the
//    maximum allowed (::CU_DEVICE_ATTRIBUTE_MAX_PITCH)."
//  - Start = base + (Z * height + Y) * pitch + XInBytes, for host and device.
// CUDA arrays are not modelled: a copy naming one is refused
// (CUDA_ERROR_NOT_SUPPORTED), never done wrongly. Unified memory types are
// treated as what the address is. Host sides follow the 1-D copies' rules:
// partly registered ranges are refused, pageable ones are refused in a
// capture, and pageable H2D sources are read before the call returns.
namespace {

struct Side3D {
  CUmemorytype type;
  uintptr_t base;
  size_t x, y, z, pitch, height;
};

// The byte span [first, last) a side of the copy touches (false when the
// numbers do not fit in the address space).
bool side_span(const Side3D &s, const CUDA_MEMCPY3D &p, uintptr_t *first, size_t *bytes) {
  const size_t rows_per_slice = p.Depth > 1 ? s.height : p.Height;
  size_t start = 0, extent = 0;
  if (__builtin_mul_overflow(s.z * rows_per_slice + s.y, s.pitch, &start) ||
      __builtin_add_overflow(start, s.x, &start))
    return false;
  size_t rows = 0;
  if (__builtin_mul_overflow(p.Depth - 1, rows_per_slice, &rows) || __builtin_add_overflow(rows, p.Height - 1, &rows) ||
      __builtin_mul_overflow(rows, s.pitch, &extent) || __builtin_add_overflow(extent, p.WidthInBytes, &extent))
    return false;
  *first = s.base + start;
  *bytes = extent;
  return true;
}

CUresult check_side(const Side3D &s, const CUDA_MEMCPY3D &p, const std::shared_ptr<Stream> &target) {
  if (s.type != CU_MEMORYTYPE_HOST && s.type != CU_MEMORYTYPE_DEVICE && s.type != CU_MEMORYTYPE_UNIFIED)
    return s.type == CU_MEMORYTYPE_ARRAY ? NOT_SUPPORTED : INVALID_VALUE;
  if ((p.Height > 1 || p.Depth > 1) && s.pitch < p.WidthInBytes + s.x) return INVALID_VALUE;
  if (p.Depth > 1 && s.height < p.Height + s.y) return INVALID_VALUE;
  if (s.pitch > g_max_pitch) return INVALID_VALUE;
  uintptr_t first = 0;
  size_t bytes = 0;
  if (!s.base || !side_span(s, p, &first, &bytes)) return INVALID_VALUE;
  if (s.type == CU_MEMORYTYPE_DEVICE && !accessible(first, bytes)) return INVALID_VALUE;
  if (s.type == CU_MEMORYTYPE_HOST) {
    if (host_range_mixed(reinterpret_cast<const void *>(first), bytes)) return INVALID_VALUE;
    if (!accessible(first, bytes))
      if (const CUresult r = refuse_if_capturing(target, NOT_SUPPORTED); r != OK) return r;
  }
  return OK;
}

}  // namespace

API CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p, CUstream s) {
  int dev = -1;
  if (const CUresult r = context_entry("cuMemcpy3DAsync_v2", &dev); r != OK) return r;
  if (!p || p->srcLOD || p->dstLOD || p->reserved0 || p->reserved1) return INVALID_VALUE;
  if (p->WidthInBytes == 0 || p->Height == 0 || p->Depth == 0) return OK;
  const Side3D src{p->srcMemoryType, p->srcMemoryType == CU_MEMORYTYPE_HOST ? uintptr_t(p->srcHost) : uintptr_t(p->srcDevice),
                   p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch, p->srcHeight};
  const Side3D dst{p->dstMemoryType, p->dstMemoryType == CU_MEMORYTYPE_HOST ? uintptr_t(p->dstHost) : uintptr_t(p->dstDevice),
                   p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch, p->dstHeight};
  const auto target = lookup(s);
  if (const CUresult r = check_side(src, *p, target); r != OK) return r;
  if (const CUresult r = check_side(dst, *p, target); r != OK) return r;
  ++g_memcpy3d_calls;
  const size_t width = p->WidthInBytes, height = p->Height, depth = p->Depth;
  auto row_address = [&](const Side3D &side, size_t z, size_t y) {
    const size_t rows_per_slice = depth > 1 ? side.height : height;
    return side.base + ((side.z + z) * rows_per_slice + side.y + y) * side.pitch + side.x;
  };
  std::vector<std::pair<uintptr_t, uintptr_t>> rows;  // (dst, src) of each row, in order
  for (size_t z = 0; z < depth; ++z)
    for (size_t y = 0; y < height; ++y) rows.emplace_back(row_address(dst, z, y), row_address(src, z, y));
  // A pageable source is read before the call returns (as cuMemcpyHtoDAsync).
  std::shared_ptr<std::vector<uint8_t>> snapshot;
  if (src.type == CU_MEMORYTYPE_HOST && !accessible(rows.front().second, width)) {
    snapshot = std::make_shared<std::vector<uint8_t>>(rows.size() * width);
    for (size_t i = 0; i < rows.size(); ++i)
      std::memcpy(snapshot->data() + i * width, reinterpret_cast<const void *>(rows[i].second), width);
  }
  return submit(s, [rows = std::move(rows), snapshot, width] {
    for (size_t i = 0; i < rows.size(); ++i)
      std::memmove(reinterpret_cast<void *>(rows[i].first),
                   snapshot ? static_cast<const void *>(snapshot->data() + i * width)
                            : reinterpret_cast<const void *>(rows[i].second),
                   width);
  });
}
API CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *p) {
  if (const CUresult f = injected("cuMemcpy3D_v2"); f != OK) return f;
  return wait_legacy(cuMemcpy3DAsync_v2(p, nullptr));
}

API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  if (const CUresult f = injected("cuMemcpyHtoD_v2"); f != OK) return f;
  return wait_legacy(cuMemcpyHtoDAsync_v2(dst, src, n, nullptr));
}
API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  if (const CUresult f = injected("cuMemcpyDtoH_v2"); f != OK) return f;
  return wait_legacy(cuMemcpyDtoHAsync_v2(dst, src, n, nullptr));
}
API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (const CUresult f = injected("cuMemcpyDtoD_v2"); f != OK) return f;
  return wait_legacy(cuMemcpyDtoDAsync_v2(dst, src, n, nullptr));
}
API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n) {
  if (const CUresult f = injected("cuMemsetD8_v2"); f != OK) return f;
  return wait_legacy(cuMemsetD8Async(dst, v, n, nullptr));
}


}  // extern "C"
