// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Device memory of the host backend, and its inter-process sharing.
//
// Device allocations are page-granular anonymous mappings (like a GPU
// driver's, whose granularity is coarser still). That lets ipc_get_handle
// share an allocation after the fact: on the first export the pages are
// copied into a memfd that is then mapped over the same addresses
// (MAP_FIXED), so the device pointer and the contents stay the same while
// another process can now map the same pages. The handle names the exporting
// process, the memfd's descriptor there and a random token that is also in
// the memfd's name; the importer opens /proc/<pid>/fd/<fd>, checks the token
// and maps it. This needs the importer to be allowed to read the exporter's
// /proc entries (same user, the usual case), and the exporter to be alive.
#pragma once

#include <cstdint>

#include "gpuhal/plugin.h"

namespace gpuhal::host {

// `bytes` rounded up to whole pages; 0 when that overflows.
uint64_t page_round(uint64_t bytes);
// A mapping of page_round(bytes) bytes for a device allocation, or nullptr:
// a released one of the same size from the plugin's mapping cache (holding
// its last owner's bytes; host_mapping_cache.hpp), else a fresh one.
void *map_device_memory(uint64_t bytes);
// Releases a device allocation's mapping: into the mapping cache when it was
// never exported (fd < 0) and the cache has room, else unmapped (and `fd`
// closed).
void release_device_memory(void *ptr, uint64_t bytes, int fd);
// Unmaps what map_device_memory or ipc_open mapped; closes `fd` if >= 0.
void unmap_device_memory(void *ptr, uint64_t bytes, int fd);

}  // namespace gpuhal::host
