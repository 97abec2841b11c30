// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ObjectBook: what a plugin has made and not yet destroyed, as seen through
// its entry table, for the validation layer (is this handle live, of which
// context, which allocation holds this address) and the leak layer (what is
// still alive at context_destroy and at shutdown).
//
// One call updates the book in two steps: before<Id>(args...) takes out what
// a destroying entry destroys (before the plugin can hand its address or
// handle to another thread's call), and after<Id>(status, taken, args...)
// adds what a creating entry made when it succeeded, or puts back what a
// failed destroy took out.
//
// Thread safety: every member takes the book's mutex.
// Bounds: destroyed handles are remembered (for use-after-destroy reports)
// up to kDestroyedKept of them, the oldest forgotten first.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "layer_entries.hpp"

namespace gpuhal::detail::layers {

enum class ObjectKind {
  context,
  device_memory,
  managed_memory,
  async_memory,
  host_memory,
  registration,
  stream,
  event,
  module,
  kernel,
  ipc_mapping,
  graph,
  graph_exec,
  vm_reservation,
  vm_physical,
  mem_pool,
  kept_memory,  // managed or host memory mem_keep took out of its context
};
const char *to_string(ObjectKind kind);

struct ObjectRecord {
  ObjectKind kind = ObjectKind::context;
  uint64_t handle = 0;   // the handle's or base address's bits
  uint64_t context = 0;  // its context's handle (for a context: itself)
  uint64_t bytes = 0;    // memory: its size; a context: its device ordinal; a kernel: its module
  uint64_t call = 0;     // the trace layer's number of the call that made it (0: not traced)
  uint64_t thread = 0;   // the thread that made it
};

// One line for a record: "device memory 0x7f0000 (4096 bytes), made by call
// #12 (mem_alloc) on thread 1234".
std::string describe(const ObjectRecord &r);

// The trace layer's number of the call this thread is in (0 outside a traced
// call), which the books record with what the call makes.
uint64_t current_traced_call();
void set_current_traced_call(uint64_t call);

class ObjectBook {
 public:
  static constexpr size_t kDestroyedKept = 4096;

  using Taken = std::vector<ObjectRecord>;
  template <EntryId Id, class... A>
  Taken before(A... a);
  template <EntryId Id, class... A>
  void after(gpuhal_status_t status, Taken taken, A... a);

  std::optional<ObjectRecord> find(ObjectKind kind, uint64_t handle) const;
  bool was_destroyed(ObjectKind kind, uint64_t handle) const;
  // The live allocation (device, managed, stream-ordered memory or an IPC
  // mapping) whose range holds `address`, if the book has one.
  std::optional<ObjectRecord> allocation_containing(uint64_t address) const;
  // Everything alive of `context` but the context itself and its kernels
  // (which go with their modules), or of every context when context is 0.
  std::vector<ObjectRecord> alive(uint64_t context) const;

 private:
  using Key = std::pair<ObjectKind, uint64_t>;
  void add(ObjectKind kind, uint64_t handle, uint64_t context, uint64_t bytes);
  void put_back(const Taken &taken);
  Taken take(ObjectKind kind, uint64_t handle);
  Taken take_memory(uint64_t address);  // mem_free's: whichever memory kind it was
  Taken take_kept(uint64_t address);    // mem_keep's: host memory, else managed memory
  Taken take_module(uint64_t module);   // with its kernels
  Taken take_context(uint64_t context);  // everything of it (context_destroy frees it all)
  void take_locked(Key key, Taken *out);  // by value: `key` may live in a map it erases from
  static bool is_memory(ObjectKind k) {
    return k == ObjectKind::device_memory || k == ObjectKind::managed_memory || k == ObjectKind::async_memory ||
           k == ObjectKind::ipc_mapping;
  }

