// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's kernel attributes and occupancy (plugin.h, ABI 1.7):
// cuFuncGetAttribute and cuOccupancyMaxActiveBlocksPerMultiprocessor.
//
// Dynamic shared memory: launch() opts a kernel in above the device's
// default per-block limit (48 KiB) on demand, so what a launch may add is
// the opt-in limit less the static part, and an occupancy question about
// such a size opts in first, as the launch would (the driver answers 0
// blocks for a size above the kernel's current attribute).
#include <algorithm>
#include <cstring>

#include "cuda_context.hpp"
#include "cuda_entries.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {

using plugin::fail;

namespace {

gpuhal_status_t function_attribute(CUfunction f, CUfunction_attribute attribute, uint32_t *out) {
  int value = 0;
  if (const gpuhal_status_t call_st = cu_call(drv().cuFuncGetAttribute, "cuFuncGetAttribute", &value, attribute, f);
      call_st != GPUHAL_SUCCESS)
    return call_st;
  *out = uint32_t(std::max(value, 0));
  return GPUHAL_SUCCESS;
}

}  // namespace

gpuhal_status_t kernel_attributes(gpuhal_context_t ctx, gpuhal_kernel_t kernel, gpuhal_kernel_attributes_t *out) {
  if (!out || out->struct_size < 2 * sizeof(uint32_t))
    return fail(GPUHAL_ERROR_INVALID_VALUE, "kernel_attributes: null or short output");
  return in_context(ctx, "kernel_attributes", [&](CudaContext *c) -> gpuhal_status_t {
    CudaKernel *k = kernel_of(c, kernel);
    if (!k) return fail(GPUHAL_ERROR_INVALID_HANDLE, "kernel_attributes: not a kernel of this context");
    gpuhal_kernel_attributes_t a{};
    a.abi_version = GPUHAL_ABI_VERSION;
    a.struct_size = sizeof(a);
    const std::pair<CUfunction_attribute, uint32_t *> reads[] = {
        {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &a.max_threads_per_block},
        {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &a.static_shared_bytes},
        {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &a.local_bytes_per_thread},
        {CU_FUNC_ATTRIBUTE_NUM_REGS, &a.registers_per_thread},
    };
    for (const auto &read : reads)
      if (const gpuhal_status_t st = function_attribute(k->function, read.first, read.second); st != GPUHAL_SUCCESS)
        return st;
    a.max_dynamic_shared_bytes = uint32_t(std::max<int64_t>(int64_t(c->shared_optin) - a.static_shared_bytes, 0));
    int warp = 0;
    if (const gpuhal_status_t call_st = cu_call(drv().cuDeviceGetAttribute, "cuDeviceGetAttribute", &warp,
                                                CU_DEVICE_ATTRIBUTE_WARP_SIZE, c->device);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    a.preferred_block_multiple = uint32_t(std::max(warp, 1));
    plugin::write_versioned(out, a);
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t kernel_max_active_blocks(gpuhal_context_t ctx, gpuhal_kernel_t kernel, uint32_t block_threads,
                                         uint32_t dynamic_shared_bytes, uint32_t *out) {
  if (!out) return fail(GPUHAL_ERROR_INVALID_VALUE, "kernel_max_active_blocks: null output");
  if (block_threads == 0) return fail(GPUHAL_ERROR_INVALID_VALUE, "kernel_max_active_blocks: a block of 0 threads");
  return in_context(ctx, "kernel_max_active_blocks", [&](CudaContext *c) -> gpuhal_status_t {
    CudaKernel *k = kernel_of(c, kernel);
    if (!k) return fail(GPUHAL_ERROR_INVALID_HANDLE, "kernel_max_active_blocks: not a kernel of this context");
    // What launch() refuses cannot be resident at all.
    if ((k->max_threads > 0 && block_threads > uint32_t(k->max_threads)) ||
        uint64_t(k->static_shared) + dynamic_shared_bytes > uint64_t(c->shared_optin)) {
      *out = 0;
      return GPUHAL_SUCCESS;
    }
    if (const gpuhal_status_t st = opt_in_dynamic_shared(c, k, dynamic_shared_bytes); st != GPUHAL_SUCCESS) return st;
    int blocks = 0;
    if (const gpuhal_status_t call_st =
            cu_call(drv().cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor",
                    &blocks, k->function, int(block_threads), size_t(dynamic_shared_bytes));
        call_st != GPUHAL_SUCCESS)
      return call_st;
    *out = uint32_t(std::max(blocks, 0));
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::cuda
