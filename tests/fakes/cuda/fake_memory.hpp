// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake driver's device memory beyond its allocations: the pools'
// helpers, virtual memory mappings (virtual_memory.cpp) and the rules of
// what memory a call may touch. Split out of fake_cuda.hpp, which includes
// it inside its namespace, after the state this uses: not a header to
// include on its own (it includes nothing).
#pragma once

// ---- pools (pool_and_peer.cpp, memory.cpp), under g_mem_mu ---------------------
inline uint64_t pool_idle_total() {
  uint64_t t = 0;
  for (uint64_t v : g_pool_idle) t += v;
  return t;
}
// A pool slot back to free (its last allocation gone after cuMemPoolDestroy,
// or destroyed with none out).
inline void free_pool_slot_locked(int slot) {
  g_pool_destroyed[slot] = false;
  g_pool_dev[size_t(slot)] = -1;
  g_pool_handle_types[slot] = 0;
  g_pool_imported_from[size_t(slot)] = -1;
  g_pool_inode[slot] = 0;
  if (g_pool_memfd[size_t(slot)] >= 0) close(g_pool_memfd[size_t(slot)]);
  g_pool_memfd[size_t(slot)] = -1;
}
// cuMemFree / cuMemFreeAsync of an imported pool allocation: "The pointer
// may be freed with cuMemFree or cuMemFreeAsync" (cuMemPoolImportPointer).
// True when p was one (one import freed).
inline bool free_pool_import_locked(int dev, CUdeviceptr p) {
  auto it = g_pool_imports.find({dev, p});
  if (it == g_pool_imports.end()) return false;
  if (--it->second == 0) g_pool_imports.erase(it);
  return true;
}
// The slot of a pool handle (-1: none, or a freed slot).
inline int pool_slot(const void *pool) {
  for (int s = 0; s < kMaxPools; ++s)
    if (pool == &g_pool_token[s]) return (s < kMaxDevices || g_pool_dev[s] >= 0) ? s : -1;
  return -1;
}
// The device's pools release what they hold above their thresholds when
// the context synchronises.
inline void pool_release_above_threshold(int dev) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  for (int s = 0; s < kMaxPools; ++s)
    if ((s == dev || (s >= kMaxDevices && g_pool_dev[s] == dev)) && g_pool_idle[s] > g_release_threshold[s])
      g_pool_idle[s] = g_release_threshold[s];
}

// ---- virtual memory (virtual_memory.cpp), under g_mem_mu ------------------
// Mappings by start address: their size and access flags (0 until
// cuMemSetAccess grants some: "all mappings start with no accessibility").
struct VmMapping {
  size_t size = 0;
  CUmemGenericAllocationHandle handle = 0;
  int access = 0;
};
inline std::map<uintptr_t, VmMapping> g_vm_mappings;
// True when [p, p + n) lies in mappings that follow each other without a
// gap, each with access granted (g_mem_mu held).
inline bool vm_accessible_locked(uintptr_t p, size_t n) {
  auto it = g_vm_mappings.upper_bound(p);
  if (it == g_vm_mappings.begin()) return false;
  --it;
  if (p - it->first >= it->second.size) return false;
  uintptr_t end = it->first;
  for (; it != g_vm_mappings.end() && it->first == end && end < p + n; ++it) {
    if (!it->second.access) return false;
    end += it->second.size;
  }
  return end >= p + n;
}

// Device-usable memory: allocations, pinned host memory, registered ranges,
// mapped virtual memory with access.
inline bool accessible(CUdeviceptr p, size_t n) {
  if (device_range(p, n)) return true;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  if (vm_accessible_locked(uintptr_t(p), n)) return true;
  for (auto *m : {&g_host, &g_registered}) {
    auto it = m->upper_bound(uintptr_t(p));
    if (it == m->begin()) continue;
    --it;
    if (p - it->first <= it->second && n <= it->second - (p - it->first)) return true;
  }
  return false;
}

// NVIDIA's memcpy notes: "Memory regions requested must be either entirely
// registered with CUDA, or in the case of host pageable transfers, not
// registered at all. Memory regions spanning over allocations that are both
// registered and not registered with CUDA are not supported and will return
// CUDA_ERROR_INVALID_VALUE." Seen on an H100 (driver 580.159.04): a copy of a
// host range spanning two adjacent registrations is refused the same way. So
// a host range is fine when it lies inside one pinned or registered range, or
// touches none; anything else is what this answers true for.
inline bool host_range_mixed(const void *p, size_t n) {
  const uintptr_t a = uintptr_t(p);
  std::lock_guard<std::mutex> lock(g_mem_mu);
  bool touches = false;
  for (auto *m : {&g_host, &g_registered}) {
    auto it = m->upper_bound(a);
    if (it != m->begin()) {
      auto prev = std::prev(it);
      if (a - prev->first < prev->second) {
        if (n <= prev->second - (a - prev->first)) return false;  // inside this one
        touches = true;
      }
    }
    if (it != m->end() && it->first < a + n) touches = true;
  }
  return touches;
}
