// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "log.hpp"

#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <utility>

#include "fork_guard.hpp"
#include "gpuhal/log.hpp"

namespace gpuhal {
namespace {

const char *const kLevelNames[] = {"error", "warn", "info", "debug"};

// The installed handler. Each message takes a reference under the lock and
// calls it outside: a handler may log again, and a slow one must not hold
// every other thread's logging on the lock. Never destroyed (messages may be
// logged from static destructors and late plugin threads).
struct HandlerSlot {
  detail::ProcessMutex mu;
  std::shared_ptr<const LogHandler> handler;
};

HandlerSlot &slot() {
  static auto *s = new HandlerSlot();
  return *s;
}

void to_stderr(LogLevel level, const std::string &message) {
  // One fprintf per line keeps lines from different threads whole.
  std::fprintf(stderr, "gpuhal %s: %s\n", kLevelNames[static_cast<int>(level)], message.c_str());
}

}  // namespace

void set_log_handler(LogHandler handler) {
  auto next = handler ? std::make_shared<const LogHandler>(std::move(handler)) : nullptr;
  HandlerSlot &s = slot();
  std::shared_ptr<const LogHandler> old;
  {
    std::lock_guard<detail::ProcessMutex> lock(s.mu);
    old = std::move(s.handler);
    s.handler = std::move(next);
  }
  // `old` is released here, or by the last thread still inside it.
}

namespace detail {

void Logger::write(LogLevel level, const std::string &message) const {
  if (!enabled(level)) return;
  std::shared_ptr<const LogHandler> handler;
  {
    HandlerSlot &s = slot();
    std::lock_guard<ProcessMutex> lock(s.mu);
    handler = s.handler;
  }
  if (!handler) return to_stderr(level, message);
  try {
    (*handler)(level, message);
  } catch (const std::exception &e) {
    to_stderr(level, message + " (the log handler threw: " + e.what() + ")");
  } catch (...) {
    to_stderr(level, message + " (the log handler threw)");
  }
}

}  // namespace detail
}  // namespace gpuhal
