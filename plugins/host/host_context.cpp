// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_context.hpp"
#include "host_virtual_memory.hpp"

#include "host_compiler.hpp"
#include "host_device_mappings.hpp"
#include "host_kernels.hpp"
#include "host_stream.hpp"

#include <sys/mman.h>

#include <cstdlib>

namespace gpuhal::host {

// ---- Registry ---------------------------------------------------------------

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

// ---- HostContext ------------------------------------------------------------

HostContext::HostContext(HostDevice *device) : device_(device), progress_(std::make_shared<Progress>()) {
  default_stream_ = std::make_shared<StreamState>(progress_, false, true);
  default_stream_->start();
  // A capturing blocking stream counts as busy, so that a synchronous
  // copy's lock-free path (which runs only while no blocking stream is busy)
  // takes the long way, where the capture's legacy-stream rule is checked.
  captures.on_blocking_join = [](StreamState *s) {
    s->progress->busy_blocking.fetch_add(1, std::memory_order_acq_rel);
  };
  captures.on_blocking_leave = [](StreamState *s) {
    s->progress->busy_blocking.fetch_sub(1, std::memory_order_acq_rel);
  };
}

HostContext::~HostContext() {
  std::vector<std::shared_ptr<StreamState>> streams;
  {
    std::lock_guard<std::mutex> lock(objects_mu_);
    for (auto &kv : streams_) {
      plugin_state().streams.remove(kv.first);
      streams.push_back(kv.second);
    }
    streams_.clear();
    per_thread_.clear();
    events_.clear();
  }
  for (auto &s : streams) s->stop();
  default_stream_->stop();
  {
    std::lock_guard<std::mutex> lock(modules_mu);
    modules.clear();  // no launch can be running any more
  }
  release_virtual_memory(this);  // its registry entries go with its mappings
  for (auto &kv : plugin_state().registry.take_all(this)) {
    if (kv.second.kind == RegionKind::Device) {
      if (device_->limit) device_->used.fetch_sub(kv.second.size);
      // Unmapped, never cached for reuse: host code may still hold the
      // addresses (managed memory, DLPack exports), and the core keeps
      // them as host memory only where nothing is mapped any more.
      unmap_device_memory(reinterpret_cast<void *>(kv.first), kv.second.size, kv.second.fd);
    } else if (kv.second.kind == RegionKind::IpcOpened) {
      unmap_device_memory(reinterpret_cast<void *>(kv.first), kv.second.size, -1);
    } else if (kv.second.kind == RegionKind::HostAlloc) {
      unmap_device_memory(reinterpret_cast<void *>(kv.first), kv.second.size, -1);
    }
  }
}

std::shared_ptr<StreamState> HostContext::stream(gpuhal_stream_t handle) {
  if (!handle || handle == GPUHAL_STREAM_LEGACY) return default_stream_;
  std::lock_guard<std::mutex> lock(objects_mu_);
  if (handle == GPUHAL_STREAM_PER_THREAD) {
    auto &s = per_thread_[std::this_thread::get_id()];
    if (!s) {
      s = std::make_shared<StreamState>(progress_, false, false);
      s->start();
      streams_[s.get()] = s;  // takes part in the legacy rules like any blocking stream
    }
    return s;
  }
  auto it = streams_.find(reinterpret_cast<StreamState *>(handle));
  if (it != streams_.end()) return it->second;
  return plugin_state().streams.find(handle, device_);  // another context's (StreamDirectory)
}

void StreamDirectory::add(const std::shared_ptr<StreamState> &s, const HostDevice *device) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_[s.get()] = {s, device};
}

void StreamDirectory::remove(const StreamState *s) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.erase(s);
}

std::shared_ptr<StreamState> StreamDirectory::find(gpuhal_stream_t handle, const HostDevice *device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(reinterpret_cast<const StreamState *>(handle));
  if (it == streams_.end() || it->second.second != device) return nullptr;
  return it->second.first.lock();
}

