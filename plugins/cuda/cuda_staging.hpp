// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Pageable host-to-device copies staged through the plugin's own pinned
// chunks (performance target P1).
//
// The driver copies pageable memory through small staging buffers of its
// own, well below pinned bandwidth. For copies of at least kStageMinBytes
// from memory this context neither pinned nor registered, the plugin copies
// the source chunk by chunk into pinned buffers (each chunk's memcpy split
// over a few threads) and queues a chunk's DMA as soon as it is filled, so
// the CPU fills chunk i + 1 while the copy engine moves chunk i. A chunk is
// refilled only after the event recorded behind its DMA completed. The call
// returns once the whole source was read: the caller may reuse it at once,
// as after the driver's own pageable copies.
//
// Thread safety: one staging area per context, used under its mutex (staged
// copies of one context run one at a time; their DMAs overlap other work).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda_context.hpp"

namespace gpuhal::cuda {

constexpr size_t kStageMinBytes = size_t(1) << 20;
constexpr size_t kStageChunkBytes = size_t(8) << 20;
constexpr size_t kStageSlots = 3;

// True when [p, p + n) lies in host memory pinned or registered in c.
bool is_pinned(CudaContext *c, const void *p, size_t n);
// Queues the copy on `stream` through the staging area (made on first use).
gpuhal_status_t staged_h2d(CudaContext *c, CUdeviceptr dst, const void *src, size_t bytes, CUstream stream);
// Frees the staging area (context_destroy, after the context synchronised).
void release_staging(CudaContext *c);

}  // namespace gpuhal::cuda
