// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The validation layer: every call's arguments against its entry's rules
// (the GPUHAL_ENTRY_RULES lines of gpuhal/plugin_entries.def, whose comment
// lists the rule families), before the call reaches the plugin.
//
// A broken rule refuses the call without reaching the plugin: the status
// fits the rule (ERROR_INVALID_HANDLE for a handle, ERROR_NOT_PERMITTED
// inside a callback, ERROR_INVALID_VALUE otherwise), and the message, also
// logged at error level, names the entry, the parameter, its value and the
// rule:
//   validation: mem_alloc: bytes = 0: must not be 0
// Also checked, with what the layer saw the plugin make and destroy:
//   - handle lifetimes: a destroyed stream, event, module, graph ... used
//     again; a handle of another context; a double mem_free;
//   - ranges inside allocations, grid and block against the device's limits;
//   - callbacks: the waiting entries (synchronize, context_destroy) are
//     refused inside a stream callback; destroying a stream that still has
//     queued work is warned about (plugin.h lets that work finish);
//   - the plugin's own answers: a success with a NULL handle, a handle or
//     an allocation that overlaps one still live (logged, counted).
// reports() counts every refusal and every plugin report.
//
// Thread safety: the book and the caches take locks; a call's checks and
// the book's update after it are not one atomic step (two threads racing a
// destroy against a use is the program's race, reported or not).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "layer_entries.hpp"
#include "log.hpp"
#include "object_book.hpp"

namespace gpuhal::detail::layers {

class ValidationLayer;

// The checks of one call: the rules support::ArgumentCheck checks from the
// arguments alone, and here also those that need the plugin's live objects
// (these hide the base's); the first broken rule makes the report.
class RuleCheck : public support::ArgumentCheck {
 public:
  RuleCheck(ValidationLayer &layer, const char *entry, const char *params, uint64_t context)
      : ArgumentCheck(entry, params), layer_(layer), context_(context) {}

  template <class T>
  bool context(T h, size_t i) {
    return ArgumentCheck::context(h, i) && lifetime(ObjectKind::context, bits_of(h), i, true);
  }
  template <class T>
  bool stream(T h, size_t i) {
    return bits_of(h) <= 2 || lifetime(ObjectKind::stream, bits_of(h), i, false);  // the default streams, or ours
  }
  template <class T>
  bool own_stream(T h, size_t i) {
    return ArgumentCheck::own_stream(h, i) && lifetime(ObjectKind::stream, bits_of(h), i, true);
  }
  template <class T>
  bool handle(support::HandleKind kind, T h, size_t i) {
    return ArgumentCheck::handle(kind, h, i) && lifetime(object_kind(kind), bits_of(h), i, true);
  }
  bool events(const gpuhal_event_t *events, uint32_t count, size_t i);
  bool ordinal(int32_t v, size_t i);
  bool allocation(gpuhal_deviceptr_t p, size_t i);
  bool ipc_mapping(gpuhal_deviceptr_t p, size_t i);
  bool device_range(gpuhal_deviceptr_t p, uint64_t bytes, size_t i, size_t n);
  bool copy(uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src, uint64_t bytes, size_t k, size_t d,
            size_t s, size_t n);
  bool launch(const gpuhal_launch_config_t *c, size_t i);
  bool location(int32_t v, size_t i);
  bool not_in_callback();

  std::string report() const { return "validation: " + ArgumentCheck::report(); }

 private:
  bool lifetime(ObjectKind kind, uint64_t h, size_t i, bool must_be_known);
  static ObjectKind object_kind(support::HandleKind kind);

  ValidationLayer &layer_;
  uint64_t context_;
};

// What an entry makes: the kind and the position of its output.
struct Creation {
  bool makes = false;
  ObjectKind kind = ObjectKind::context;
  size_t out = 0;
};
template <EntryId Id>
constexpr Creation creation() {
  using E = EntryId;
  using K = ObjectKind;
  switch (Id) {
    case E::context_create: return {true, K::context, 1};
    case E::context_adopt: return {true, K::context, 2};
    case E::mem_alloc: return {true, K::device_memory, 2};
    case E::mem_alloc_managed: return {true, K::managed_memory, 2};
    case E::mem_alloc_async: return {true, K::async_memory, 3};
    case E::host_alloc: return {true, K::host_memory, 3};
    case E::stream_create: return {true, K::stream, 2};
    case E::stream_create_with_priority: return {true, K::stream, 3};
    case E::event_create: return {true, K::event, 2};
    case E::module_load: return {true, K::module, 4};
    case E::stream_end_capture: return {true, K::graph, 2};
    case E::graph_instantiate: return {true, K::graph_exec, 2};
    case E::ipc_open: return {true, K::ipc_mapping, 2};
    case E::vm_reserve: return {true, K::vm_reservation, 3};
    case E::vm_create: return {true, K::vm_physical, 2};
    case E::mem_pool_create: return {true, K::mem_pool, 2};
    case E::mem_pool_alloc_async: return {true, K::async_memory, 4};
    default: return {};
  }
}

class ValidationLayer {
 public:
  ValidationLayer(const gpuhal_plugin_table_t &next, const Logger &logger) : next_(next), logger_(logger) {}
  ~ValidationLayer();

