// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// LayerChain: the layers (docs/layers.md) between the core and one loaded
// plugin. It wraps the plugin's validated table in a table of the same ABI
// whose entries are generated from gpuhal/plugin_entries.def: each goes
// through the enabled layers in the order GPUHAL_LAYERS (Config::layers)
// names them -- the first is the one the core calls -- and then to the
// plugin's entry. An entry the plugin leaves NULL stays NULL.
//
// C function pointers carry no state, so a chain takes one of kSlots slots
// for its lifetime; the wrapper functions of slot s find their chain there.
// More live chains than slots is ERROR_INVALID_CONFIG naming the limit.
//
// A layer that refuses a call (validation, fault) returns its status and
// leaves its message as the calling thread's last_error() of this table.
//
// Thread safety: the table may be called from any thread, as the plugin's.
// Ownership: PluginLibrary owns the chain; it must outlive every call of the
// wrapped table (PluginLibrary calls shutdown through it, then destroys it).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "fault_layer.hpp"
#include "gpuhal/config.hpp"
#include "layer_entries.hpp"
#include "leak_layer.hpp"
#include "log.hpp"
#include "trace_layer.hpp"
#include "validation_layer.hpp"

namespace gpuhal::detail::layers {

// The layers gpuhal has, in the order gpuhal-info lists them.
struct LayerInfo {
  const char *name;
  const char *description;
};
extern const LayerInfo kLayers[4];

class LayerChain {
 public:
  static constexpr size_t kSlots = 16;

  // A chain over `next` with config.layers (each a name of kLayers, no
  // repeats: checked by Config's parse). Throws gpuhal::Error
  // (ERROR_INVALID_CONFIG) naming the setting that is wrong, or when every
  // slot is taken.
  static std::unique_ptr<LayerChain> create(const gpuhal_plugin_table_t &next, const std::string &backend,
                                            const Config &config, const Logger &logger);
  ~LayerChain();
  LayerChain(const LayerChain &) = delete;
  LayerChain &operator=(const LayerChain &) = delete;

  // The wrapped table: hand it to the core in place of the plugin's.
  const gpuhal_plugin_table_t &table() const { return table_; }
  const gpuhal_plugin_table_t &next() const { return next_; }
  const std::string &backend() const { return backend_; }
  const Logger &logger() const { return logger_; }

  // The wrapped entries' target: runs the call through every layer.
  template <EntryId Id, class R, class... A>
  R enter(A... a) {
    begin_call();
    if constexpr (Id == EntryId::shutdown) {
      invoke<Id, R>(0, a...);
      after_shutdown();
    } else {
      return invoke<Id, R>(0, a...);
    }
  }
  // Layer `depth` onwards, then the plugin.
  template <EntryId Id, class R, class... A>
  R invoke(size_t depth, A... a);

  // For a layer refusing the call it is in: `message` becomes this thread's
  // last_error(); returns `status`.
  gpuhal_status_t refuse(gpuhal_status_t status, std::string message);
  // This thread's last_error() through the chain (a layer's refusal, or the
  // plugin's message).
  const char *last_error() const;

 private:
  enum class Kind { validation, trace, leak, fault };
  LayerChain(const gpuhal_plugin_table_t &next, const std::string &backend, const Logger &logger);
  void begin_call();
  void after_shutdown();

  gpuhal_plugin_table_t next_{};
  gpuhal_plugin_table_t table_{};
  std::string backend_;
  Logger logger_;
  std::vector<Kind> order_;
  std::unique_ptr<ValidationLayer> validation_;
  std::unique_ptr<TraceLayer> trace_;
  std::unique_ptr<LeakLayer> leak_;
  std::unique_ptr<FaultLayer> fault_;
  size_t slot_ = kSlots;
  int pid_ = 0;  // a child of fork() writes no reports of its parent's chain
};

template <EntryId Id, class R, class... A>
R LayerChain::invoke(size_t depth, A... a) {
  if (depth == order_.size()) return (next_.*EntryTraits<Id>::member)(a...);
  switch (order_[depth]) {
    case Kind::validation: return validation_->template call<Id, R>(*this, depth + 1, a...);
    case Kind::trace: return trace_->template call<Id, R>(*this, depth + 1, a...);
    case Kind::leak: return leak_->template call<Id, R>(*this, depth + 1, a...);
    case Kind::fault: break;
  }
  return fault_->template call<Id, R>(*this, depth + 1, a...);
}

}  // namespace gpuhal::detail::layers
