// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "log.hpp"

#include <cstdio>

namespace gpuhal::detail {

void Logger::write(LogLevel level, const std::string &message) const {
  if (!enabled(level)) return;
  static const char *const kNames[] = {"error", "warn", "info", "debug"};
  // One fprintf per line keeps lines from different threads whole.
  std::fprintf(stderr, "gpuhal %s: %s\n", kNames[static_cast<int>(level)], message.c_str());
}

}  // namespace gpuhal::detail
