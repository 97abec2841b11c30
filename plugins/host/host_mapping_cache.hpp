// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Released device mappings kept for reuse, by mapped size.
//
// Every device allocation of the host backend is a page-granular mapping of
// its own (host_device_mappings.hpp says why: IPC export after the fact, bad
// ranges refused by the allocation map, nothing shared between two
// allocations). A fresh mapping and its release cost a system call each,
// about 2 us together, where a GPU runtime's caching allocator answers in a
// fraction of that. So a released mapping is kept here, up to a byte limit
// (GPUHAL_HOST_MAPPING_CACHE, default 64 MiB, 0 keeps none; when it is
// full, older ones make room), and the next allocation of the same mapped
// size takes it back.
//
// What stays as it was: each allocation is still its own mapping (export,
// the allocation map, the memory limit, which counts live allocations, work
// as before); a use after free is still refused by the allocation map. What
// changes: memory from the cache holds what its last owner wrote (device
// memory is uninitialised, as cuMemAlloc's is), and a released range stays
// mapped while cached, so a raw access after free reads stale bytes instead
// of faulting. Exported mappings (shared with another process) and ipc_open
// mappings never come here.
//
// Thread safety: none of its own. The allocation map (Registry, in
// host_memory.hpp) owns the cache and calls it under the map's mutex, so
// that an allocation takes its mapping and its map entry under one lock, and
// a release gives both back under one: two lock round trips fewer per
// allocation + release than a cache with a lock of its own. Nothing here
// unmaps: what leaves the cache goes back to the caller, to be unmapped after
// the lock.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpuhal::host {

class MappingCache {
 public:
  // (base, mapped size) of mappings that left the cache, still mapped.
  using Mappings = std::vector<std::pair<void *, uint64_t>>;

  explicit MappingCache(uint64_t limit_bytes = 0) : limit_(limit_bytes) {}
  MappingCache(const MappingCache &) = delete;
  MappingCache &operator=(const MappingCache &) = delete;

  // The byte limit; set once, by the plugin's init, before any keep().
  void set_limit(uint64_t limit_bytes) { limit_ = limit_bytes; }
  // A cached mapping of exactly `mapped` bytes (a multiple of the page
  // size), taken out of the cache; nullptr when there is none.
  void *take(uint64_t mapped);
  // Keeps a released mapping of `mapped` bytes, giving up cached ones as
  // needed to stay within the limit, the longest kept first whatever their
  // size (a size the program stopped using goes before one it reuses): those
  // go to `evicted`, still mapped, for the caller to unmap. False when the
  // mapping alone is over the limit, or when the cache's lists cannot grow
  // (the caller unmaps it too). Does not throw.
  bool keep(void *base, uint64_t mapped, Mappings *evicted);
  // Takes every cached mapping out (the caller unmaps them).
  Mappings take_all();
  uint64_t bytes() const { return bytes_; }

 private:
  struct Kept {
    void *base;
    uint64_t order;  // when it was kept: smaller is older
  };
  uint64_t limit_;
  uint64_t bytes_ = 0;
  uint64_t next_order_ = 0;
  // Mapped size -> its mappings, oldest first (an allocation takes the
  // newest, whose pages are likeliest still in the caches).
  std::unordered_map<uint64_t, std::deque<Kept>> free_;
};

}  // namespace gpuhal::host
