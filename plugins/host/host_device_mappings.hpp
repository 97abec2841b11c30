// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The mappings behind the host backend's device memory.
//
// Device allocations are page-granular anonymous mappings (like a GPU
// driver's, whose granularity is coarser still), one per allocation: that
// lets ipc_get_handle share an allocation after the fact (host_ipc.cpp swaps
// a memfd in under the same addresses), and lets the allocation map refuse
// any range that is not inside one live allocation. A released mapping
// that was never shared goes to the mapping cache (host_mapping_cache.hpp)
// for the next allocation of its size. Allocations of a huge page or more
// start on a huge page boundary and ask for transparent huge pages
// (GPUHAL_HOST_HUGE_PAGES, default on).
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace gpuhal::host {

// The page size.
uint64_t page_size();
// The transparent huge page size (the kernel's PMD size; 2 MiB when the
// kernel does not say).
uint64_t huge_page_size();
// `bytes` rounded up to whole pages; 0 when that overflows.
uint64_t page_round(uint64_t bytes);
// A fresh mapping of page_round(bytes) bytes for a device allocation, or
// nullptr. (mem_alloc first asks the allocation map for a cached one:
// Registry::take_cached.)
void *map_device_memory(uint64_t bytes);
// Releases a device allocation's mapping whose node is Released or gone
// (Registry::retire_released): into the mapping cache when it was never
// exported (fd < 0) and the cache has room, else unmapped (and `fd` closed).
void release_device_memory(void *ptr, uint64_t bytes, int fd);
// What follows Registry::retire_released or free_device: unmaps what the
// cache gave up, and the mapping itself (closing `fd`) when not kept.
void unmap_released(void *ptr, uint64_t bytes, int fd, bool kept, const std::vector<std::pair<void *, uint64_t>> &evicted);
// Unmaps what map_device_memory or ipc_open mapped; closes `fd` if >= 0.
void unmap_device_memory(void *ptr, uint64_t bytes, int fd);

}  // namespace gpuhal::host
