// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "layer_chain.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <mutex>
#include <utility>

#include "gpuhal/error.hpp"
#include "gpuhal/layers.hpp"

namespace gpuhal::detail::layers {

const LayerInfo kLayers[4] = {
    {"validation", "checks every call's arguments, handle lifetimes and callback rules before the plugin sees it"},
    {"trace", "records every call with its arguments, status and duration (GPUHAL_TRACE_FILE: Chrome trace JSON)"},
    {"leak", "lists what is still alive at context_destroy and at shutdown (GPUHAL_LEAK_CHECK=fail: exit 1)"},
    {"fault", "fails chosen calls (GPUHAL_FAULT=<entry>:<k>[:<status>],...)"},
};

namespace {

std::atomic<LayerChain *> g_slots[LayerChain::kSlots];
std::mutex g_slots_mu;

// This thread's refusal by a layer: which chain refused its last call, and why.
thread_local const LayerChain *t_refused_by = nullptr;
thread_local std::string t_refusal;

// The wrapped entries of slot S: each finds its chain in the slot.
template <size_t S, EntryId Id, class Fn>
struct Wrapper;
template <size_t S, EntryId Id, class R, class... A>
struct Wrapper<S, Id, R (*)(A...)> {
  static R call(A... a) { return g_slots[S].load(std::memory_order_acquire)->template enter<Id, R>(a...); }
};
template <size_t S>
struct LastErrorWrapper {
  static const char *call() { return g_slots[S].load(std::memory_order_acquire)->last_error(); }
};

template <size_t S>
void fill(gpuhal_plugin_table_t *t, const gpuhal_plugin_table_t &next) {
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) \
  if (next.name) t->name = &Wrapper<S, EntryId::name, decltype(t->name)>::call;
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
  t->last_error = &LastErrorWrapper<S>::call;
}

using Filler = void (*)(gpuhal_plugin_table_t *, const gpuhal_plugin_table_t &);
template <size_t... S>
constexpr std::array<Filler, sizeof...(S)> fillers(std::index_sequence<S...>) {
  return {&fill<S>...};
}
constexpr auto kFillers = fillers(std::make_index_sequence<LayerChain::kSlots>{});

}  // namespace

LayerChain::LayerChain(const gpuhal_plugin_table_t &next, const std::string &backend, const Logger &logger)
    : next_(next), backend_(backend), logger_(logger), pid_(::getpid()) {}

std::unique_ptr<LayerChain> LayerChain::create(const gpuhal_plugin_table_t &next, const std::string &backend,
                                               const Config &config, const Logger &logger) {
  std::unique_ptr<LayerChain> chain(new LayerChain(next, backend, logger));
  for (const std::string &name : config.layers) {
    if (name == "validation") {
      chain->validation_ = std::make_unique<ValidationLayer>(chain->next_, logger);
      chain->order_.push_back(Kind::validation);
    } else if (name == "trace") {
      chain->trace_ = std::make_unique<TraceLayer>(backend, config.trace_file, logger);
      chain->order_.push_back(Kind::trace);
    } else if (name == "leak") {
      chain->leak_ = std::make_unique<LeakLayer>(config.leak_check_fail, backend, logger);
      chain->order_.push_back(Kind::leak);
    } else if (name == "fault") {
      chain->fault_ = std::make_unique<FaultLayer>(config.option("GPUHAL_FAULT").value_or(""));
      chain->order_.push_back(Kind::fault);
    } else {
      throw Error(Status::ERROR_INVALID_CONFIG, "GPUHAL_LAYERS: no layer named '" + name + "'");
    }
  }
  std::lock_guard<std::mutex> lock(g_slots_mu);
  for (size_t s = 0; s < kSlots; ++s)
    if (!g_slots[s].load(std::memory_order_relaxed)) {
      chain->slot_ = s;
      chain->table_ = next;
      kFillers[s](&chain->table_, chain->next_);
      g_slots[s].store(chain.get(), std::memory_order_release);
      std::string names;
      for (const std::string &n : config.layers) names += (names.empty() ? "" : ", ") + n;
      logger.write(LogLevel::Debug, "layers over backend '" + backend + "': " + names);
      return chain;
    }
  throw Error(Status::ERROR_INVALID_CONFIG, "GPUHAL_LAYERS: more than " + std::to_string(kSlots) +
                                                " plugins loaded with layers at once (the most a process may have)");
}

LayerChain::~LayerChain() {
  // A plugin whose init failed is never shut down: its trace is made whole here.
  if (trace_ && ::getpid() == pid_) trace_->flush();
  if (slot_ < kSlots) {
    std::lock_guard<std::mutex> lock(g_slots_mu);
    g_slots[slot_].store(nullptr, std::memory_order_release);
  }
}

void LayerChain::begin_call() {
  if (t_refused_by == this) t_refused_by = nullptr;
}

gpuhal_status_t LayerChain::refuse(gpuhal_status_t status, std::string message) {
  t_refused_by = this;
  t_refusal = std::move(message);
  return status;
}

const char *LayerChain::last_error() const {
  if (t_refused_by == this) return t_refusal.c_str();
  return next_.last_error();
}

void LayerChain::after_shutdown() {
  if (::getpid() != pid_) return;  // a child of fork(): its parent reports
  if (leak_) leak_->report_shutdown();
  if (trace_) trace_->flush();
}

}  // namespace gpuhal::detail::layers

namespace gpuhal {

std::vector<LayerDescription> available_layers() {
  std::vector<LayerDescription> out;
  for (const auto &l : detail::layers::kLayers) out.push_back({l.name, l.description});
  return out;
}

}  // namespace gpuhal
