// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend devices: GPUHAL_HOST_DEVICES of them, each a share of the
// machine's memory (or GPUHAL_HOST_MEMORY_LIMIT's), counted as it is
// allocated. Plugin-wide; made by init (host_plugin.hpp).
#pragma once

#include <atomic>
#include <cstdint>

namespace gpuhal::host {

struct HostDevice {
  int ordinal = 0;
  uint64_t total_memory = 0;
  uint64_t limit = 0;  // 0: no limit beyond the machine's memory
  std::atomic<uint64_t> used{0};
};

// The device of an ordinal (nullptr when there is none, or no plugin state).
HostDevice *device_at(int32_t ordinal);
// The machine's memory, all of it and what is free now (0: unknown).
uint64_t physical_memory();
uint64_t available_memory();

}  // namespace gpuhal::host