  template <EntryId Id, class R, class Chain, class... A>
  R call(Chain &chain, size_t depth, A... a) {
    if constexpr (!std::is_same_v<R, gpuhal_status_t>) {
      return chain.template invoke<Id, R>(depth, a...);
    } else {
      RuleCheck check(*this, EntryTraits<Id>::name, entry_params<Id>, call_context<Id>(a...));
      if (!EntryRules<Id>::check(check, std::make_tuple(a...))) {
        ++reports_;
        logger_.write(LogLevel::Error, check.report());
        return chain.refuse(check.status(), check.report());
      }
      if constexpr (Id == EntryId::stream_destroy) warn_if_busy(a...);
      auto taken = book_.before<Id>(a...);
      gpuhal_status_t status;
      if constexpr (Id == EntryId::stream_add_callback)
        status = add_callback(chain, depth, a...);
      else
        status = chain.template invoke<Id, R>(depth, a...);
      if constexpr (creation<Id>().makes) {
        if (status == GPUHAL_SUCCESS) check_made<Id>(a...);
      }
      book_.after<Id>(status, std::move(taken), a...);
      return status;
    }
  }

  uint64_t reports() const { return reports_.load(); }

  // For RuleCheck.
  const ObjectBook &book() const { return book_; }
  int32_t device_count();
  // The device's block and grid limits (zeros where the plugin gave none).
  const gpuhal_device_properties_t *device(int32_t ordinal);

 private:
  template <EntryId Id, class... A>
  static uint64_t call_context(A... a) {
    if constexpr (sizeof...(A) > 0) {
      if constexpr (parameter_name(entry_params<Id>, 0) == "ctx") return bits_of(std::get<0>(std::make_tuple(a...)));
    }
    return 0;
  }
  template <EntryId Id, class... A>
  void check_made(A... a) {
    constexpr Creation made = creation<Id>();
    const uint64_t h = bits_of(*std::get<made.out>(std::make_tuple(a...)));
    uint64_t bytes = 0;
    if constexpr (Id == EntryId::mem_alloc || Id == EntryId::mem_alloc_managed || Id == EntryId::mem_alloc_async)
      bytes = std::get<1>(std::make_tuple(a...));
    if constexpr (Id == EntryId::mem_pool_alloc_async) bytes = std::get<2>(std::make_tuple(a...));
    plugin_answer(EntryTraits<Id>::name, made.kind, h, bytes);
  }
  void plugin_answer(const char *entry, ObjectKind kind, uint64_t handle, uint64_t bytes);
  void warn_if_busy(gpuhal_context_t ctx, gpuhal_stream_t stream);
  template <class Chain>
  gpuhal_status_t add_callback(Chain &chain, size_t depth, gpuhal_context_t ctx, gpuhal_stream_t stream,
                               gpuhal_host_fn fn, void *user) {
    auto *box = wrap_callback(ctx, stream, fn, user);
    const gpuhal_status_t status =
        chain.template invoke<EntryId::stream_add_callback, gpuhal_status_t>(depth, ctx, stream, &run_callback, box);
    if (status != GPUHAL_SUCCESS) unwrap_refused(box);
    return status;
  }
  // A callback the layer hands the plugin in place of the caller's, so that
  // the entries called from inside it are known to be.
  struct CallbackBox {
    gpuhal_host_fn fn;
    void *user;
    bool kept;  // recorded in a capture: runs at every replay, freed with the layer
  };
  CallbackBox *wrap_callback(gpuhal_context_t ctx, gpuhal_stream_t stream, gpuhal_host_fn fn, void *user);
  void unwrap_refused(CallbackBox *box);
  static void run_callback(void *box, gpuhal_status_t status);

  const gpuhal_plugin_table_t &next_;
  Logger logger_;
  ObjectBook book_;
  std::atomic<uint64_t> reports_{0};
  std::atomic<int32_t> device_count_{-1};
  std::mutex mu_;
  std::vector<std::unique_ptr<gpuhal_device_properties_t>> devices_;
  std::vector<std::unique_ptr<CallbackBox>> kept_callbacks_;  // recorded in captures: run at every replay
  friend class RuleCheck;
};

}  // namespace gpuhal::detail::layers
