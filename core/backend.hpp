// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Backend: the typed face of a loaded plugin, and the only reader of its
// table after loading (PluginLibrary opened, negotiated and validated it).
//
// One set of methods per entry of include/gpuhal/plugin_entries.def:
//   entry(args...)         calls it; a failure throws gpuhal::Error with the
//                          plugin's status and "<backend>: <entry>: <message>"
//   entry_status(args...)  calls it and returns its status, for the callers
//                          that act on one (queries answer NOT_READY, releases
//                          in destructors log instead of throwing, a failed
//                          allocation is retried after a flush)
//   has_entry()            whether the plugin provides it (optional entries)
// Calling an entry the plugin left NULL throws ERROR_NOT_SUPPORTED naming the
// entry and its group, never dereferences it.
//
// A context's copy counts, on its WorkClock, every call of an entry that puts
// work on a stream (submits_work below), for the call's duration.
//
// Thread safety: all const; the table never changes after loading.
// Ownership: refers to the runtime's PluginLibrary, which outlives it, and to
// the clock of the context holding the copy.
#pragma once

#include <string_view>
#include <utility>

#include "gpuhal/plugin.h"
#include "plugin_library.hpp"
#include "work_clock.hpp"

namespace gpuhal::detail {

// The entries whose work may still run after they return: everything put on
// a stream. A name missing here would let memory still in use be handed out
// again (WorkClock), so the list errs on the side of counting (an event or a
// wait touches no memory, but is counted all the same). memcpy_sync and
// memset_sync are not here: plugin.h makes them return when done, so nothing
// of theirs is in flight after them, and a small synchronous copy stays free
// of locked instructions (each one waits for the copy's stores to drain).
inline constexpr std::string_view kSubmittingEntries[] = {"memcpy_async",        "memset_async",   "stream_wait_event",
                                                          "stream_add_callback", "event_record",   "stream_barrier",
                                                          "mem_alloc_async",     "mem_free_async", "launch",
                                                          "graph_exec_launch",   "memcpy_rect_async",
                                                          "mem_prefetch_async",  "mem_pool_alloc_async"};
constexpr bool submits_work(std::string_view entry) {
  for (std::string_view e : kSubmittingEntries)
    if (e == entry) return true;
  return false;
}

// Every name above is an entry (a renamed entry must not drop out unseen).
inline constexpr std::string_view kEntryNames[] = {
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) #name,
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
};
constexpr bool names_are_entries() {
  for (std::string_view s : kSubmittingEntries) {
    bool found = false;
    for (std::string_view e : kEntryNames) found = found || e == s;
    if (!found) return false;
  }
  return true;
}
static_assert(names_are_entries(), "kSubmittingEntries names an entry plugin_entries.def does not have");

class Backend {
 public:
  explicit Backend(const PluginLibrary &library) : library_(&library), table_(&library.table()) {}

  // The copy a context holds counts its submissions on `clock`.
  Backend(const Backend &other, WorkClock *clock) : library_(other.library_), table_(other.table_), clock_(clock) {}

  const PluginLibrary &library() const { return *library_; }
  const std::string &name() const { return library_->name(); }
  // Throws for a failed status, naming `call` (for callers that say more
  // than the entry's name, e.g. "memcpy_sync(H2D)").
  void check(gpuhal_status_t status, const char *call) const { library_->check(status, call); }

#define GPUHAL_PLUGIN_ENTRY(name, group, minor)                         \
  bool has_##name() const {                                             \
    return table_->name != nullptr;                                     \
  }                                                                     \
  template <class... Args>                                              \
  auto name##_status(Args &&...args) const {                            \
    const auto fn = present(table_->name, #name, #group);               \
    if constexpr (submits_work(#name)) {                                \
      WorkClock::Submission counted(clock_);                            \
      return fn(std::forward<Args>(args)...);                           \
    } else {                                                            \
      return fn(std::forward<Args>(args)...);                           \
    }                                                                   \
  }                                                                     \
  template <class... Args>                                              \
  void name(Args &&...args) const {                                     \
    library_->check(name##_status(std::forward<Args>(args)...), #name); \
  }
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY

 private:
  template <class Fn>
  Fn present(Fn fn, const char *entry, const char *group) const {
    if (!fn) unsupported(entry, group);
    return fn;
  }
  [[noreturn]] void unsupported(const char *entry, const char *group) const;

  const PluginLibrary *library_;
  const gpuhal_plugin_table_t *table_;
  WorkClock *clock_ = nullptr;
};

}  // namespace gpuhal::detail
