// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend plugin-wide state: devices, the memory registry, contexts by
// handle, every stream by handle, kernel settings and the shared pools;
// made by the first init and destroyed by the last shutdown.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "handle_registry.hpp"
#include "host_compiler.hpp"
#include "host_context.hpp"
#include "host_device.hpp"
#include "host_memory.hpp"
#include "host_stack_pool.hpp"
#include "host_thread_pool.hpp"
#include "host_virtual_memory.hpp"

namespace gpuhal::host {

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

// Managed and host memory kept past its context (mem_keep,
// host_kept_memory.cpp): base -> (bytes, memfd or -1), unmapped by
// mem_free_kept, or with the plugin's state (the last shutdown).
struct KeptMemory {
  std::mutex mu;
  std::map<uintptr_t, std::pair<uint64_t, int>> blocks;
  KeptMemory() = default;
  KeptMemory(const KeptMemory &) = delete;
  KeptMemory &operator=(const KeptMemory &) = delete;
  ~KeptMemory();
};

// Plugin-wide state, created by init and destroyed by the last shutdown.
struct HostPlugin {
  std::vector<std::unique_ptr<HostDevice>> devices;
  // The allocation map, with the released device mappings kept for reuse
  // (GPUHAL_HOST_MAPPING_CACHE, set by init; unmapped when the map goes).
  Registry registry;
  KeptMemory kept;
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
