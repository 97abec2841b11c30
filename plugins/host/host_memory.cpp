// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's device memory entries: page-granular mappings
// (host_device_mappings.hpp) counted against the device's memory limit and
// kept in the plugin's registry, managed memory (the same), and
// stream-ordered frees run by the stream's worker.
#include <sys/mman.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "host_device_mappings.hpp"
#include "host_entries.hpp"
#include "host_stream.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;

gpuhal_status_t mem_alloc(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out) {
  return in_context(ctx, "mem_alloc", [&](HostContext *c) -> gpuhal_status_t {
    if (bytes == 0) return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_alloc: size must be positive");
    HostDevice *d = c->device();
    // `used` is kept only under a limit (memory_info and the limit read it
    // then; without one, free memory is the machine's): two atomic updates
    // fewer per allocation.
    if (d->limit) {
      uint64_t used = d->used.load();
      do {
        if (bytes > d->limit || used > d->limit - bytes)
          return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "mem_alloc: out of device memory: " + std::to_string(bytes) +
                                                      " bytes requested, " + std::to_string(used) + " of " +
                                                      std::to_string(d->limit) + " in use (GPUHAL_HOST_MEMORY_LIMIT)");
      } while (!d->used.compare_exchange_weak(used, used + bytes));
    }
    Registry &registry = plugin_state().registry;
    const Region region{bytes, c, RegionKind::Device, 0};
    // A released mapping of the same page count, with its map entry, under
    // one lock; else a fresh one.
    uintptr_t p = 0;
    try {
      p = registry.take_cached(page_round(bytes), region);  // none of an absurd size is cached
    } catch (...) {
      if (d->limit) d->used.fetch_sub(bytes);
      throw;
    }
    if (p) {
      *out = p;
      return GPUHAL_SUCCESS;
    }
    void *fresh = map_device_memory(bytes);
    if (!fresh) {
      if (d->limit) d->used.fetch_sub(bytes);
      return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "mem_alloc: mapping " + std::to_string(bytes) + " bytes failed");
    }
    try {
      registry.insert(reinterpret_cast<uintptr_t>(fresh), region);
    } catch (...) {
      release_device_memory(fresh, bytes, -1);
      if (d->limit) d->used.fetch_sub(bytes);
      throw;
    }
    *out = reinterpret_cast<uintptr_t>(fresh);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t mem_free(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr) {
  return in_context(ctx, "mem_free", [&](HostContext *c) -> gpuhal_status_t {
    // The map entry released and the mapping cached (or its entry gone)
    // under one lock; unmapping, if any, after it.
    Registry::Mappings evicted;
    bool kept = false;
    const Region r = plugin_state().registry.free_device(uintptr_t(ptr), c, &evicted, &kept);
    if (r.size == 0)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_free: " + hex(ptr) + " is not a live allocation of this context");
    unmap_released(reinterpret_cast<void *>(uintptr_t(ptr)), r.size, r.fd, kept, evicted);
    if (c->device()->limit) c->device()->used.fetch_sub(r.size);
    return GPUHAL_SUCCESS;
  });
}

// The host's device memory is the host's memory: managed memory is device
// memory (the same pointer on both sides, freed by mem_free).
gpuhal_status_t mem_alloc_managed(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out) {
  return mem_alloc(ctx, bytes, out);
}

// ---- managed-memory prefetch and advice ------------------------------------------------
// The host backend's managed memory is the host's own memory, the same pages
// for every device: nothing migrates. A prefetch populates the range's pages
// (MADV_POPULATE_WRITE, Linux 5.14; MADV_WILLNEED before it) in stream
// order, so that a kernel does not take the first-touch faults; advice is
// checked and changes nothing (there is no second copy to keep or place).

namespace {

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

gpuhal_status_t check_hint(const char *entry, gpuhal_deviceptr_t ptr, uint64_t bytes, int32_t location) {
  const int32_t devices = int32_t(plugin_state().devices.size());
  if (location != GPUHAL_LOCATION_HOST && (location < 0 || location >= devices))
    return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": location " + std::to_string(location) +
                                                " is neither a device (0 .. " + std::to_string(devices - 1) +
                                                ") nor GPUHAL_LOCATION_HOST");
  if (bytes != 0 && !plugin_state().registry.device_accessible(uintptr_t(ptr), bytes))
    return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": [" + hex(ptr) + ", +" + std::to_string(bytes) +
                                                ") is not inside one allocation");
  return GPUHAL_SUCCESS;
}

