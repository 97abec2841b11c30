// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend's transfers: cuMemcpy* and cuMemsetD8, with pageable
// host-to-device copies of kStageMinBytes and more staged through the
// plugin's pinned chunks (cuda_staging.hpp), and host ranges cut where the
// driver wants them cut (host_pieces).
#include <algorithm>
#include <mutex>
#include <string>

#include "copy_rect.hpp"
#include "cuda_context.hpp"
#include "cuda_stream.hpp"
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

// ---- rectangular copies ---------------------------------------------------------------------

namespace {

// The host side of a rectangular copy, or null for D2D.
const void *host_side(uint32_t kind, const gpuhal_copy_rect_t &r) {
  if (kind == GPUHAL_COPY_HOST_TO_DEVICE) return reinterpret_cast<const void *>(uintptr_t(r.src));
  if (kind == GPUHAL_COPY_DEVICE_TO_HOST) return reinterpret_cast<const void *>(uintptr_t(r.dst));
  return nullptr;
}

// Whether one cuMemcpy3D can take slices [0, r.depth) of r: every pitch it
// is given at most CU_DEVICE_ATTRIBUTE_MAX_PITCH (cuda.h: "cuMemcpy3D()
// returns an error if any pitch is greater than the maximum allowed"), and,
// with several slices, each side's slice pitch a whole number of rows (the
// driver's slice pitch is srcPitch * srcHeight).
bool one_3d_copy(const CudaContext *c, const gpuhal_copy_rect_t &r) {
  if (r.dst_pitch > c->max_pitch || r.src_pitch > c->max_pitch || r.dst_pitch == 0 || r.src_pitch == 0) return false;
  return r.depth == 1 || (r.dst_slice_pitch % r.dst_pitch == 0 && r.src_slice_pitch % r.src_pitch == 0);
}

// One cuMemcpy3D(Async) of r (one_3d_copy held): host sides as
// CU_MEMORYTYPE_HOST, device sides as CU_MEMORYTYPE_DEVICE, no offsets.
gpuhal_status_t copy_3d(uint32_t kind, const gpuhal_copy_rect_t &r, const CUstream *stream) {
  CUDA_MEMCPY3D p{};
  p.srcMemoryType = kind == GPUHAL_COPY_HOST_TO_DEVICE ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  p.dstMemoryType = kind == GPUHAL_COPY_DEVICE_TO_HOST ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  if (p.srcMemoryType == CU_MEMORYTYPE_HOST)
    p.srcHost = reinterpret_cast<const void *>(uintptr_t(r.src));
  else
    p.srcDevice = r.src;
  if (p.dstMemoryType == CU_MEMORYTYPE_HOST)
    p.dstHost = reinterpret_cast<void *>(uintptr_t(r.dst));
  else
    p.dstDevice = r.dst;
  p.srcPitch = size_t(r.src_pitch);
  p.dstPitch = size_t(r.dst_pitch);
  // "srcHeight ... may be 0 if Depth==1"
  p.srcHeight = r.depth > 1 ? size_t(r.src_slice_pitch / r.src_pitch) : 0;
  p.dstHeight = r.depth > 1 ? size_t(r.dst_slice_pitch / r.dst_pitch) : 0;
  p.WidthInBytes = size_t(r.width_bytes);
  p.Height = size_t(r.height);
  p.Depth = size_t(r.depth);
  return stream ? cu_call(drv().cuMemcpy3DAsync, "cuMemcpy3DAsync", &p, *stream)
                : cu_call(drv().cuMemcpy3D, "cuMemcpy3D", &p);
}

// A region with one row per slice is the same region with its slices as
// rows (fewer pitches for the driver to refuse).
gpuhal_status_t copy_rect(CudaContext *c, const char *entry, uint32_t kind, gpuhal_copy_rect_t r,
                          const CUstream *stream) {
  if (r.height == 1) {
    r.height = r.depth;
    r.dst_pitch = r.dst_slice_pitch;
    r.src_pitch = r.src_slice_pitch;
    r.depth = 1;
  }
  if (r.height == 1) return copy(c, entry, kind, r.dst, r.src, r.width_bytes, stream);
  // The host region must be one piece for the driver (all pinned or all
  // pageable: host_pieces), and pageable memory is refused in a capture.
  const void *host = host_side(kind, r);
  const uint64_t host_extent = kind == GPUHAL_COPY_HOST_TO_DEVICE ? plugin::src_extent(r) : plugin::dst_extent(r);
  std::vector<HostPiece> pieces;
  if (host) {
    pieces = host_pieces(c, host, size_t(host_extent));
    if (pieces.size() == 1)
      if (const gpuhal_status_t st = refuse_pageable_in_capture(c, pieces[0], stream); st != GPUHAL_SUCCESS) return st;
  }
  if (!host || pieces.size() == 1) {
    if (one_3d_copy(c, r)) return copy_3d(kind, r, stream);
    // Slices the driver cannot step: one 3-D copy per slice.
    gpuhal_copy_rect_t slice = r;
    slice.depth = 1;
    if (one_3d_copy(c, slice)) {
      for (uint64_t z = 0; z < r.depth; ++z) {
        slice.dst = r.dst + z * r.dst_slice_pitch;
        slice.src = r.src + z * r.src_slice_pitch;
        if (const gpuhal_status_t st = copy_3d(kind, slice, stream); st != GPUHAL_SUCCESS) return st;
      }
      return GPUHAL_SUCCESS;
    }
  }
  // Pitches past the driver's limit, or a host region partly pinned: row by
  // row, each row as memcpy_sync / memcpy_async would copy it.
  return plugin::for_each_row(r, [&](gpuhal_deviceptr_t d, gpuhal_deviceptr_t s) {
    return copy(c, entry, kind, d, s, r.width_bytes, stream);
  });
}

}  // namespace

gpuhal_status_t memcpy_rect_sync(gpuhal_context_t ctx, uint32_t kind, const gpuhal_copy_rect_t *rect) {
  return in_context(ctx, "memcpy_rect_sync", [&](CudaContext *c) -> gpuhal_status_t {
    gpuhal_copy_rect_t r;
    if (const gpuhal_status_t st = plugin::read_copy_rect("memcpy_rect_sync", kind, rect, &r); st != GPUHAL_SUCCESS)
      return st;
    if (plugin::rect_empty(r)) return GPUHAL_SUCCESS;
    return copy_rect(c, "memcpy_rect_sync", kind, r, nullptr);
  });
}

gpuhal_status_t memcpy_rect_async(gpuhal_context_t ctx, uint32_t kind, const gpuhal_copy_rect_t *rect,
                                  gpuhal_stream_t stream) {
  return in_context(ctx, "memcpy_rect_async", [&](CudaContext *c) -> gpuhal_status_t {
    gpuhal_copy_rect_t r;
    if (const gpuhal_status_t st = plugin::read_copy_rect("memcpy_rect_async", kind, rect, &r); st != GPUHAL_SUCCESS)
      return st;
    if (plugin::rect_empty(r)) return GPUHAL_SUCCESS;
    const CUstream s = native(stream);
    return copy_rect(c, "memcpy_rect_async", kind, r, &s);
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
