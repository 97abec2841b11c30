// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa backend's pinned, mapped and registered host memory
// (hsa_pinned_memory.cpp): a registered range's bytes and the address
// the GPU sees it at.
#pragma once

#include <cstdint>

namespace gpuhal::hsa {

struct Registration {
  uint64_t bytes = 0;
  void *agent_ptr = nullptr;
  bool locked = false;  // hsa_amd_memory_lock (else hsa_memory_register)
};

}  // namespace gpuhal::hsa
