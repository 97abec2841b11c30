// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend devices, contexts, events and the memory registry.
//
// Device memory is ordinary host memory (aligned allocations), so device
// addresses are host addresses (unified addressing). Every allocation and
// registered range is kept in a plugin-wide registry so that transfers can
// validate device ranges instead of faulting on bad input, and so that
// destroying a context frees everything it made.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "handle_registry.hpp"
#include "host_compiler.hpp"
#include "host_kernel_runner.hpp"
#include "thread_bias.hpp"
#include "host_graph.hpp"
#include "host_mapping_cache.hpp"
#include "host_stream.hpp"
#include "host_virtual_memory.hpp"

namespace gpuhal::host {

struct HostDevice {
  int ordinal = 0;
  uint64_t total_memory = 0;
  uint64_t limit = 0;  // 0: no limit beyond the machine's memory
  std::atomic<uint64_t> used{0};
};

class HostContext;
struct HostModule;

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

struct HostEvent {
  bool timing = true;
  std::mutex mu;
  std::shared_ptr<StreamState> stream;  // of the latest record
  uint64_t ticket = 0;                  // 0: never recorded
  uint64_t record_id = 0;
  bool has_time = false;
  std::chrono::steady_clock::time_point when;
};

class HostContext {
 public:
  explicit HostContext(HostDevice *device);
  ~HostContext();  // stops every stream (queued work finishes), frees all memory

  HostDevice *device() const { return device_; }

  // Handle resolution; NULL stream means the default stream. Returns nullptr
  // for handles not made by this context.
  std::shared_ptr<StreamState> stream(gpuhal_stream_t handle);
  // The legacy default stream, without a reference count's two atomic
  // updates (it lives as long as the context).
  const std::shared_ptr<StreamState> &default_stream() const { return default_stream_; }
  std::shared_ptr<HostEvent> event(gpuhal_event_t handle);

  // `priority`: kLeastPriority (2) .. kGreatestPriority (0), host_stream.hpp.
  gpuhal_stream_t create_stream(bool non_blocking, int priority = 0);
  // The context's own streams (not the legacy default one), at the call.
  std::vector<std::shared_ptr<StreamState>> streams_snapshot();
  bool destroy_stream(gpuhal_stream_t handle);
  gpuhal_event_t create_event(bool timing);
  bool destroy_event(gpuhal_event_t handle);

  // Submits `run` to `s` after `extra` dependencies (plus the legacy default
  // stream rules); returns the operation's ticket.
  uint64_t submit(const std::shared_ptr<StreamState> &s, std::function<void(bool)> run, std::vector<Dep> extra = {});
  // Records `ev` on `s` (as a submitted operation that timestamps it).
  void record(const std::shared_ptr<HostEvent> &ev, const std::shared_ptr<StreamState> &s);
  // Synchronous operations on the default stream wait for all prior work of
  // it and of the blocking streams. When all of those are idle, `fn` runs
  // right here on the calling thread (no hand-off to the worker), holding
  // the submit mutex so that work submitted meanwhile is ordered after it.
  // The submit mutex also keeps device memory's pages in place while `fn`
  // runs (see hold_submissions; a stream's worker holds
  // device_pages_mutex() instead: two atomic read-modify-writes saved on
  // every small synchronous copy).
  // Returns false, without running `fn`, when something is pending.
  // Templates, so that a small copy's memcpy is called directly (not
  // through a std::function) on the path H1 measures. The thread that holds
  // the context's inline bias (support/sync/thread_bias.hpp) runs them without the
  // mutex, and without a locked instruction.
  template <class F>
  bool run_inline_if_idle(F &&fn) {
    return run_inline([&] {
      if (!sync_ops_may_run_now()) return false;
      fn();
      return true;
    });
  }
  // run_inline_if_idle's lock-free half: runs `fn` and returns true only on
  // the inline bias's path (this thread holds the bias, the streams are
  // idle); false means "take run_inline_if_idle", with nothing run. For
  // the small synchronous copy's path, which has nothing that can throw.
  template <class F>
  bool run_biased_if_idle(F &&fn) noexcept {
    return inline_bias_.try_run([&] {
      if (!sync_ops_may_run_now()) return false;
      fn();
      return true;
    }) == detail::ThreadBias::Ran::Done;
  }
  // The same for work submitted to `s`: runs `fn` here, under the submit
  // mutex, when `s` and what it would wait for (the legacy default stream's
  // rules) are idle; false otherwise. Small kernel launches use it: a launch
  // that has completed when it returns is one valid schedule of an
  // asynchronous launch, and it saves two thread hand-offs.
  template <class F>
  bool run_inline_if_stream_idle(const std::shared_ptr<StreamState> &s, F &&fn) {
    if (s->is_default) return run_inline_if_idle(std::forward<F>(fn));
    return run_inline([&] {
      if (!s->idle() || (!s->non_blocking && !default_stream_->idle())) return false;
      fn();
      return true;
    });
  }
  // The submit mutex, locked: no operation of this context runs inline on a
  // calling thread until it is released (submissions wait too; an inline
  // bias of another thread is revoked first). An IPC export holds it of
  // every context, with device_pages_mutex() exclusive, while it moves an
  // allocation's pages. Lock order: device_pages_mutex(), then the
  // contexts' registry, then submit mutexes.
  std::unique_lock<std::mutex> hold_submissions() {
    std::unique_lock<std::mutex> lock(submit_mu_);
    inline_bias_.claim_or_exclude(false);
    return lock;
  }
  // Dependencies for "all work submitted to this context so far".
  std::vector<Dep> all_prior_work();
  void synchronize();

