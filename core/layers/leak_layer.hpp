// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The leak-checking layer: what a context still holds when it is destroyed,
// and what is still alive when the plugin shuts down, listed object by
// object (allocations with their sizes, streams, events, modules, host
// registrations, IPC mappings, graphs, virtual memory), each with the
// thread that made it and, with the trace layer on too, the number of the
// traced call that made it (the trace's "call" argument).
//
// Every object still alive at context_destroy is reported: the core releases
// what it made before it destroys a context, so what is left is something a
// program or a plugin lost (Context::reset() with arrays still alive is the
// one deliberate case: reported at warn level, not counted). With GPUHAL_LEAK_CHECK=fail
// a process that leaked exits with status 1 (the report is on stderr).
//
// Thread safety: the book is; the counters are atomics.
#pragma once

#include <atomic>
#include <string>

#include "log.hpp"
#include "object_book.hpp"

namespace gpuhal::detail::layers {

// Set by Context::reset() around its context_destroy: what the context still
// holds then is the arrays a program kept across the reset on purpose (their
// handles refuse every use afterwards), reported at warn level and not
// counted as leaks.
class ResetScope {
 public:
  ResetScope();
  ~ResetScope();
  ResetScope(const ResetScope &) = delete;
  ResetScope &operator=(const ResetScope &) = delete;
  static bool active();
};

class LeakLayer {
 public:
  LeakLayer(bool fail_on_leaks, const std::string &backend, const Logger &logger)
      : fail_(fail_on_leaks), backend_(backend), logger_(logger) {}

  template <EntryId Id, class R, class Chain, class... A>
  R call(Chain &chain, size_t depth, A... a) {
    if constexpr (Id == EntryId::context_destroy) report_context(bits_of(a)...);
    if constexpr (std::is_same_v<R, gpuhal_status_t>) {
      auto taken = book_.before<Id>(a...);
      const R status = chain.template invoke<Id, R>(depth, a...);
      book_.after<Id>(status, std::move(taken), a...);
      return status;
    } else {
      return chain.template invoke<Id, R>(depth, a...);
    }
  }

  // At the plugin's shutdown: every object still alive.
  void report_shutdown();
  uint64_t leaks() const { return leaks_.load(); }

 private:
  void report_context(uint64_t context);
  void report(const std::string &when, const std::vector<ObjectRecord> &alive, bool counted = true);

  ObjectBook book_;
  bool fail_;
  std::string backend_;
  Logger logger_;
  std::atomic<uint64_t> leaks_{0};
};

}  // namespace gpuhal::detail::layers
