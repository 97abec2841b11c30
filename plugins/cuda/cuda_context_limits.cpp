// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend's context limits (ABI 1.11): cuCtxSetLimit and
// cuCtxGetLimit on the context's primary context. The driver's rules stand
// (cuda.h): the printf FIFO's size must be set before any kernel that uses
// printf is launched in the context (CUDA_ERROR_INVALID_VALUE after it,
// which becomes an error saying so), and a new stack size waits for the
// context's work. The driver may round a value; context_get_limit reads
// back what it kept.
#include "cuda_entries.hpp"

#include <string>

#include "cuda_context.hpp"

namespace gpuhal::cuda {
namespace {

CUlimit cu_limit(uint32_t limit) {
  return limit == GPUHAL_LIMIT_PRINTF_BUFFER_BYTES ? CU_LIMIT_PRINTF_FIFO_SIZE : CU_LIMIT_STACK_SIZE;
}

}  // namespace

gpuhal_status_t context_set_limit(gpuhal_context_t ctx, uint32_t limit, uint64_t value) {
  return in_context(ctx, "context_set_limit", [&](CudaContext *) -> gpuhal_status_t {
    if (!drv().cuCtxSetLimit) return fail(GPUHAL_ERROR_NOT_SUPPORTED, "context_set_limit: this driver has no cuCtxSetLimit");
    const CUresult r = drv().cuCtxSetLimit(cu_limit(limit), size_t(value));
    if (r == CUDA_SUCCESS) return GPUHAL_SUCCESS;
    if (r == CUDA_ERROR_INVALID_VALUE && limit == GPUHAL_LIMIT_PRINTF_BUFFER_BYTES)
      return fail(GPUHAL_ERROR_INVALID_VALUE,
                  "context_set_limit: the printf buffer's size cannot change once a kernel that uses gpuhal_printf "
                  "has been launched in this context (cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE): "
                  "CUDA_ERROR_INVALID_VALUE); set it first, or after Context::reset");
    return drv().error(r, "cuCtxSetLimit");
  });
}

gpuhal_status_t context_get_limit(gpuhal_context_t ctx, uint32_t limit, uint64_t *out) {
  return in_context(ctx, "context_get_limit", [&](CudaContext *) -> gpuhal_status_t {
    size_t value = 0;
    if (const gpuhal_status_t st = cu_call(drv().cuCtxGetLimit, "cuCtxGetLimit", &value, cu_limit(limit));
        st != GPUHAL_SUCCESS)
      return st;
    *out = uint64_t(value);
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::cuda
