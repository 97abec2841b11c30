// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Rectangular transfers: sub-tiles of 2-D arrays and boxes of 3-D arrays
// moved in every direction, synchronously and on a stream, element for
// element, with every byte outside the region left as it was. A plugin
// with Capability::RectCopies moves them with memcpy_rect_*; one without
// goes through the core's staged paths; both must give these results.
#include <cstring>

#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

// A C-order int32 array of `shape` whose element i is i * 7 + seed.
std::vector<int32_t> numbered(const Shape &shape, int32_t seed) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = int32_t(i) * 7 + seed;
  return v;
}

// The elements of box `lo`..`hi` (per axis, hi exclusive) of the C-order
// array `all` of `shape`, in C order.
std::vector<int32_t> box_of(const std::vector<int32_t> &all, const Shape &shape, const Shape &lo, const Shape &hi) {
  std::vector<int32_t> out;
  const bool three = shape.size() == 3;
  const int64_t rows = three ? shape[1] : shape[0], cols = shape.back();
  for (int64_t z = three ? lo[0] : 0; z < (three ? hi[0] : 1); ++z)
    for (int64_t y = lo[three ? 1 : 0]; y < hi[three ? 1 : 0]; ++y)
      for (int64_t x = lo.back(); x < hi.back(); ++x) out.push_back(all[size_t((z * rows + y) * cols + x)]);
  return out;
}

std::vector<Index> slices(const Shape &lo, const Shape &hi) {
  std::vector<Index> idx;
  for (size_t i = 0; i < lo.size(); ++i) idx.push_back(Slice(lo[i], hi[i]));
  return idx;
}

Shape extents(const Shape &lo, const Shape &hi) {
  Shape s;
  for (size_t i = 0; i < lo.size(); ++i) s.push_back(hi[i] - lo[i]);
  return s;
}

// The strides of box lo..hi of a C-order int32 array of `shape`, and the
// offset in elements of its first element.
Strides box_strides(const Shape &shape) {
  Strides s(shape.size());
  int64_t step = 4;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = step;
    step *= shape[i];
  }
  return s;
}
int64_t box_offset(const Shape &shape, const Shape &lo) {
  int64_t off = 0, step = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    off += lo[i] * step;
    step *= shape[i];
  }
  return off;
}

void compare(const std::vector<int32_t> &got, const std::vector<int32_t> &want, const std::string &what) {
  expect(got.size() == want.size(),
         what + ": " + std::to_string(got.size()) + " elements, expected " + std::to_string(want.size()));
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) {
      expect(false, what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
                        std::to_string(want[i]));
      return;
    }
}

