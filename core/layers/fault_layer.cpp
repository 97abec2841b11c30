// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "fault_layer.hpp"

#include "gpuhal/error.hpp"

namespace gpuhal::detail::layers {

FaultLayer::FaultLayer(const std::string &spec) {
  std::string error;
  if (!rules_.set(spec, &error)) throw Error(Status::ERROR_INVALID_CONFIG, "GPUHAL_FAULT: " + error);
  // A rule for an entry the table does not have would never fire: a typo.
  size_t start = 0;
  while (start < spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    const std::string entry = spec.substr(start, spec.find(':', start) - start);
    bool known = false;
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) known = known || entry == #name;
#include "gpuhal/plugin_entries.def"
#undef GPUHAL_PLUGIN_ENTRY
    if (!known)
      throw Error(Status::ERROR_INVALID_CONFIG,
                  "GPUHAL_FAULT: '" + entry + "' is not an entry of the plugin table (gpuhal/plugin_entries.def)");
    start = end + 1;
  }
}

long FaultLayer::fallback_status(const char *entry) {
  const bool allocating = std::strstr(entry, "alloc") != nullptr || std::strcmp(entry, "stream_create") == 0 ||
                          std::strcmp(entry, "event_create") == 0 || std::strcmp(entry, "context_create") == 0;
  return allocating ? GPUHAL_ERROR_OUT_OF_MEMORY : GPUHAL_ERROR_UNKNOWN;
}

}  // namespace gpuhal::detail::layers