std::shared_ptr<HostEvent> HostContext::event(gpuhal_event_t handle) {
  std::lock_guard<std::mutex> lock(objects_mu_);
  auto it = events_.find(reinterpret_cast<HostEvent *>(handle));
  return it == events_.end() ? nullptr : it->second;
}

gpuhal_stream_t HostContext::create_stream(bool non_blocking, int priority) {
  auto s = std::make_shared<StreamState>(progress_, non_blocking, false);
  s->priority = priority;
  s->start();
  plugin_state().streams.add(s, device_);
  std::lock_guard<std::mutex> lock(objects_mu_);
  try {
    streams_[s.get()] = s;
  } catch (...) {
    plugin_state().streams.remove(s.get());
    throw;
  }
  return reinterpret_cast<gpuhal_stream_t>(s.get());
}

std::vector<std::shared_ptr<StreamState>> HostContext::streams_snapshot() {
  std::vector<std::shared_ptr<StreamState>> out;
  std::lock_guard<std::mutex> lock(objects_mu_);
  for (auto &kv : streams_) out.push_back(kv.second);
  return out;
}

bool HostContext::destroy_stream(gpuhal_stream_t handle) {
  std::shared_ptr<StreamState> s;
  {
    std::lock_guard<std::mutex> lock(objects_mu_);
    auto it = streams_.find(reinterpret_cast<StreamState *>(handle));
    if (it == streams_.end()) return false;
    s = it->second;
    streams_.erase(it);
  }
  plugin_state().streams.remove(s.get());
  captures.stream_destroyed(s.get());
  s->stop();
  return true;
}

gpuhal_event_t HostContext::create_event(bool timing) {
  auto e = std::make_shared<HostEvent>();
  e->timing = timing;
  std::lock_guard<std::mutex> lock(objects_mu_);
  events_[e.get()] = e;
  return reinterpret_cast<gpuhal_event_t>(e.get());
}

bool HostContext::destroy_event(gpuhal_event_t handle) {
  std::lock_guard<std::mutex> lock(objects_mu_);
  if (events_.erase(reinterpret_cast<HostEvent *>(handle)) == 0) return false;
  captures.forget_event(handle);
  return true;
}

uint64_t HostContext::submit(const std::shared_ptr<StreamState> &s, std::function<void(bool)> run,
                             std::vector<Dep> deps) {
  // A capturing stream records the operation instead (host_graph.hpp); the
  // entries that add dependencies handle capture before they get here.
  if (captures.any()) {
    HostGraphNode node;
    node.run = std::move(run);
    if (captures.record(s.get(), std::move(node), false)) return 0;
    run = std::move(node.run);  // not capturing: taken back
  }
  std::lock_guard<std::mutex> lock(submit_mu_);
  inline_bias_.claim_or_exclude(false);  // another thread's inline operations wait, from now on, for this mutex
  // Legacy default stream: it waits for the blocking streams' prior work,
  // and blocking streams wait for its prior work.
  if (s->is_default) {
    if (progress_->busy_blocking.load(std::memory_order_acquire) != 0) {
      std::lock_guard<std::mutex> olock(objects_mu_);
      for (auto &kv : streams_) {
        const auto &o = kv.second;
        if (!o->non_blocking && !o->idle()) deps.push_back({o, o->enqueued_snapshot()});
      }
    }
  } else if (!s->non_blocking && !default_stream_->idle()) {
    deps.push_back({default_stream_, default_stream_->enqueued_snapshot()});
  }
  // Counted before the push, under the submit mutex: a reader holding it
  // never sees a busy stream uncounted.
  if (s->counts_busy() && s->outstanding.fetch_add(1, std::memory_order_acq_rel) == 0)
    progress_->busy_blocking.fetch_add(1, std::memory_order_acq_rel);
  const uint64_t ticket = s->enqueued.fetch_add(1, std::memory_order_acq_rel) + 1;
  s->push(Op{std::move(run), std::move(deps)});
  return ticket;
}