// The pages of [p, p + n), made present (written-to pages of their own).
void populate(uintptr_t p, uint64_t n) {
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = p & ~(page - 1), end = (p + n + page - 1) & ~(page - 1);
  void *at = reinterpret_cast<void *>(begin);
  if (madvise(at, end - begin, MADV_POPULATE_WRITE) != 0) (void)madvise(at, end - begin, MADV_WILLNEED);
}

}  // namespace

gpuhal_status_t mem_prefetch_async(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, uint64_t bytes, int32_t location,
                                   gpuhal_stream_t stream) {
  return in_stream(ctx, stream, "mem_prefetch_async",
                   [&](HostContext *c, const std::shared_ptr<StreamState> &s) -> gpuhal_status_t {
                     if (gpuhal_status_t st = check_hint("mem_prefetch_async", ptr, bytes, location)) return st;
                     if (bytes == 0) return GPUHAL_SUCCESS;
                     c->submit(s, [ptr, bytes](bool ok) {
                       if (ok) populate(uintptr_t(ptr), bytes);
                     });
                     return GPUHAL_SUCCESS;
                   });
}

gpuhal_status_t mem_advise(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, uint64_t bytes, uint32_t advice,
                           int32_t location) {
  return in_context(ctx, "mem_advise", [&](HostContext *) -> gpuhal_status_t {
    if (advice < GPUHAL_ADVISE_SET_READ_MOSTLY || advice > GPUHAL_ADVISE_UNSET_ACCESSED_BY)
      return fail(GPUHAL_ERROR_INVALID_VALUE, "mem_advise: unknown advice " + std::to_string(advice));
    return check_hint("mem_advise", ptr, bytes, location);
  });
}

// Stream-ordered memory: the allocation is made at once (always early
// enough); the free runs on the stream after the work submitted before it.
gpuhal_status_t mem_alloc_async(gpuhal_context_t ctx, uint64_t bytes, gpuhal_stream_t stream, gpuhal_deviceptr_t *out) {
  return in_context(ctx, "mem_alloc_async", [&](HostContext *c) -> gpuhal_status_t {
    const std::shared_ptr<StreamState> s = c->stream(stream);
    if (!s) return bad_stream("mem_alloc_async");
    if (gpuhal_status_t st = c->captures.refusal(s.get(), s->is_default, "mem_alloc_async")) return st;
    // The host backend allocates at the call: nothing it could record.
    if (gpuhal_status_t st = c->captures.refuse(s.get(), "mem_alloc_async",
                                                "a stream-ordered allocation (the host backend records none)"))
      return st;
    return mem_alloc(ctx, bytes, out);
  });
}

gpuhal_status_t mem_free_async(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, gpuhal_stream_t stream) {
  return in_stream(ctx, stream, "mem_free_async",
                   [&](HostContext *c, const std::shared_ptr<StreamState> &s) -> gpuhal_status_t {
                     if (gpuhal_status_t st = c->captures.refuse(
                             s.get(), "mem_free_async", "a stream-ordered free (the host backend records none)"))
                       return st;
                     // Out of the registry now (new work may not use it), unmapped later.
                     const Region r = plugin_state().registry.release_device(uintptr_t(ptr), c);
                     if (r.size == 0)
                       return fail(GPUHAL_ERROR_INVALID_VALUE,
                                   "mem_free_async: " + hex(ptr) + " is not a live allocation of this context");
                     HostDevice *d = c->device();
                     c->submit(s, [ptr, r, d](bool) {
                       release_device_memory(reinterpret_cast<void *>(uintptr_t(ptr)), r.size, r.fd);
                       if (d->limit) d->used.fetch_sub(r.size);
                     });
                     return GPUHAL_SUCCESS;
                   });
}

// ---- the registry ---------------------------------------------------------------

Registry::RemovalCount Registry::removals_;

__thread Registry::LastRange Registry::t_last_range GPUHAL_HOST_FAST_TLS;

Registry::Registry() {
  removals_.n.fetch_add(1, std::memory_order_acq_rel);
}