  // Loaded modules (module_unload, or the destructor once the streams have
  // stopped, unload them).
  std::mutex modules_mu;
  std::unordered_map<HostModule *, std::unique_ptr<HostModule>> modules;
  // The first failure of a kernel since the last synchronising call, which
  // reports it (GPUHAL_ERROR_LAUNCH_FAILED) and clears it: the context stays
  // usable.
  void set_kernel_error(const std::string &message);
  bool take_kernel_error(std::string *message);

  // Stream capture (host_graph.hpp), and the graphs and execs made here
  // (freed with the context).
  HostCaptureBook captures;
  HostGraphStore graphs;

 private:
  HostDevice *device_;
  std::shared_ptr<Progress> progress_;
  std::mutex submit_mu_;  // ticket order across the context's streams
  // The legacy default stream's rule for a synchronous operation run inline:
  // it and every blocking stream idle.
  bool sync_ops_may_run_now() const {
    return default_stream_->idle() && progress_->busy_blocking.load(std::memory_order_acquire) == 0;
  }
  // Inline operations of one thread without submit_mu_. A synchronous copy
  // on an idle context runs on the calling thread holding the submit mutex
  // (so that work submitted meanwhile is ordered after it and an IPC export
  // does not move its pages under it); the mutex's unlock is a locked
  // instruction right after the copy, which waits for the copy's stores to
  // drain: measured on a 4 KiB copy, the lock pair cost 23 ns of 52, where
  // memcpy alone takes 30. The owner's own submits need nothing: its program
  // order keeps them apart from its inline operations.
  detail::ThreadBias inline_bias_;
  // `check_and_run` (false: not run) on the bias's fast path, else under the
  // submit mutex (claiming the bias for this thread if nobody has it).
  template <class F>
  bool run_inline(F &&check_and_run) {
    const detail::ThreadBias::Ran ran = inline_bias_.try_run(check_and_run);
    if (ran != detail::ThreadBias::Ran::NotTaken) return ran == detail::ThreadBias::Ran::Done;
    std::lock_guard<std::mutex> lock(submit_mu_);
    inline_bias_.claim_or_exclude(true);
    return check_and_run();
  }
  std::shared_ptr<StreamState> default_stream_;
  std::mutex objects_mu_;
  std::unordered_map<StreamState *, std::shared_ptr<StreamState>> streams_;
  // GPUHAL_STREAM_PER_THREAD: one blocking stream per host thread.
  std::unordered_map<std::thread::id, std::shared_ptr<StreamState>> per_thread_;
  std::unordered_map<HostEvent *, std::shared_ptr<HostEvent>> events_;
  std::mutex kernel_error_mu_;
  std::string kernel_error_;
};

// Every stream made by create_stream in any context, by handle, with its
// device. Context::external_stream promises that a stream of another gpuhal
// runtime over the same plugin can be wrapped: that runtime's context is
// another HostContext of the same device, so a handle unknown to a context
// is looked up here (the owner keeps the stream alive while it is used, as
// the contract says; a stream destroyed since is not found). Weak: the
// owning context alone keeps a stream.
class StreamDirectory {
 public:
  void add(const std::shared_ptr<StreamState> &s, const HostDevice *device);
  void remove(const StreamState *s);
  std::shared_ptr<StreamState> find(gpuhal_stream_t handle, const HostDevice *device);

