// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa backend's devices (hsa_device.cpp): the GPU agents found at init,
// what was learnt of each, and the CPU agent with its pools.
#pragma once

#include <cstdint>
#include <string>

#include "gpuhal/plugin.h"
#include "hsa_runtime.hpp"

namespace gpuhal::hsa {

// A GPU agent the plugin reports as a device, and what was learnt of it at
// init.
struct Device {
  hsa_agent_t agent{};
  std::string isa_name;                 // HSA_AGENT_INFO_NAME: "gfx90a"
  hsa_amd_memory_pool_t device_pool{};  // coarse-grained global: device arrays
  uint64_t device_pool_size = 0;
  uint64_t lds_size = 0;  // the group segment pool's size
  uint32_t max_workgroup_size = 0;
  uint16_t max_workgroup_dim[3] = {0, 0, 0};
  uint32_t wavefront_size = 0;
  uint32_t max_waves_per_cu = 0;  // AMD's extension (0: the runtime does not say)
  uint32_t simds_per_cu = 0;      // AMD's extension (0: the runtime does not say)
  uint32_t queue_max_size = 0;
  gpuhal_device_properties_t props{};
};

// The host side: the CPU agent and its pools.
struct HostAgent {
  hsa_agent_t agent{};
  hsa_amd_memory_pool_t system_pool{};   // fine-grained: pinned and mapped host memory, staging
  hsa_amd_memory_pool_t kernarg_pool{};  // fine-grained with KERNARG_INIT: kernel arguments
  bool has_kernarg_pool = false;
};

HostAgent &host_agent();
// Finds the GPU agents and the CPU agent's pools (init, with the runtime
// started); the devices found replace the plugin's.
gpuhal_status_t discover();
// The device of an ordinal, or nullptr.
Device *device_at(int32_t ordinal);

}  // namespace gpuhal::hsa