Registry::~Registry() {
  removals_.n.fetch_add(1, std::memory_order_acq_rel);
  for (const auto &m : cache_.take_all()) munmap(m.first, size_t(m.second));
}

void Registry::insert(uintptr_t base, const Region &r) {
  std::lock_guard<std::mutex> lock(mu_);
  insert_locked(base, r);
}

void Registry::insert_locked(uintptr_t base, const Region &r) {
  if (spare_.empty()) {
    regions_[base] = r;
    return;
  }
  Map::node_type node = std::move(spare_.back());
  spare_.pop_back();
  node.key() = base;
  node.mapped() = r;
  // One lookup: a base already present keeps its node and takes `r`; the
  // spare goes back.
  auto placed = regions_.insert(std::move(node));
  if (!placed.inserted) {
    placed.position->second = r;
    spare_.push_back(std::move(placed.node));  // room: it was just popped
  }
}

Region Registry::erase(uintptr_t base, HostContext *owner, RegionKind kind) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(base);
  if (it == regions_.end() || it->second.owner != owner || it->second.kind != kind) return Region{};
  Region r = it->second;
  removals_.n.fetch_add(1, std::memory_order_acq_rel);
  remove_locked(it);
  return r;
}

void Registry::remove_locked(Map::iterator it) {
  Map::node_type node = regions_.extract(it);
  if (spare_.size() < kSpareNodes) {
    try {
      spare_.push_back(std::move(node));
    } catch (...) {
      // no room to keep it: the node goes with `node`
    }
  }
}

Region Registry::release_device(uintptr_t base, HostContext *owner) {
  std::lock_guard<std::mutex> lock(mu_);
  return release_device_locked(base, owner);
}

Region Registry::release_device_locked(uintptr_t base, HostContext *owner) {
  auto it = regions_.find(base);
  if (it == regions_.end() || it->second.owner != owner || it->second.kind != RegionKind::Device) return Region{};
  const Region r = it->second;
  removals_.n.fetch_add(1, std::memory_order_acq_rel);
  it->second = Region{r.size, nullptr, RegionKind::Released, 0, -1, 0};
  return r;
}

void Registry::forget_released_locked(uintptr_t base) {
  auto it = regions_.find(base);
  if (it == regions_.end() || it->second.kind != RegionKind::Released) return;
  remove_locked(it);
}

void Registry::set_mapping_cache_limit(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  cache_.set_limit(bytes);
}

uintptr_t Registry::take_cached(uint64_t mapped, const Region &r) {
  std::lock_guard<std::mutex> lock(mu_);
  const uintptr_t base = reinterpret_cast<uintptr_t>(cache_.take(mapped));
  if (!base) return 0;
  auto it = regions_.find(base);
  if (it != regions_.end()) {
    it->second = r;  // its Released node
    return base;
  }
  // Cached without a node (a context's destruction took its nodes): a new
  // one. If none can be made, the mapping is given up (a rare error path:
  // unmapped here, it was in no list and no map).
  try {
    insert_locked(base, r);
  } catch (...) {
    munmap(reinterpret_cast<void *>(base), size_t(mapped));
    throw;
  }
  return base;
}

bool Registry::retire_released(uintptr_t base, uint64_t mapped, int fd, Mappings *unmap) {
  std::lock_guard<std::mutex> lock(mu_);
  return retire_released_locked(base, mapped, fd, unmap);
}

bool Registry::retire_released_locked(uintptr_t base, uint64_t mapped, int fd, Mappings *unmap) {
  const size_t before = unmap->size();
  const bool kept = fd < 0 && cache_.keep(reinterpret_cast<void *>(base), mapped, unmap);
  for (size_t i = before; i < unmap->size(); ++i) forget_released_locked(reinterpret_cast<uintptr_t>((*unmap)[i].first));
  if (!kept) forget_released_locked(base);
  return kept;
}

Region Registry::free_device(uintptr_t base, HostContext *owner, Mappings *unmap, bool *kept) {
  std::lock_guard<std::mutex> lock(mu_);
  const Region r = release_device_locked(base, owner);
  if (r.size != 0) *kept = retire_released_locked(base, page_round(r.size), r.fd, unmap);
  return r;
}

