// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The core's logger: one line per message on stderr, prefixed "gpuhal".
// The level comes from Config (GPUHAL_LOG). Thread-safe.
#pragma once

#include <string>

#include "gpuhal/config.hpp"

namespace gpuhal::detail {

class Logger {
 public:
  explicit Logger(LogLevel level = LogLevel::Warn) : level_(level) {}
  bool enabled(LogLevel level) const { return level <= level_; }
  void write(LogLevel level, const std::string &message) const;
  LogLevel level() const { return level_; }

 private:
  LogLevel level_;
};

}  // namespace gpuhal::detail
