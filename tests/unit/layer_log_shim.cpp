// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The core's Logger for the layers compiled into the unit tests
// (test_layers.cpp drives core/layers/ white-box): libgpuhal's own Logger
// is internal to it, so the tests' copy of the layers logs here, into a list
// the tests read (and to stderr, as the core's does).
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "log.hpp"

namespace test {
std::mutex g_layer_log_mu;
std::vector<std::string> g_layer_log;
}  // namespace test

namespace gpuhal::detail {

void Logger::write(LogLevel level, const std::string &message) const {
  if (!enabled(level)) return;
  std::lock_guard<std::mutex> lock(test::g_layer_log_mu);
  test::g_layer_log.push_back(message);
  std::fprintf(stderr, "gpuhal (layers under test): %s\n", message.c_str());
}

}  // namespace gpuhal::detail
