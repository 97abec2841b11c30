// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend's transfers: cuMemcpy* and cuMemsetD8, with pageable
// host-to-device copies of kStageMinBytes and more staged through the
// plugin's pinned chunks (cuda_staging.hpp), and host ranges cut where the
// driver wants them cut (host_pieces).
#include <algorithm>
#include <mutex>
#include <string>

#include "cuda_context.hpp"
#include "cuda_entries.hpp"
#include "cuda_staging.hpp"
#include "cuda_thread_rules.hpp"
#include "plugin_support.hpp"

namespace gpuhal::cuda {

namespace {

// Pageable host memory in a captured copy: the driver would stage it (and so
// would the plugin), copying the data once, at capture, where a graph must
// read it at every launch. Refused (plugin.h): pinned or registered memory
// only. Asked of the driver only while a capture of c runs.
gpuhal_status_t refuse_pageable_in_capture(CudaContext *c, const HostPiece &p, const CUstream *stream) {
  if (p.pinned || !stream || c->active_captures.load(std::memory_order_acquire) == 0) return GPUHAL_SUCCESS;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (drv().cuStreamIsCapturing(*stream, &status) != CUDA_SUCCESS || status == CU_STREAM_CAPTURE_STATUS_NONE)
    return GPUHAL_SUCCESS;
  return fail(GPUHAL_ERROR_CAPTURE_UNSUPPORTED,
              "memcpy_async: pageable host memory in a captured copy (a graph must read the host data at every "
              "launch; the driver would copy it once): use pinned or registered host memory");
}

// One host-to-device piece (host_pieces). A pageable piece of
// kStageMinBytes or more goes through the staging area; `stream` null means
// synchronous: ordered on the legacy default stream, as cuMemcpyHtoD is, and
// waited for.
gpuhal_status_t h2d_piece(CudaContext *c, CUdeviceptr dst, const void *host, const HostPiece &p,
                          const CUstream *stream) {
  const void *src = static_cast<const char *>(host) + p.offset;
  if (const gpuhal_status_t st = refuse_pageable_in_capture(c, p, stream); st != GPUHAL_SUCCESS) return st;
  if (!p.pinned && p.bytes >= kStageMinBytes) {
    const CUstream s = stream ? *stream : api::stream_legacy();
    if (const gpuhal_status_t st = staged_h2d(c, dst + p.offset, src, p.bytes, s); st != GPUHAL_SUCCESS)
      return st;
    return stream ? GPUHAL_SUCCESS : cu_call(drv().cuStreamSynchronize, "cuStreamSynchronize", s);
  }
  return stream ? cu_call(drv().cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync", dst + p.offset, src, p.bytes, *stream)
                : cu_call(drv().cuMemcpyHtoD, "cuMemcpyHtoD", dst + p.offset, src, p.bytes);
}

// One device-to-host piece; `stream` null means synchronous.
gpuhal_status_t d2h_piece(CudaContext *c, void *host, CUdeviceptr src, const HostPiece &p, const CUstream *stream) {
  void *dst = static_cast<char *>(host) + p.offset;
  if (const gpuhal_status_t st = refuse_pageable_in_capture(c, p, stream); st != GPUHAL_SUCCESS) return st;
  return stream ? cu_call(drv().cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync", dst, src + p.offset, p.bytes, *stream)
                : cu_call(drv().cuMemcpyDtoH, "cuMemcpyDtoH", dst, src + p.offset, p.bytes);
}

// Any copy: the host side is cut into pieces the driver accepts, each its
// own call, in address order (a failure stops there and is returned).
gpuhal_status_t copy(CudaContext *c, const char *entry, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                     uint64_t bytes, const CUstream *stream) {
  if (bytes == 0) return GPUHAL_SUCCESS;
  switch (kind) {
    case GPUHAL_COPY_HOST_TO_DEVICE: {
      const void *host = reinterpret_cast<const void *>(uintptr_t(src));
      for (const HostPiece &p : host_pieces(c, host, size_t(bytes)))
        if (const gpuhal_status_t st = h2d_piece(c, dst, host, p, stream); st != GPUHAL_SUCCESS) return st;
      return GPUHAL_SUCCESS;
    }
    case GPUHAL_COPY_DEVICE_TO_HOST: {
      void *host = reinterpret_cast<void *>(uintptr_t(dst));
      for (const HostPiece &p : host_pieces(c, host, size_t(bytes)))
        if (const gpuhal_status_t st = d2h_piece(c, host, src, p, stream); st != GPUHAL_SUCCESS) return st;
      return GPUHAL_SUCCESS;
    }
    case GPUHAL_COPY_DEVICE_TO_DEVICE:
      return stream ? cu_call(drv().cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync", dst, src, size_t(bytes), *stream)
                    : cu_call(drv().cuMemcpyDtoD, "cuMemcpyDtoD", dst, src, size_t(bytes));
    default:
      return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": unknown copy kind " + std::to_string(kind));
  }
}

}  // namespace

gpuhal_status_t memcpy_sync(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                            uint64_t bytes) {
  return in_context(ctx, "memcpy_sync",
                    [&](CudaContext *c) { return copy(c, "memcpy_sync", kind, dst, src, bytes, nullptr); });
}

gpuhal_status_t memcpy_async(gpuhal_context_t ctx, uint32_t kind, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src,
                             uint64_t bytes, gpuhal_stream_t stream) {
  return in_context(ctx, "memcpy_async", [&](CudaContext *c) {
    const CUstream s = native(stream);
    return copy(c, "memcpy_async", kind, dst, src, bytes, &s);
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
