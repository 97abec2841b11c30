// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ContextImpl: one context of a device, what every object of it holds; and
// ContextChild, what a stream, an event or a module keeps of it.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dealloc_queue.hpp"
#include "fork_guard.hpp"
#include "host_visible_memory.hpp"
#include "gpuhal/context.hpp"
#include "runtime_impl.hpp"

namespace gpuhal::detail {

// A host range the plugin holds registered (host_register), with how many
// of the user's registrations use it. Pieces never overlap: a registration
// over bytes some pieces cover already registers only the gaps between them
// (drivers refuse a second registration of any byte), so one user
// registration can span several adjacent pieces. See host_memory.cpp.
struct Registration {
  uint64_t size = 0;
  uint32_t flags = 0;
  int count = 0;  // user registrations touching the piece; 0 only after a failed unregister
};

// What require_feature names for the optional groups the core checks.
inline constexpr const char *kStreamPriorities = "stream priorities (Capability::StreamPriorities)";
inline constexpr const char *kGraphs = "stream capture and graphs (Capability::Graphs)";
inline constexpr const char *kContextLimits = "context limits (Capability::ContextLimits)";
inline constexpr const char *kDriverMemoryPools = "memory pools as objects (Capability::DriverMemoryPools)";

struct ContextImpl {
  std::shared_ptr<RuntimeImpl> runtime;
  DeviceImpl *device = nullptr;
  gpuhal_context_t handle = nullptr;
  // Bumped by reset(); objects remember the generation they were made in.
  std::atomic<uint64_t> generation{1};
  // fork_count() when the context was made: a different count means this is
  // a child of fork() holding its parent's context (fork_guard.hpp).
  uint32_t forks = 0;
  // Deferred releases of this context's objects (created with the context).
  std::unique_ptr<DeallocQueue> deallocs;
  // Registered host memory: the plugin's pieces by start address, and the
  // user's registrations (start, size) with their counts.
  std::mutex registrations_mutex;
  std::map<uintptr_t, Registration> registrations;
  std::map<std::pair<uintptr_t, uint64_t>, int> user_registrations;
  // The backend's memory that host code addresses directly, kept as host
  // memory through a reset (host_visible_memory.hpp).
  HostVisibleMemory host_visible;
  // Serves every allocation of the context (installed by create_context).
  std::unique_ptr<MemoryManager> manager;
  // Managers replaced by Context::set_memory_manager: memory they handed
  // out names them until it goes, so they live as long as the context.
  std::vector<std::unique_ptr<MemoryManager>> retired_managers;
  // The manager is exactly the DefaultMemoryManager: Context::allocate
  // makes its allocation itself, from the handle's own reference, instead
  // of the manager locking its weak one for the same call.
  bool default_manager = false;
  // The core's own kernels (DeviceArray::assign / fill), loaded on first
  // use in the current generation, or when the context is made (and made
  // anew by a reset) where loading may wait for queued work
  // (prepare_builtin_kernels). The module refers to this context
  // without owning it (no cycle): ~ContextImpl drops it first, and only
  // the core's calls, made while a caller holds the context, use it.
  std::mutex builtin_mutex;
  std::shared_ptr<struct ModuleImpl> builtin_module;

  // Why the last Context::reset() could not make a new context (handle is
  // then null): every later use reports this, not "reset". Written by reset.
  Status reset_failure_status = Status::SUCCESS;
  std::string reset_failure;

  // Made over another library's vendor context (Context::adopt): never
  // reset by gpuhal.
  bool adopted = false;
  // A copy of the runtime's backend (two pointers; the table never changes
  // after loading), set at creation: every call goes through it, one
  // dependent load shorter than through the runtime's.
  std::optional<Backend> backend_;
  // Whether work of this context can be in flight (work_clock.hpp); the
  // copy of the backend above counts on it.
  WorkClock work;
  // Released memory may be kept as idle blocks (the device's contexts are
  // the plugin's alone: exclusive_contexts). Set at creation.
  bool idle_blocks = false;
  // Memory released while work may still use it may be kept as a busy block,
  // a spare once a flush's synchronise proved it unused (the device's
  // context_synchronize waits for all work of the context, another
  // library's too: synchronize_waits_for_all_work). Set at creation.
  bool spares_after_sync = false;
  // Work this context's synchronise may not wait for can reach its memory:
  // another device's context (peer access) or a wrapped external stream
  // (it may belong to another vendor context). Busy blocks are off for good
  // from then on. (Native handles given out are not: work put on this
  // context's own streams is waited for.)
  std::atomic<bool> foreign_work{false};
  // Whether released memory may be kept as a block at all, and taken back
  // from the spares.
  bool keeps_blocks() const { return idle_blocks || spares_after_sync; }

