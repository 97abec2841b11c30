// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Strided transfers as one rectangle (the plugin's memcpy_rect entries, ABI
// 1.10, Capability::RectCopies): a copy between two layouts of the same
// shape whose elements form, on both sides, at most three dimensions of
// rows of contiguous bytes (a sub-tile, a column block, a box of a 3-D
// array), moved by the driver's copy engine without staging the span.
//
// Thread safety: plan_rect is a pure function; submit_rect follows the
// plugin's entries (any thread). Errors: submit_rect throws gpuhal::Error
// naming the entry (the context's check).
#pragma once

#include <cstdint>
#include <optional>

#include "context_impl.hpp"
#include "gpuhal/layout.hpp"
#include "gpuhal/plugin.h"

namespace gpuhal::detail {

// One rectangle: `depth` slices of `height` rows of `width_bytes` bytes,
// each side with its pitches, starting at each side's element 0.
struct RectPlan {
  uint64_t width_bytes = 0, height = 1, depth = 1;
  uint64_t dst_pitch = 0, dst_slice_pitch = 0, src_pitch = 0, src_slice_pitch = 0;
};

// The rectangle that copies every element of `shape` from strides `src` to
// strides `dst` (bytes, itemsize `itemsize`), or nothing when there is none:
// an axis of extent above 1 with a stride that is not positive on either
// side, no axis contiguous on both sides (a transpose), more than three
// dimensions left after merging the axes that are contiguous with each
// other on both sides, or rows or slices that would overlap. A shape with
// no elements has no plan either (nothing to copy).
std::optional<RectPlan> plan_rect(const Shape &shape, const Strides &dst, const Strides &src, int64_t itemsize);

// Submits `plan` in direction `kind` (GPUHAL_COPY_*) from the address of
// src's element 0 to dst's: synchronously when `stream` is null, else on it
// (the caller validated the stream and keeps host memory valid until the
// copy ran). The backend must have Capability::RectCopies.
void submit_rect(const ContextImpl &ctx, uint32_t kind, const RectPlan &plan, gpuhal_deviceptr_t dst,
                 gpuhal_deviceptr_t src, gpuhal_stream_t stream);

}  // namespace gpuhal::detail
