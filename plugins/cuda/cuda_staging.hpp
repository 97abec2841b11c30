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
#include <vector>

#include "cuda_context.hpp"

namespace gpuhal::cuda {

// Where the staging beats the driver's own path depends on the host's
// memcpy speed; gpuhal-bench-cuda's pageable sweep (docs/hardware-runs.md,
// 2026-11-26) measured staged / driver at 1, 2, 4, 8, 16 and 64 MiB:
// H100 machine 0.86, 0.88, 1.24, 1.28, 1.68, 3.1x; H200 machine (4 MiB and
// up) 0.65, 0.89, 1.18, 2.1x. From 16 MiB it won on both.
constexpr size_t kStageMinBytes = size_t(16) << 20;
constexpr size_t kStageChunkBytes = size_t(8) << 20;
constexpr size_t kStageSlots = 3;

// A piece of a host range that one driver copy may take: `pinned` when it
// lies in one range this context pinned or registered, else it touches none.
struct HostPiece {
  size_t offset;
  size_t bytes;
  bool pinned;
};
// [p, p + n) cut at the edges of the pinned and registered ranges it
// touches, in address order; most ranges are one piece. The driver refuses
// (CUDA_ERROR_INVALID_VALUE) a copy whose host range is partly registered or
// spans two registrations, as overlapping user registrations make them (the
// core registers only the bytes no earlier registration covers), so each
// piece is copied on its own.
std::vector<HostPiece> host_pieces(CudaContext *c, const void *p, size_t n);
// Queues the copy on `stream` through the staging area (made on first use).
gpuhal_status_t staged_h2d(CudaContext *c, CUdeviceptr dst, const void *src, size_t bytes, CUstream stream);
// Frees the staging area (context_destroy, after the context synchronised).
void release_staging(CudaContext *c);

}  // namespace gpuhal::cuda
