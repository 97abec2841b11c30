// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend's kernels (cuda_kernel.cpp): a handle's function and the
// limits launches check, read once from the driver.
#pragma once

#include <atomic>
#include <mutex>

#include "cuda_driver.hpp"
#include "gpuhal/plugin.h"

namespace gpuhal::cuda {

struct CudaContext;

// A kernel handle: the function and what launches need to know about it,
// read from the driver once when the kernel is looked up (no driver query
// on the launch path).
struct CudaKernel {
  CUfunction function = nullptr;
  CUmodule module = nullptr;
  int max_threads = 0;                 // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
  int static_shared = 0;               // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is one value per function
  // and the last cuFuncSetAttribute wins: raised only under opt_in_mu, to the
  // largest size any launch needed, so that a slower thread's smaller value
  // never lands after a larger one. dynamic_opt_in is what the driver holds.
  std::mutex opt_in_mu;
  std::atomic<int> dynamic_opt_in{0};
};

// Lets k take `dynamic` bytes of dynamic shared memory when static and
// dynamic together pass the device's default per-block limit (the driver
// wants an opt-in above it); raised only, under k->opt_in_mu.
gpuhal_status_t opt_in_dynamic_shared(const CudaContext *c, CudaKernel *k, uint32_t dynamic);
// The kernel of c behind `handle`, or nullptr.
CudaKernel *kernel_of(CudaContext *c, gpuhal_kernel_t handle);

}  // namespace gpuhal::cuda
