// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// plan_rect (rect_copy.hpp): pure, so that the unit tests compile it alone.
#include <algorithm>
#include <vector>

#include "rect_copy.hpp"

namespace gpuhal::detail {

namespace {

struct Axis {
  int64_t extent, dst, src;
};

// Whether a side's rows and slices do not overlap (plugin.h's rule).
bool side_fits(const RectPlan &p, uint64_t pitch, uint64_t slice_pitch) {
  if (p.height > 1 && pitch < p.width_bytes) return false;
  return p.depth == 1 || slice_pitch >= (p.height - 1) * pitch + p.width_bytes;
}

bool fits(const RectPlan &p) {
  return side_fits(p, p.dst_pitch, p.dst_slice_pitch) && side_fits(p, p.src_pitch, p.src_slice_pitch);
}

}  // namespace

std::optional<RectPlan> plan_rect(const Shape &shape, const Strides &dst, const Strides &src, int64_t itemsize) {
  if (shape.size() != dst.size() || shape.size() != src.size() || itemsize <= 0) return std::nullopt;
  std::vector<Axis> axes;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return std::nullopt;
    if (shape[i] == 1) continue;  // no element steps along it
    if (dst[i] <= 0 || src[i] <= 0) return std::nullopt;
    axes.push_back({shape[i], dst[i], src[i]});
  }
  // Innermost first (by the destination's strides), then fold each axis
  // into the one inside it where both sides continue it without a gap.
  std::sort(axes.begin(), axes.end(), [](const Axis &a, const Axis &b) { return a.dst < b.dst; });
  std::vector<Axis> merged;
  Axis element{1, itemsize, itemsize};  // the element itself: contiguous on both sides
  merged.push_back(element);
  for (const Axis &a : axes) {
    Axis &inner = merged.back();
    if (a.dst == inner.dst * inner.extent && a.src == inner.src * inner.extent)
      inner.extent *= a.extent;
    else
      merged.push_back(a);
  }
  // Rows of single elements (a column, a transpose) are left to the
  // staged paths: a copy engine moves them a few bytes at a time.
  if (merged.size() > 3 || (!axes.empty() && merged[0].extent == 1)) return std::nullopt;
  RectPlan p;
  p.width_bytes = uint64_t(merged[0].extent * itemsize);
  if (merged.size() > 1) {
    p.height = uint64_t(merged[1].extent);
    p.dst_pitch = uint64_t(merged[1].dst);
    p.src_pitch = uint64_t(merged[1].src);
  }
  if (merged.size() > 2) {
    p.depth = uint64_t(merged[2].extent);
    p.dst_slice_pitch = uint64_t(merged[2].dst);
    p.src_slice_pitch = uint64_t(merged[2].src);
  }
  if (fits(p)) return p;
  if (merged.size() == 3) {  // the source may step its outer axes the other way round
    std::swap(p.height, p.depth);
    std::swap(p.dst_pitch, p.dst_slice_pitch);
    std::swap(p.src_pitch, p.src_slice_pitch);
    if (fits(p)) return p;
  }
  return std::nullopt;
}

}  // namespace gpuhal::detail
