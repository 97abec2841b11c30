// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Where gpuhal's log messages go.
//
// By default every message at or above a runtime's level (Config::log_level,
// GPUHAL_LOG) is one line on stderr, "gpuhal <level>: <message>". An
// application with its own logging installs a handler instead; messages of
// the core and of every plugin (which log through the core) go to it.
#pragma once

#include <functional>
#include <string>

#include "gpuhal/config.hpp"

namespace gpuhal {

// Receives one message (no trailing newline). Called from any thread that
// logs: application threads, stream workers, the plugins' own threads, and
// concurrently from several of them; it must be thread-safe. It may call
// gpuhal (a message it causes is logged through it again: beware of loops),
// must not block for long (the logging thread waits), and an exception it
// throws is caught: that message then goes to stderr, with the exception's
// text.
using LogHandler = std::function<void(LogLevel level, const std::string &message)>;

// Installs `handler` for the whole process (replacing any earlier one); an
// empty handler restores stderr. Which messages are produced is still each
// runtime's level. Thread-safe: a message being logged while the handler is
// replaced goes to either the old or the new one, and the old one is
// destroyed once no thread is inside it.
void set_log_handler(LogHandler handler);

}  // namespace gpuhal
