// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "leak_layer.hpp"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace gpuhal::detail::layers {
namespace {

// GPUHAL_LEAK_CHECK=fail: the process's exit status becomes 1. Registered
// when the first leak is found, so it runs before the handlers registered
// earlier (the program's own static destructors are skipped: the process
// is failing anyway, and its output is flushed first).
void exit_failing() {
  std::fflush(nullptr);
  ::_exit(1);
}

}  // namespace

thread_local int t_resets = 0;

ResetScope::ResetScope() { ++t_resets; }
ResetScope::~ResetScope() { --t_resets; }
bool ResetScope::active() { return t_resets > 0; }

void LeakLayer::report(const std::string &when, const std::vector<ObjectRecord> &alive, bool counted) {
  if (alive.empty()) return;
  std::string text = "leak check (" + backend_ + "): " + std::to_string(alive.size()) + " object(s) " + when + ":";
  for (const ObjectRecord &r : alive) text += "\n  " + describe(r);
  logger_.write(counted ? LogLevel::Error : LogLevel::Warn, text);
  if (!counted) return;
  leaks_ += alive.size();
  if (fail_) {
    static std::once_flag registered;
    std::call_once(registered, [] { std::atexit(exit_failing); });
  }
}

void LeakLayer::report_context(uint64_t context) {
  char ctx[32];
  std::snprintf(ctx, sizeof ctx, "0x%" PRIx64, context);
  if (ResetScope::active())
    report(std::string("kept across the reset of context ") + ctx + " (Context::reset: context_destroy frees them)",
           book_.alive(context), false);
  else
    report(std::string("still alive when context ") + ctx + " was destroyed (context_destroy frees them)",
           book_.alive(context));
}

void LeakLayer::report_shutdown() {
  report("still alive at the plugin's shutdown (never released, their contexts never destroyed)", book_.alive(0));
}

}  // namespace gpuhal::detail::layers
