// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend's transfers: cuMemcpy* and cuMemsetD8, with pageable
// host-to-device copies of kStageMinBytes and more staged through the
// plugin's pinned chunks (cuda_staging.hpp).
#include <algorithm>
#include <mutex>
#include <string>

#include "cuda_context.hpp"
#include "cuda_entries.hpp"
#include "cuda_staging.hpp"
#include "cuda_thread_rules.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {

gpuhal_status_t memcpy_sync(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                            uint64_t bytes) {
  return in_context(ctx, "memcpy_sync", [&](CudaContext *c) -> gpuhal_status_t {
    if (bytes == 0) return GPUHAL_SUCCESS;
    switch (kind) {
      case GPUHAL_COPY_HOST_TO_DEVICE: {
        const void *host = reinterpret_cast<const void *>(uintptr_t(src));
        if (bytes >= kStageMinBytes && !is_pinned(c, host, size_t(bytes))) {
          // Staged on the legacy default stream (where cuMemcpyHtoD is ordered), then waited for.
          if (const gpuhal_status_t st = staged_h2d(c, dst, host, size_t(bytes), api::stream_legacy());
              st != GPUHAL_SUCCESS)
            return st;
          if (const gpuhal_status_t call_st =
                  cu_call(drv().cuStreamSynchronize, "cuStreamSynchronize", api::stream_legacy());
              call_st != GPUHAL_SUCCESS)
            return call_st;
          return GPUHAL_SUCCESS;
        }
        if (const gpuhal_status_t call_st = cu_call(drv().cuMemcpyHtoD, "cuMemcpyHtoD", dst, host, size_t(bytes));
            call_st != GPUHAL_SUCCESS)
          return call_st;
        return GPUHAL_SUCCESS;
      }
      case GPUHAL_COPY_DEVICE_TO_HOST:
        if (const gpuhal_status_t call_st = cu_call(drv().cuMemcpyDtoH, "cuMemcpyDtoH",
                                                    reinterpret_cast<void *>(uintptr_t(dst)), src, size_t(bytes));
            call_st != GPUHAL_SUCCESS)
          return call_st;
        return GPUHAL_SUCCESS;
      case GPUHAL_COPY_DEVICE_TO_DEVICE:
        if (const gpuhal_status_t call_st = cu_call(drv().cuMemcpyDtoD, "cuMemcpyDtoD", dst, src, size_t(bytes));
            call_st != GPUHAL_SUCCESS)
          return call_st;
        return GPUHAL_SUCCESS;
      default:
        return fail(GPUHAL_ERROR_INVALID_VALUE, "memcpy_sync: unknown copy kind " + std::to_string(kind));
    }
  });
}

gpuhal_status_t memcpy_async(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                             uint64_t bytes, gpuhal_stream_t stream) {
  return in_context(ctx, "memcpy_async", [&](CudaContext *c) -> gpuhal_status_t {
    if (bytes == 0) return GPUHAL_SUCCESS;
    const CUstream s = native(stream);
    switch (kind) {
      case GPUHAL_COPY_HOST_TO_DEVICE: {
        const void *host = reinterpret_cast<const void *>(uintptr_t(src));
        if (bytes >= kStageMinBytes && !is_pinned(c, host, size_t(bytes)))
          return guard("memcpy_async", [&] { return staged_h2d(c, dst, host, size_t(bytes), s); });
        if (const gpuhal_status_t call_st =
                cu_call(drv().cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync", dst, host, size_t(bytes), s);
            call_st != GPUHAL_SUCCESS)
          return call_st;
        return GPUHAL_SUCCESS;
      }
      case GPUHAL_COPY_DEVICE_TO_HOST:
        if (const gpuhal_status_t call_st = cu_call(drv().cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync",
                                                    reinterpret_cast<void *>(uintptr_t(dst)), src, size_t(bytes), s);
            call_st != GPUHAL_SUCCESS)
          return call_st;
        return GPUHAL_SUCCESS;
      case GPUHAL_COPY_DEVICE_TO_DEVICE:
        if (const gpuhal_status_t call_st =
                cu_call(drv().cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync", dst, src, size_t(bytes), s);
            call_st != GPUHAL_SUCCESS)
          return call_st;
        return GPUHAL_SUCCESS;
      default:
        return fail(GPUHAL_ERROR_INVALID_VALUE, "memcpy_async: unknown copy kind " + std::to_string(kind));
    }
  });
}

gpuhal_status_t memset_sync(gpuhal_context_t ctx, gpuhal_deviceptr_t dst, uint8_t value, uint64_t bytes) {
  return in_context(ctx, "memset_sync", [&](CudaContext *) -> gpuhal_status_t {
    if (bytes == 0) return GPUHAL_SUCCESS;
    if (const gpuhal_status_t call_st = cu_call(drv().cuMemsetD8, "cuMemsetD8", dst, value, size_t(bytes));
        call_st != GPUHAL_SUCCESS)
      return call_st;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t memset_async(gpuhal_context_t ctx, gpuhal_deviceptr_t dst, uint8_t value, uint64_t bytes,
                             gpuhal_stream_t stream) {
  return in_context(ctx, "memset_async", [&](CudaContext *) -> gpuhal_status_t {
    if (bytes == 0) return GPUHAL_SUCCESS;
    if (const gpuhal_status_t call_st =
            cu_call(drv().cuMemsetD8Async, "cuMemsetD8Async", dst, value, size_t(bytes), native(stream));
        call_st != GPUHAL_SUCCESS)
      return call_st;
    return GPUHAL_SUCCESS;
  });
}

}  // namespace gpuhal::cuda