bool Registry::device_accessible(uintptr_t addr, uint64_t bytes) const {
  // The range found last, if no range has been removed since: it is still
  // there (ranges are only ever added next to it), so the answer stands as
  // of this load.
  if (device_accessible_cached(addr, bytes)) return true;
  LastRange &last = t_last_range;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.upper_bound(addr);
  if (it == regions_.begin()) return false;
  --it;
  const Region &r = it->second;
  // host_alloc memory is reachable whatever its flags, as on a GPU with
  // unified addressing (cuda.h: memory from cuMemHostAlloc "is always
  // directly accessible from all contexts on all devices that support
  // unified addressing"); registered memory only when registered mapped.
  const bool usable =
      r.kind != RegionKind::Released && (r.kind != RegionKind::Registered || (r.flags & GPUHAL_HOST_ALLOC_MAPPED));
  const uint64_t off = addr - it->first;
  if (!usable || off > r.size) return false;
  if (bytes <= r.size - off) {
    last = LastRange{this, it->first, it->first + r.size, removals_.n.load(std::memory_order_acquire)};
    return true;
  }
  // Mapped host memory is mapped page by page, as on a GPU with unified
  // addressing: a range may run on through registered ranges that follow
  // without a gap (the core registers overlapping user ranges as adjacent
  // pieces). Device allocations never join: one range, one allocation.
  // Virtual-memory mappings do, as the driver's do: a range of a
  // reservation runs through the mappings that follow without a gap.
  if (r.kind != RegionKind::Registered && r.kind != RegionKind::VirtualMapped) return false;
  uintptr_t end = it->first + r.size;
  const uintptr_t want = addr + bytes;
  for (++it; end < want; ++it) {
    if (it == regions_.end() || it->first != end || it->second.kind != r.kind || it->second.owner != r.owner ||
        (r.kind == RegionKind::Registered && !(it->second.flags & GPUHAL_HOST_ALLOC_MAPPED)))
      return false;
    end += it->second.size;
  }
  return true;
}

uint64_t Registry::bytes_to_end(uintptr_t addr) const {
  if (device_accessible_cached(addr, 1)) return t_last_range.end - addr;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.upper_bound(addr);
  if (it == regions_.begin()) return 0;
  --it;
  const Region &r = it->second;
  const bool usable =
      r.kind != RegionKind::Released && (r.kind != RegionKind::Registered || (r.flags & GPUHAL_HOST_ALLOC_MAPPED));
  const uint64_t off = addr - it->first;
  return usable && off < r.size ? r.size - off : 0;
}

bool Registry::overlaps_host(uintptr_t addr, uint64_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  const uintptr_t end = addr + bytes;
  auto it = regions_.lower_bound(end);  // first range starting at or after end
  while (it != regions_.begin()) {
    --it;
    if (it->first + it->second.size <= addr) break;  // ranges do not overlap each other
    if (it->second.kind == RegionKind::Released) continue;
    return true;
  }
  return false;
}

bool Registry::find_host(uintptr_t addr, uintptr_t *base, Region *out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.upper_bound(addr);
  if (it == regions_.begin()) return false;
  --it;
  if (it->second.kind == RegionKind::Device || it->second.kind == RegionKind::IpcOpened ||
      it->second.kind == RegionKind::Released || it->second.kind == RegionKind::VirtualMapped ||
      addr - it->first >= it->second.size)
    return false;
  *base = it->first;
  *out = it->second;
  return true;
}

bool Registry::find_containing(uintptr_t addr, HostContext *owner, RegionKind kind, uintptr_t *base,
                               Region *out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.upper_bound(addr);
  if (it == regions_.begin()) return false;
  --it;
  if (it->second.owner != owner || it->second.kind != kind || addr - it->first >= it->second.size) return false;
  *base = it->first;
  *out = it->second;
  return true;
}

void Registry::set_export(uintptr_t base, int fd, uint64_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_.find(base);
  if (it == regions_.end()) return;
  it->second.fd = fd;
  it->second.token = token;
}

std::vector<std::pair<uintptr_t, Region>> Registry::take_all(HostContext *owner) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<uintptr_t, Region>> out;
  removals_.n.fetch_add(1, std::memory_order_acq_rel);
  for (auto it = regions_.begin(); it != regions_.end();) {
    if (it->second.owner == owner) {
      out.emplace_back(*it);
      it = regions_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

}  // namespace gpuhal::host
