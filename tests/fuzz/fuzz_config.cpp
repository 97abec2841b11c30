// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Environment configuration parsing: any GPUHAL_* values.
#include <map>

#include "fuzz_input.hpp"
#include "gpuhal/config.hpp"
#include "gpuhal/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz::Input in(data, size);
  static const char *const kNames[] = {"GPUHAL_BACKEND",
                                       "GPUHAL_PLUGIN_PATH",
                                       "GPUHAL_LOG",
                                       "GPUHAL_MAX_PENDING_DEALLOCS_COUNT",
                                       "GPUHAL_MAX_PENDING_DEALLOCS_RATIO",
                                       "GPUHAL_CUDA_DRIVER",
                                       "GPUHAL_HOST_DEVICES",
                                       "GPUHAL_OTHER"};
  std::map<std::string, std::string> env;
  while (!in.empty() && env.size() < 8) env[kNames[in.small(0, 7)]] = in.text(24);
  std::vector<std::string> names;
  for (const auto &kv : env) names.push_back(kv.first);
  try {
    gpuhal::Config c = gpuhal::Config::parse(
        names,
        [&](const std::string &n) -> std::optional<std::string> {
          auto it = env.find(n);
          if (it == env.end()) return std::nullopt;
          return it->second;
        },
        in.take<uint8_t>() & 1);
    for (const auto &dir : c.plugin_path)
      if (dir.empty() || dir[0] != '/') __builtin_trap();  // only absolute directories survive
  } catch (const gpuhal::Error &) {
  }
  return 0;
}
