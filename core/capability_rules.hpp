// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Which capabilities a loaded backend has: the rules Runtime::supports
// answers by, shared with the default selection (Config::required).
#pragma once

#include <string>
#include <vector>

#include "backend.hpp"
#include "gpuhal/capability.hpp"

namespace gpuhal::detail {

// What a capability may need to know of every device of the backend.
struct DeviceFacts {
  bool all_map_host_memory = true;      // DeviceProperties::can_map_host_memory
  bool all_recover_from_faults = true;  // DeviceProperties::recovers_from_faults
};

// Whether the backend behind `t`, with devices of these facts, has `c`.
bool backend_supports(const Backend &t, const DeviceFacts &devices, Capability c);

// The facts of the backend's devices, read from the plugin (all false when
// a device's properties cannot be read).
DeviceFacts device_facts(const Backend &t, int device_count);

// The capabilities of `required` that the loaded plugin lacks.
std::vector<Capability> missing_capabilities(const PluginLibrary &library, const std::vector<Capability> &required);

// "kernels, graphs": names for messages.
std::string capability_list(const std::vector<Capability> &capabilities);

}  // namespace gpuhal::detail
