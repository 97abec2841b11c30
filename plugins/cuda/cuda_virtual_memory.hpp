// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend's virtual memory (cuda_virtual_memory.cpp): physical
// allocations behind their handles; a context's reservations and mappings
// live in CudaContext (vm_mu).
#pragma once

#include <cstdint>

#include "cuda_driver.hpp"

namespace gpuhal::cuda {

struct CudaContext;

// Physical memory of cuMemCreate behind a gpuhal_physical_memory_t.
struct CudaPhysical {
  CUmemGenericAllocationHandle handle = 0;
  uint64_t bytes = 0;
};

// Gives back every mapping, physical allocation and reservation of c
// (context_destroy, after it synchronised).
void release_virtual_memory(CudaContext *c);

}  // namespace gpuhal::cuda
