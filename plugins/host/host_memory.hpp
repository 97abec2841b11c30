// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend memory: the plugin-wide registry of every live range.
//
// Device memory is ordinary host memory (page-granular mappings), so device
// addresses are host addresses (unified addressing). Every allocation and
// registered range is kept in the registry so that transfers can validate
// device ranges instead of faulting on bad input, and so that destroying a
// context frees everything it made.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "host_mapping_cache.hpp"
#include "host_stream.hpp"

namespace gpuhal::host {

class HostContext;

// Device: mem_alloc memory (page-granular anonymous mappings, replaced by a
// shared memfd mapping when exported for IPC); IpcOpened: another process's
// exported memory mapped here by ipc_open.
// Released: a device allocation's range after mem_free while its mapping
// waits in the mapping cache. Not live: every query passes over it. Its node
// stays so that the mapping's next allocation takes it back without a
// tree insertion and its release without an erasure (a fifth of an
// allocation + release's time).
// VirtualMapped: a mapping of vm_map with read-write access (host_virtual_memory.cpp).
enum class RegionKind { Device, HostAlloc, Registered, IpcOpened, Released, VirtualMapped };

struct Region {
  uint64_t size = 0;
  HostContext *owner = nullptr;
  RegionKind kind = RegionKind::Device;
  uint32_t flags = 0;
  int fd = -1;         // Device: the memfd once exported for IPC
  uint64_t token = 0;  // Device: the export's random id (in the memfd's name)
};

// Plugin-wide map of live memory ranges, keyed by start address. Thread
// safe: one mutex; device_accessible() first asks a per-thread copy of the
// range it found last, valid while no range has been removed since.
class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry &) = delete;
  Registry &operator=(const Registry &) = delete;

  // Adds `r` at `base`; a node already there (a Released one) takes it.
  void insert(uintptr_t base, const Region &r);
  // Removes the range starting exactly at `base` owned by `owner` with one
  // of the given kinds; returns it (size 0 if none).
  Region erase(uintptr_t base, HostContext *owner, RegionKind kind);
  // Ends the device allocation starting exactly at `base` owned by `owner`
  // (a Released node stays in its place; see RegionKind); returns what it
  // was (size 0 if none).
  Region release_device(uintptr_t base, HostContext *owner);
  // ---- the mapping cache (host_mapping_cache.hpp), under the map's mutex --
  // Mappings handed back for the caller to unmap, after the lock. A mapping
  // leaves the map before it is unmapped, so that no other mapping can come
  // to its address while its node is still there.
  using Mappings = MappingCache::Mappings;
  // The cache's byte limit (GPUHAL_HOST_MAPPING_CACHE); set by init.
  void set_mapping_cache_limit(uint64_t bytes);
  // A cached mapping of exactly `mapped` bytes made live as `r` (its
  // Released node takes `r`; one is made if it has none): its base, or 0
  // when none of that size is cached. One lock for both.
  uintptr_t take_cached(uint64_t mapped, const Region &r);
  // The released mapping at `base` (its node Released, or gone): kept in the
  // cache when it was never exported (fd < 0) and the cache takes it; else
  // its node goes. Mappings the cache gives up to make room are appended to
  // `unmap`. True when kept; false: the caller unmaps it (and closes `fd`).
  bool retire_released(uintptr_t base, uint64_t mapped, int fd, Mappings *unmap);
  // release_device and retire_released under one lock (a synchronous free):
  // the released region (size 0 if `base` is no live allocation of `owner`:
  // nothing changed), `*kept` as retire_released returns it.
  Region free_device(uintptr_t base, HostContext *owner, Mappings *unmap, bool *kept);
  // True when [addr, addr+bytes) lies inside one range usable by the device
  // (device memory, host-allocated memory, or host memory registered as
  // mapped; registered ranges that follow each other join).
  bool device_accessible(uintptr_t addr, uint64_t bytes) const;
  // The lock-free half of device_accessible: true when the range lies in
  // the one this thread found last and no range has gone since; false
  // means "ask device_accessible", not "inaccessible". Inline, so that a
  // small copy's check is a few loads with no call and no frame.
  bool device_accessible_cached(uintptr_t addr, uint64_t bytes) const {
    const LastRange &last = t_last_range;
    return last.registry == this && last.removals == removals_.n.load(std::memory_order_acquire) &&
           addr >= last.base && addr < last.end && bytes <= last.end - addr;
  }
  // The bytes from addr to the end of the device-usable range holding it
  // (as device_accessible counts ranges, without joining neighbours); 0
  // when none holds it. A hint for prefetching: the range may go at once.
  uint64_t bytes_to_end(uintptr_t addr) const;
  // True when [addr, addr+bytes) overlaps any range (device memory included).
  bool overlaps_host(uintptr_t addr, uint64_t bytes) const;
  // Finds the host-alloc / registered range containing addr.
  bool find_host(uintptr_t addr, uintptr_t *base, Region *out) const;
  // Finds the range of `kind` owned by `owner` containing addr.
  bool find_containing(uintptr_t addr, HostContext *owner, RegionKind kind, uintptr_t *base, Region *out) const;
  // Records the IPC export of the range starting at `base`.
  void set_export(uintptr_t base, int fd, uint64_t token);
  // Removes and returns every range owned by `owner`.
  std::vector<std::pair<uintptr_t, Region>> take_all(HostContext *owner);

 private:
  using Map = std::map<uintptr_t, Region>;
  // Bumped (under mu_) whenever a range goes, and when a registry is made
  // or destroyed: process-wide, so that a thread's remembered range never
  // outlives the range, nor answers for another registry at the same address.
  // On a cache line of its own: every release writes it, every synchronous
  // copy reads it, and the plugin's globals around it are read by every entry.
  struct alignas(64) RemovalCount {
    std::atomic<uint64_t> n{0};
  };
  static RemovalCount removals_;
  // The device-accessible range a thread found last (a synchronous copy's
  // check then takes no lock when it hits the same allocation again), with
  // the removal count it was found under.
  struct LastRange {
    const Registry *registry = nullptr;
    uintptr_t base = 0, end = 0;
    uint64_t removals = 0;
  };
  static __thread LastRange t_last_range GPUHAL_HOST_FAST_TLS;  // host_stream.hpp says why
  mutable std::mutex mu_;
  Map regions_;
  // Nodes of erased ranges kept for the next inserts (at most kSpareNodes):
  // an allocation and its release then cost the map no malloc and free.
  static constexpr size_t kSpareNodes = 64;
  std::vector<Map::node_type> spare_;
  // Takes `it` out of the map, keeping its node as a spare if there is
  // room; mu_ held.
  void remove_locked(Map::iterator it);
  // The parts of insert, release_device and retire_released; mu_ held.
  void insert_locked(uintptr_t base, const Region &r);
  Region release_device_locked(uintptr_t base, HostContext *owner);
  bool retire_released_locked(uintptr_t base, uint64_t mapped, int fd, Mappings *unmap);
  void forget_released_locked(uintptr_t base);
  MappingCache cache_;  // guarded by mu_
};

}  // namespace gpuhal::host