  mutable std::mutex mu_;
  std::map<Key, ObjectRecord> live_;
  std::map<uint64_t, Key> memory_by_base_;  // device-side ranges, for allocation_containing
  std::set<Key> destroyed_;
  std::deque<Key> destroyed_order_;
};

template <EntryId Id, class... A>
ObjectBook::Taken ObjectBook::before(A... a) {
  using E = EntryId;
  [[maybe_unused]] auto arg = [&](auto index) {
    return bits_of(std::get<decltype(index)::value>(std::make_tuple(a...)));
  };
  using I0 = std::integral_constant<size_t, 0>;
  using I1 = std::integral_constant<size_t, 1>;
  if constexpr (Id == E::context_destroy) return take_context(arg(I0{}));
  if constexpr (Id == E::mem_free || Id == E::mem_free_async) return take_memory(arg(I1{}));
  if constexpr (Id == E::host_free) return take(ObjectKind::host_memory, arg(I1{}));
  if constexpr (Id == E::host_unregister) return take(ObjectKind::registration, arg(I1{}));
  if constexpr (Id == E::stream_destroy) return take(ObjectKind::stream, arg(I1{}));
  if constexpr (Id == E::event_destroy) return take(ObjectKind::event, arg(I1{}));
  if constexpr (Id == E::module_unload) return take_module(arg(I1{}));
  if constexpr (Id == E::ipc_close) return take(ObjectKind::ipc_mapping, arg(I1{}));
  if constexpr (Id == E::graph_destroy) return take(ObjectKind::graph, arg(I1{}));
  if constexpr (Id == E::graph_exec_destroy) return take(ObjectKind::graph_exec, arg(I1{}));
  if constexpr (Id == E::vm_free) return take(ObjectKind::vm_reservation, arg(I1{}));
  if constexpr (Id == E::vm_release) return take(ObjectKind::vm_physical, arg(I1{}));
  if constexpr (Id == E::mem_pool_destroy) return take(ObjectKind::mem_pool, arg(I1{}));
  if constexpr (Id == E::mem_keep) return take_kept(arg(I1{}));
  if constexpr (Id == E::mem_free_kept) return take(ObjectKind::kept_memory, arg(I0{}));
  return {};
}

template <EntryId Id, class... A>
void ObjectBook::after(gpuhal_status_t status, Taken taken, A... a) {
  if (status != GPUHAL_SUCCESS) {
    // A failed release leaves its object live, except context_destroy's: the
    // context and everything of it are gone whatever it returns (plugin.h).
    if constexpr (Id != EntryId::context_destroy) put_back(taken);
    return;
  }
  [[maybe_unused]] const auto args = std::make_tuple(a...);
  using E = EntryId;
  auto out = [&](auto index) { return bits_of(*std::get<decltype(index)::value>(args)); };
  auto arg = [&](auto index) { return bits_of(std::get<decltype(index)::value>(args)); };
  using I0 = std::integral_constant<size_t, 0>;
  using I1 = std::integral_constant<size_t, 1>;
  using I2 = std::integral_constant<size_t, 2>;
  using I3 = std::integral_constant<size_t, 3>;
  using I4 = std::integral_constant<size_t, 4>;
  if constexpr (Id == E::context_create || Id == E::context_adopt) {
    const uint64_t ctx = out(std::integral_constant<size_t, sizeof...(A) - 1>{});
    add(ObjectKind::context, ctx, ctx, arg(I0{}));
  } else if constexpr (Id == E::mem_alloc) {
    add(ObjectKind::device_memory, out(I2{}), arg(I0{}), arg(I1{}));
  } else if constexpr (Id == E::mem_alloc_managed) {
    add(ObjectKind::managed_memory, out(I2{}), arg(I0{}), arg(I1{}));
  } else if constexpr (Id == E::mem_alloc_async) {
    add(ObjectKind::async_memory, out(I3{}), arg(I0{}), arg(I1{}));
  } else if constexpr (Id == E::host_alloc) {
    add(ObjectKind::host_memory, out(I3{}), arg(I0{}), arg(I1{}));
  } else if constexpr (Id == E::host_register) {
    add(ObjectKind::registration, arg(I1{}), arg(I0{}), arg(I2{}));
  } else if constexpr (Id == E::stream_create) {
    add(ObjectKind::stream, out(I2{}), arg(I0{}), 0);
  } else if constexpr (Id == E::stream_create_with_priority) {
    add(ObjectKind::stream, out(I3{}), arg(I0{}), 0);
  } else if constexpr (Id == E::event_create) {
    add(ObjectKind::event, out(I2{}), arg(I0{}), 0);
  } else if constexpr (Id == E::module_load) {
    add(ObjectKind::module, out(I4{}), arg(I0{}), arg(I2{}));
  } else if constexpr (Id == E::module_get_kernel) {
    add(ObjectKind::kernel, out(I3{}), arg(I0{}), arg(I1{}));
  } else if constexpr (Id == E::ipc_open) {
    add(ObjectKind::ipc_mapping, out(I2{}), arg(I0{}), *std::get<3>(args));
  } else if constexpr (Id == E::stream_end_capture) {
    add(ObjectKind::graph, out(I2{}), arg(I0{}), 0);
  } else if constexpr (Id == E::graph_instantiate) {
    add(ObjectKind::graph_exec, out(I2{}), arg(I0{}), 0);
  } else if constexpr (Id == E::vm_reserve) {
    add(ObjectKind::vm_reservation, out(I3{}), arg(I0{}), arg(I1{}));
  } else if constexpr (Id == E::vm_create) {
    add(ObjectKind::vm_physical, out(I2{}), arg(I0{}), arg(I1{}));
  } else if constexpr (Id == E::mem_pool_create) {
    add(ObjectKind::mem_pool, out(I2{}), arg(I0{}), 0);
  } else if constexpr (Id == E::mem_pool_alloc_async) {
    add(ObjectKind::async_memory, out(std::integral_constant<size_t, 4>{}), arg(I0{}), arg(I2{}));
  } else if constexpr (Id == E::mem_keep) {
    // No context's any more: context_destroy leaves it, mem_free_kept frees it.
    add(ObjectKind::kept_memory, arg(I1{}), 0, taken.empty() ? 0 : taken.front().bytes);
  }
}

}  // namespace gpuhal::detail::layers
