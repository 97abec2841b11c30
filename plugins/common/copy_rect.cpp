// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "copy_rect.hpp"

#include <string>

#include "plugin_support.hpp"

namespace gpuhal::plugin {

namespace {

// One side's rows and slices (plugin.h): rows may not overlap each other,
// nor slices, and the extent must fit in 64 bits.
gpuhal_status_t check_side(const char *entry, const char *side, const gpuhal_copy_rect_t &r, uint64_t pitch,
                           uint64_t slice_pitch) {
  const std::string who = std::string(entry) + ": " + side;
  if (r.height > 1 && pitch < r.width_bytes)
    return fail(GPUHAL_ERROR_INVALID_VALUE, who + "_pitch " + std::to_string(pitch) + " is less than width_bytes " +
                                                std::to_string(r.width_bytes) + " (its rows would overlap)");
  uint64_t rows = 0, slices = 0, last_row = 0, last_slice = 0;
  if (__builtin_mul_overflow(r.height - 1, pitch, &rows) || __builtin_add_overflow(rows, r.width_bytes, &last_row) ||
      __builtin_mul_overflow(r.depth - 1, slice_pitch, &slices) ||
      __builtin_add_overflow(slices, last_row, &last_slice))
    return fail(GPUHAL_ERROR_INVALID_VALUE, who + ": the region's extent passes 2^64 bytes");
  if (r.depth > 1 && slice_pitch < last_row)
    return fail(GPUHAL_ERROR_INVALID_VALUE, who + "_slice_pitch " + std::to_string(slice_pitch) +
                                                " is less than a slice's extent " + std::to_string(last_row) +
                                                " (its slices would overlap)");
  return GPUHAL_SUCCESS;
}

}  // namespace

gpuhal_status_t read_copy_rect(const char *entry, uint32_t kind, const gpuhal_copy_rect_t *in,
                               gpuhal_copy_rect_t *out) {
  if (kind != GPUHAL_COPY_HOST_TO_DEVICE && kind != GPUHAL_COPY_DEVICE_TO_HOST && kind != GPUHAL_COPY_DEVICE_TO_DEVICE)
    return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": unknown copy kind " + std::to_string(kind));
  if (!in) return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": rect is NULL");
  if (in->struct_size < sizeof(gpuhal_copy_rect_t))
    return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": rect's struct_size " +
                                                std::to_string(in->struct_size) + " is shorter than gpuhal_copy_rect_t (" +
                                                std::to_string(sizeof(gpuhal_copy_rect_t)) + " bytes)");
  *out = *in;
  if (rect_empty(*out)) return GPUHAL_SUCCESS;
  if (!out->dst || !out->src) return fail(GPUHAL_ERROR_INVALID_VALUE, std::string(entry) + ": null dst or src");
  if (const gpuhal_status_t st = check_side(entry, "dst", *out, out->dst_pitch, out->dst_slice_pitch);
      st != GPUHAL_SUCCESS)
    return st;
  return check_side(entry, "src", *out, out->src_pitch, out->src_slice_pitch);
}

}  // namespace gpuhal::plugin
