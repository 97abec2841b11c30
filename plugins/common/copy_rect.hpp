// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Rectangular copies (plugin.h, ABI 1.10): reading and checking a
// gpuhal_copy_rect_t as every plugin must, the extent of one side's region,
// and the region's rows one by one (the lowering every plugin falls back to
// where its copy engine refuses a rectangle).
//
// Thread safety: pure functions. Errors: read_copy_rect records the message
// for the calling thread (plugin::fail) and returns the status.
#pragma once

#include <cstdint>

#include "gpuhal/plugin.h"

namespace gpuhal::plugin {

// The bytes from one side's base to one past its region's last byte:
// (depth - 1) * slice_pitch + (height - 1) * pitch + width_bytes. Only for
// a region read_copy_rect accepted (it checked that this does not overflow).
inline uint64_t rect_extent(const gpuhal_copy_rect_t &r, uint64_t pitch, uint64_t slice_pitch) {
  return (r.depth - 1) * slice_pitch + (r.height - 1) * pitch + r.width_bytes;
}
inline uint64_t dst_extent(const gpuhal_copy_rect_t &r) { return rect_extent(r, r.dst_pitch, r.dst_slice_pitch); }
inline uint64_t src_extent(const gpuhal_copy_rect_t &r) { return rect_extent(r, r.src_pitch, r.src_slice_pitch); }

// True when the region has no bytes (a zero width, height or depth).
inline bool rect_empty(const gpuhal_copy_rect_t &r) { return r.width_bytes == 0 || r.height == 0 || r.depth == 0; }

// Copies *in into *out after plugin.h's checks: kind is a GPUHAL_COPY_*
// kind, the struct is whole (struct_size), and, for a non-empty region,
// neither address is 0, no side's rows or slices overlap and no extent
// passes 2^64. GPUHAL_ERROR_INVALID_VALUE naming `entry` and the member
// otherwise.
gpuhal_status_t read_copy_rect(const char *entry, uint32_t kind, const gpuhal_copy_rect_t *in,
                               gpuhal_copy_rect_t *out);

// Calls row(dst_address, src_address) for every row of the region, slice
// by slice, row by row (each row width_bytes long); stops at and returns
// the first status that is not GPUHAL_SUCCESS.
template <class Row>
gpuhal_status_t for_each_row(const gpuhal_copy_rect_t &r, Row &&row) {
  for (uint64_t z = 0; z < r.depth; ++z)
    for (uint64_t y = 0; y < r.height; ++y)
      if (const gpuhal_status_t st = row(r.dst + z * r.dst_slice_pitch + y * r.dst_pitch,
                                         r.src + z * r.src_slice_pitch + y * r.src_pitch);
          st != GPUHAL_SUCCESS)
        return st;
  return GPUHAL_SUCCESS;
}

}  // namespace gpuhal::plugin