// One box of `shape` in each direction, synchronously or on `stream`.
void box_every_direction(Env &env, const Shape &shape, const Shape &lo, const Shape &hi, const Stream *stream) {
  const std::string where =
      std::string(stream ? "on a stream" : "synchronous") + ", box of " + std::to_string(shape.size()) + "-D array";
  auto sync = [&] {
    if (stream) stream->synchronize();
  };
  const std::vector<int32_t> all = numbered(shape, 3), want = box_of(all, shape, lo, hi);
  // D2H: the box's view read back, into a fresh array and into a host
  // buffer of the view's strides whose bytes between elements must stay.
  DeviceArray d = to_device(env.ctx, HostView::of(all, shape));
  DeviceArray box = d.view(slices(lo, hi));
  HostArray fresh = stream ? box.copy_to_host(*stream) : box.copy_to_host();
  sync();
  compare(fresh.to_vector<int32_t>(), want, where + ": D2H copy_to_host()");
  std::vector<int32_t> host(all.size(), -1);
  HostView host_box = HostView::of(host.data() + box_offset(shape, lo), extents(lo, hi), box_strides(shape));
  if (stream)
    box.copy_to_host(host_box, *stream);
  else
    box.copy_to_host(host_box);
  sync();
  std::vector<int32_t> want_host(all.size(), -1);
  {
    std::vector<int32_t> mark(all.size(), 0);
    for (size_t i = 0; i < mark.size(); ++i) mark[i] = int32_t(i);
    for (int32_t i : box_of(mark, shape, lo, hi)) want_host[size_t(i)] = all[size_t(i)];
  }
  compare(host, want_host, where + ": D2H into a strided host view (bytes between its elements must stay -1)");
  // H2D: the same box of a host array into a dense device array.
  DeviceArray dense = device_array(env.ctx, extents(lo, hi), dtypes::int32);
  HostView src_box = HostView::of(all.data() + box_offset(shape, lo), extents(lo, hi), box_strides(shape));
  if (stream)
    dense.copy_from_host(src_box, *stream);
  else
    dense.copy_from_host(src_box);
  sync();
  compare(dense.copy_to_host().to_vector<int32_t>(), want, where + ": H2D from a strided host view");
  // D2D: the box into the same box of a zeroed array (assign), and into a
  // box elsewhere (copy_from_device); nothing outside changes. A backend
  // with neither rectangular copies nor kernels cannot: refused by name.
  DeviceArray target = device_array(env.ctx, shape, dtypes::int32);
  target.memset(0);
  DeviceArray target_box = target.view(slices(lo, hi));
  const bool contiguous_box = box.layout().is_contiguous();
  if (!contiguous_box && !env.runtime.supports(Capability::RectCopies) && !env.runtime.supports(Capability::Kernels)) {
    expect_error([&] { target_box.assign(box); }, Status::ERROR_NOT_SUPPORTED, "Capability::Kernels",
                 where + ": D2D between boxes without rectangular copies or kernels");
    expect(d.copy_to_host().to_vector<int32_t>() == all, where + ": the source array changed");
    return;
  }
  if (stream)
    target_box.assign(box, *stream);
  else
    target_box.assign(box);
  sync();
  std::vector<int32_t> want_target(all.size(), 0);
  {
    std::vector<int32_t> mark(all.size());
    for (size_t i = 0; i < mark.size(); ++i) mark[i] = int32_t(i);
    for (int32_t i : box_of(mark, shape, lo, hi)) want_target[size_t(i)] = all[size_t(i)];
  }
  compare(target.copy_to_host().to_vector<int32_t>(), want_target, where + ": D2D assign between boxes");
  Shape lo2 = lo, hi2 = hi;
  for (size_t i = 0; i < lo.size(); ++i) {
    const int64_t shift = std::min<int64_t>(lo[i], 1);  // one step towards the origin where there is room
    lo2[i] -= shift;
    hi2[i] -= shift;
  }
  DeviceArray other = device_array(env.ctx, shape, dtypes::int32);
  other.memset(0);
  if (stream)
    other.view(slices(lo2, hi2)).copy_from_device(box, *stream);
  else
    other.view(slices(lo2, hi2)).copy_from_device(box);
  sync();
  const auto got = other.copy_to_host().to_vector<int32_t>();
  compare(box_of(got, shape, lo2, hi2), want, where + ": D2D copy_from_device into a box at another place");
  expect(d.copy_to_host().to_vector<int32_t>() == all, where + ": the source array changed");
}

void rect_2d(Env &env) {
  Stream s = env.ctx.create_stream();
  // A 37x29 tile of a 64x80 array (odd extents and offsets: unaligned rows).
  for (const Stream *stream : {static_cast<const Stream *>(nullptr), static_cast<const Stream *>(&s)})
    box_every_direction(env, {64, 80}, {5, 7}, {42, 36}, stream);
  // Whole rows (a contiguous block) and one row.
  box_every_direction(env, {64, 80}, {10, 0}, {20, 80}, nullptr);
  box_every_direction(env, {64, 80}, {3, 8}, {4, 72}, &s);
}

void rect_3d(Env &env) {
  Stream s = env.ctx.create_stream();
  for (const Stream *stream : {static_cast<const Stream *>(nullptr), static_cast<const Stream *>(&s)}) {
    box_every_direction(env, {12, 10, 16}, {2, 1, 3}, {9, 8, 13}, stream);
    // Whole planes of rows (the middle and inner axes merge).
    box_every_direction(env, {12, 10, 16}, {1, 0, 0}, {5, 10, 16}, stream);
    // One row per slice (a 3-D box that is a 2-D rectangle of slices).
    box_every_direction(env, {12, 10, 16}, {0, 4, 2}, {12, 5, 14}, stream);
  }
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"transfers.rect_2d",
     "a sub-tile of a 2-D array moves H2D, D2H and D2D (sync and on a stream) element for element, "
     "leaving every byte outside it as it was",
     rect_2d},
    {"transfers.rect_3d",
     "boxes of a 3-D array (any box, whole planes, one row per slice) move in every direction, sync "
     "and on a stream, leaving every byte outside them as it was",
     rect_3d},
};

}  // namespace conformance
}  // namespace gpuhal
