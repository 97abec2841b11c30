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
// Thread safety: all const; the table never changes after loading.
// Ownership: refers to the runtime's PluginLibrary, which outlives it.
#pragma once

#include <utility>

#include "gpuhal/plugin.h"
#include "plugin_library.hpp"

namespace gpuhal::detail {

class Backend {
 public:
  explicit Backend(const PluginLibrary &library) : library_(&library), table_(&library.table()) {}

  const PluginLibrary &library() const { return *library_; }
  const std::string &name() const { return library_->name(); }
  // Throws for a failed status, naming `call` (for callers that say more
  // than the entry's name, e.g. "memcpy_sync(H2D)").
  void check(gpuhal_status_t status, const char *call) const { library_->check(status, call); }

#define GPUHAL_PLUGIN_ENTRY(name, group, minor)                               \
  bool has_##name() const {                                                   \
    return table_->name != nullptr;                                           \
  }                                                                           \
  template <class... Args>                                                    \
  auto name##_status(Args &&...args) const {                                  \
    return present(table_->name, #name, #group)(std::forward<Args>(args)...); \
  }                                                                           \
  template <class... Args>                                                    \
  void name(Args &&...args) const {                                           \
    library_->check(name##_status(std::forward<Args>(args)...), #name);       \
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
};

}  // namespace gpuhal::detail