void HostContext::record(const std::shared_ptr<HostEvent> &ev, const std::shared_ptr<StreamState> &s) {
  if (captures.record_event(ev.get(), s.get())) {
    // The event stands for a position in the capture, no work that runs: a
    // wait for it outside the capture waits for nothing after the capture.
    std::lock_guard<std::mutex> lock(ev->mu);
    ++ev->record_id;  // a record still queued no longer stamps it
    ev->stream.reset();
    ev->ticket = 0;
    ev->has_time = false;
    return;
  }
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(ev->mu);
    id = ++ev->record_id;
    ev->has_time = false;
  }
  // The record is itself an operation: it completes when all prior work on
  // the stream has, and stamps the time then.
  const uint64_t ticket = submit(s, [ev, id](bool) {
    std::lock_guard<std::mutex> lock(ev->mu);
    if (ev->record_id != id) return;
    ev->when = std::chrono::steady_clock::now();
    ev->has_time = true;
  });
  std::lock_guard<std::mutex> lock(ev->mu);
  if (ev->record_id == id) {
    ev->stream = s;
    ev->ticket = ticket;
  }
}

std::vector<Dep> HostContext::all_prior_work() {
  std::vector<Dep> deps;
  std::lock_guard<std::mutex> lock(objects_mu_);
  for (auto &kv : streams_)
    if (!kv.second->idle()) deps.push_back({kv.second, kv.second->enqueued_snapshot()});
  if (!default_stream_->idle()) deps.push_back({default_stream_, default_stream_->enqueued_snapshot()});
  return deps;
}

void HostContext::synchronize() {
  for (const Dep &d : all_prior_work()) progress_->wait(*d.stream, d.ticket);
}

void HostContext::set_kernel_error(const std::string &message) {
  std::lock_guard<std::mutex> lock(kernel_error_mu_);
  if (kernel_error_.empty()) kernel_error_ = message;
}

bool HostContext::take_kernel_error(std::string *message) {
  std::lock_guard<std::mutex> lock(kernel_error_mu_);
  if (kernel_error_.empty()) return false;
  *message = std::move(kernel_error_);
  kernel_error_.clear();
  return true;
}

// ---- plugin state -------------------------------------------------------------

HostPlugin *g_plugin_state = nullptr;

void forget_parent_after_fork() {
  g_plugin_state = nullptr;  // abandoned: its contexts' threads are the parent's
  reset_device_pages_mutex_after_fork();
  reset_export_locks_after_fork();
  forget_private_cache_after_fork();
}

bool plugin_state_exists() {
  return g_plugin_state != nullptr;
}
void create_plugin_state() {
  g_plugin_state = new HostPlugin();
}
void destroy_plugin_state() {
  // Contexts first: their streams may still be running kernels on the pool.
  forget_context_lookups();
  g_plugin_state->contexts.take_all();
  delete g_plugin_state;
  g_plugin_state = nullptr;
}

__thread LastContextLookup t_last_context GPUHAL_HOST_FAST_TLS;
std::atomic<uint64_t> g_context_removals{0};

void forget_context_lookups() {
  g_context_removals.fetch_add(1, std::memory_order_acq_rel);
}

HostContext *find_context(gpuhal_context_t handle) {
  if (HostContext *c = find_context_cached(handle)) return c;
  const HostPlugin *st = g_plugin_state;
  if (!st) return nullptr;
  // Read before the lookup: a context that goes after it changes the count,
  // and the entry kept below is then never used.
  const uint64_t removals = g_context_removals.load(std::memory_order_acquire);
  HostContext *c = st->contexts.find(handle);
  if (c) t_last_context = LastContextLookup{handle, c, st, removals};
  return c;
}

}  // namespace gpuhal::host
