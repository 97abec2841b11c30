// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The tracing layer: every call with its arguments, status and duration.
//
// Where: with GPUHAL_TRACE_FILE (Config::trace_file) set, a Chrome
// trace-event JSON file (one complete event per call, on a track per thread,
// and again on a track per stream for the calls that take one), which
// Perfetto and chrome://tracing open; otherwise one log line per call,
// written whatever GPUHAL_LOG says. Calls are numbered from 1 per process;
// the number is the event's "call" argument, and the leak layer names the
// call that made a leaked object by it.
//
// Vendor timelines: on the cuda backend, where libnvToolsExt.so.1 loads, each
// call is also an NVTX range ("gpuhal:<entry>"); on the hsa backend the same
// through roctx (libroctx64.so). Nothing is loaded on the host backend.
//
// Thread safety: the file writer and the numbering are shared by every chain
// of the process (a mutex, an atomic); the rest is per call.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "layer_entries.hpp"
#include "log.hpp"
#include "object_book.hpp"

namespace gpuhal::detail::layers {

class TraceFile;

// One finished call, as the trace writes it.
struct TracedCall {
  const char *entry = nullptr;
  uint64_t number = 0;
  double start_us = 0;     // on the process's steady clock
  double duration_us = 0;
  std::string args_json;   // "\"ctx\":\"0x..\",\"bytes\":\"4096\""
  std::string args_text;   // "ctx=0x.., bytes=4096"
  uint64_t stream = 0;     // the call's stream argument, when it has one
  bool has_stream = false;
  bool has_status = false;
  gpuhal_status_t status = GPUHAL_SUCCESS;
  std::string message;     // a failed call's last_error()
};

class TraceLayer {
 public:
  // Throws gpuhal::Error (ERROR_INVALID_CONFIG) when `file` cannot be
  // written.
  TraceLayer(const std::string &backend, const std::string &file, const Logger &logger);
  ~TraceLayer();

  template <EntryId Id, class R, class Chain, class... A>
  R call(Chain &chain, size_t depth, A... a) {
    TracedCall c;
    c.entry = EntryTraits<Id>::name;
    c.number = next_number();
    describe_args<Id>(&c, std::index_sequence_for<A...>{}, a...);
    const uint64_t outer = current_traced_call();
    set_current_traced_call(c.number);
    range_push(c.entry);
    const auto t0 = std::chrono::steady_clock::now();
    if constexpr (std::is_void_v<R>) {
      chain.template invoke<Id, R>(depth, a...);
      finish(&c, t0);
      set_current_traced_call(outer);
    } else {
      const R result = chain.template invoke<Id, R>(depth, a...);
      if constexpr (std::is_same_v<R, gpuhal_status_t>) {
        c.has_status = true;
        c.status = result;
        if (result != GPUHAL_SUCCESS && result != GPUHAL_NOT_READY) c.message = chain.last_error();
      }
      finish(&c, t0);
      set_current_traced_call(outer);
      return result;
    }
  }

  // The file is made whole (valid JSON) at the plugin's shutdown.
  void flush();

 private:
  template <EntryId Id, class... A, size_t... I>
  static void describe_args([[maybe_unused]] TracedCall *c, std::index_sequence<I...>, A... a) {
    (describe_arg(c, I, parameter_name(entry_params<Id>, I), a), ...);
  }
  template <class T>
  static void describe_arg(TracedCall *c, size_t index, std::string_view name, T value) {
    const std::string text = arg_text(name, value);
    if (index) {
      c->args_json += ",";
      c->args_text += ", ";
    }
    c->args_json += "\"" + std::string(name) + "\":";
    c->args_json += text[0] == '"' ? json_quoted(text.substr(1, text.size() - 2)) : "\"" + text + "\"";
    c->args_text += std::string(name) + "=" + text;
    if constexpr (std::is_same_v<T, gpuhal_stream_t>) {
      c->stream = bits_of(value);
      c->has_stream = true;
    }
  }
  static std::string json_quoted(const std::string &s);
  static uint64_t next_number();
  void finish(TracedCall *c, std::chrono::steady_clock::time_point t0);
  void range_push(const char *entry);

  std::string backend_;
  Logger logger_;
  std::shared_ptr<TraceFile> file_;  // null: trace to the log
  // NVTX / roctx, when loaded.
  void *vendor_library_ = nullptr;
  int (*range_push_)(const char *) = nullptr;
  int (*range_pop_)() = nullptr;
};

}  // namespace gpuhal::detail::layers