  ~ContextImpl();
  const Backend &backend() const { return *backend_; }
  const PluginLibrary &lib() const { return *runtime->library; }
  const Logger &logger() const { return runtime->library->logger(); }
  void check(gpuhal_status_t status, const char *call) const { lib().check(status, call); }
  // Host-visible memory of an earlier generation (host_visible_memory.hpp)
  // loses its last handle: memory the backend kept through the reset is
  // freed (mem_free_kept; not in a child of fork(), where it is the
  // parent's), rescued pages are unmapped. Errors are logged: a destructor's.
  void release_old_host_visible(uintptr_t base);
  // A query's answer: false for NOT_READY, true for SUCCESS; any other
  // status throws naming `call`.
  bool ready(gpuhal_status_t status, const char *call) const {
    if (status == GPUHAL_NOT_READY) return false;
    check(status, call);
    return true;
  }
  // Throws ERROR_CONTEXT_DESTROYED when an object of generation `gen` is used
  // after a reset (or when the reset could not create a new context), and
  // ERROR_NOT_PERMITTED in a child of fork() for its parent's objects.
  // Inline: every call of every object does it.
  void check_alive(uint64_t gen, const char *what) const {
    if (__builtin_expect(
            gen == generation.load(std::memory_order_acquire) && handle != nullptr && forks == fork_count(), 1))
      return;
    context_destroyed(what);
  }
  // ERROR_NOT_SUPPORTED naming `call`, the backend and `feature` (which
  // says its Capability), unless the plugin provides it (`present`).
  void require_feature(bool present, const char *call, const char *feature) const {
    if (!present) unsupported_feature(call, feature);
  }
  [[noreturn]] void unsupported_feature(const char *call, const char *feature) const;
  // True in a child of fork() for a context its parent made: nothing of it
  // may call the plugin (destructors do nothing).
  bool inherited() const { return forks != fork_count(); }
  [[noreturn]] void context_destroyed(const char *what) const;
  uint64_t current_generation() const { return generation.load(std::memory_order_acquire); }
  // Queues `release` (a plugin call for an object of generation `gen`),
  // skipped if the context was reset before it runs.
  void defer_release(uint64_t gen, uint64_t bytes, std::function<gpuhal_status_t()> release, const char *call);
  // The same for mem_free of `ptr`, without allocating: the hot path of
  // every device array's release.
  void defer_free(uint64_t gen, uint64_t bytes, gpuhal_deviceptr_t ptr);
  // Synchronises the whole context (context_synchronize; throws on failure)
  // and tells the work clock.
  void synchronize();
  // True when no work of the context can be in flight: device memory
  // released now may be kept as an idle block (DeallocQueue).
  bool work_idle() const { return work.idle(); }
  // Work the clock cannot see may use this context's memory from now on.
  void mark_external() { work.external.store(true, std::memory_order_relaxed); }
  // Reports a failed plugin release that happened in a destructor to the
  // deallocation error handler (nothing may throw from a destructor).
  void report_release_failure(gpuhal_status_t status, const char *call) const;
};

// Creates the context for `device` (context_create + its deallocation
// queue), or with `adopt` one over that vendor context (context_adopt).
std::shared_ptr<ContextImpl> create_context(const std::shared_ptr<RuntimeImpl> &runtime, DeviceImpl *device,
                                            const uint64_t *adopt = nullptr);

// Where the device says loading may wait for queued work
// (DeviceProperties::module_loads_wait), loads the core's own kernels into
// the context's current generation now, before the user can queue work, so
// that fill and assign never wait for a stream. Called when a context is
// made and made anew; a failure (no compiler) is logged at info level and
// left to the first use. Elsewhere nothing (the first use loads them).
void prepare_builtin_kernels(const std::shared_ptr<ContextImpl> &ctx);

// What a stream or an event keeps: its context (kept alive), the plugin's
// handle, and the context generation it was made in (a reset ends it).
template <class Handle>
struct ContextChild {
  std::shared_ptr<ContextImpl> ctx;
  Handle handle = nullptr;
  uint64_t generation = 0;
  // The handle after checking the context is still the one it was made in.
  Handle live(const char *what) const {
    ctx->check_alive(generation, what);
    return handle;
  }
};

// A new child object (stream, event, module) of a live context; check_alive
// throws (naming `what`) when the context was reset or is a parent's after fork().
template <class Impl>
std::shared_ptr<Impl> new_child(const std::shared_ptr<ContextImpl> &ctx, const char *what) {
  const uint64_t gen = ctx->current_generation();
  ctx->check_alive(gen, what);
  auto out = std::make_shared<Impl>();
  out->ctx = ctx;
  out->generation = gen;
  return out;
}

}  // namespace gpuhal::detail