 private:
  std::mutex mu_;
  std::unordered_map<const StreamState *, std::pair<std::weak_ptr<StreamState>, const HostDevice *>> streams_;
};

// Plugin-wide state, created by init and destroyed by the last shutdown.
struct HostPlugin {
  std::vector<std::unique_ptr<HostDevice>> devices;
  // The allocation map, with the released device mappings kept for reuse
  // (GPUHAL_HOST_MAPPING_CACHE, set by init; unmapped when the map goes).
  Registry registry;
  plugin::HandleRegistry<HostContext, gpuhal_context_t> contexts;
  StreamDirectory streams;
  std::string options_key;  // what init was given (a second init must agree)
  int init_count = 0;
  // Kernels: settings from the first init; the pool and the fiber stacks
  // are made on the first launch.
  CompilerSettings compiler;
  unsigned threads = 0;  // participants of a launch (0: one per hardware thread)
  size_t fiber_stack = 64 * 1024;
  bool work_item_loops = true;  // GPUHAL_HOST_WORK_ITEM_LOOPS: barrier kernels as loops where possible
  bool huge_pages = true;       // GPUHAL_HOST_HUGE_PAGES: large device allocations on huge pages
  std::mutex kernel_mu;  // guards pool and stacks creation
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<StackPool> stacks;
  // Reservations, mappings and physical memory (host_virtual_memory.cpp).
  std::shared_ptr<struct VmState> virtual_memory = make_virtual_memory_state();
};

// In a child of fork() (plugin-wide, installed by the first init): every
// lock of the plugin's process-wide state is made afresh and the parent's
// state (contexts, registry, pools, private cache) is abandoned, never
// destroyed, since a thread of the parent that held a lock at the fork, or
// ran a stream of a context, does not exist here. The core refuses the
// parent's objects in the child; a runtime the child loads initialises the
// plugin anew. Nothing of the parent's is freed: the child's copy of it
// goes at exit.
void forget_parent_after_fork();
// In a child of fork(): fresh locks for IPC exports (host_ipc.cpp).
void reset_export_locks_after_fork();

// Heap-allocated by the first init and deleted by the last shutdown, so that
// no static destructor of this library races the core's teardown at exit.
// Set and cleared only by init, shutdown and a fork's child, while no
// entry of the plugin runs.
extern HostPlugin *g_plugin_state;
inline HostPlugin &plugin_state() {
  return *g_plugin_state;
}
bool plugin_state_exists();
void create_plugin_state();
void destroy_plugin_state();
// The live context for a handle, or nullptr.
HostContext *find_context(gpuhal_context_t handle);
// Called before any context leaves the plugin's registry: find_context's
// per-thread answers stop being used.
void forget_context_lookups();

// The context a thread looked up last, valid while no context has gone
// since (and for the same plugin state): every plugin entry resolves its
// context, and the registry's lock-free table is a chain of four dependent
// loads where this is two independent ones.
struct LastContextLookup {
  gpuhal_context_t handle = nullptr;
  HostContext *context = nullptr;
  const HostPlugin *state = nullptr;
  uint64_t removals = 0;
};
extern __thread LastContextLookup t_last_context GPUHAL_HOST_FAST_TLS;
extern std::atomic<uint64_t> g_context_removals;
// find_context's lock-free half, inline for the small copy's path: the
// context when `handle` is the one this thread looked up last and it is
// still live; nullptr means "ask find_context", not "no such context".
inline HostContext *find_context_cached(gpuhal_context_t handle) {
  const LastContextLookup &last = t_last_context;
  if (handle && last.handle == handle && last.state == g_plugin_state &&
      last.removals == g_context_removals.load(std::memory_order_acquire))
    return last.context;
  return nullptr;
}

}  // namespace gpuhal::host
