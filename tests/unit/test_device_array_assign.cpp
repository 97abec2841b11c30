// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// DeviceArray::assign and fill (NumPy's d[...] = value) on the host backend:
// broadcasting, any layout, overlapping memory, streams, and bad inputs that
// leave the array as it was.
#include <complex>
#include <numeric>

#include "test_support.hpp"

using namespace gpuhal;

namespace {

std::vector<int32_t> iota32(size_t n, int32_t start = 0) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

DeviceArray device_iota(const Context &ctx, const Shape &shape, int32_t start = 0) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int32_t> host = iota32(size_t(n), start);
  return to_device(ctx, HostView::of(host, shape));
}

std::vector<int32_t> contents(const DeviceArray &a) {
  return a.copy_to_host().to_vector<int32_t>();
}

}  // namespace

TEST_CASE("fill sets every element of a strided view and nothing else", "[array][assign]") {
  Context ctx = test::host_context();
  DeviceArray a = device_iota(ctx, {3, 4});
  a.view({Slice(), Slice({}, {}, 2)}).fill(-7);  // a[:, ::2] = -7
  CHECK(contents(a) == std::vector<int32_t>{-7, 1, -7, 3, -7, 5, -7, 7, -7, 9, -7, 11});
  a[1].fill(int64_t(100));  // a[1] = 100 (an int64 value that fits int32)
  CHECK(contents(a) == std::vector<int32_t>{-7, 1, -7, 3, 100, 100, 100, 100, -7, 9, -7, 11});
  // A value whose bytes are all alike on a contiguous array: the driver's memset.
  a.fill(0);
  CHECK(contents(a) == std::vector<int32_t>(12, 0));
}

TEST_CASE("fill converts the value to the array's dtype", "[array][assign]") {
  Context ctx = test::host_context();
  DeviceArray f = device_array(ctx, {5}, dtypes::float64, {16});  // every other double of a buffer
  f.fill(3);
  CHECK(f.copy_to_host().to_vector<double>() == std::vector<double>(5, 3.0));
  DeviceArray c = device_array(ctx, {2, 3}, dtypes::complex128);
  c.T().fill(2.5f);  // 16-byte elements: both words written
  for (auto v : c.copy_to_host().to_vector<std::complex<double>>()) CHECK(v == std::complex<double>(2.5, 0));
  DeviceArray b = device_array(ctx, {4}, dtypes::bool_);
  b.fill(7);
  CHECK(b.copy_to_host().to_vector<bool>() == std::vector<bool>(4, true));
}

TEST_CASE("assign broadcasts a row and a column as NumPy does", "[array][assign]") {
  Context ctx = test::host_context();
  DeviceArray a = device_array(ctx, {3, 4}, dtypes::int32);
  std::vector<int32_t> row = {10, 20, 30, 40};
  a.assign(HostView::of(row));  // a[...] = row: every row
  CHECK(contents(a) == std::vector<int32_t>{10, 20, 30, 40, 10, 20, 30, 40, 10, 20, 30, 40});
  std::vector<int32_t> column = {1, 2, 3};
  a.assign(HostView::of(column, {3, 1}));  // a[...] = column[:, None]
  CHECK(contents(a) == std::vector<int32_t>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
  // Into a transposed (non-contiguous) view from a device source, with a
  // leading axis of length 1 dropped.
  DeviceArray src = device_iota(ctx, {1, 4, 3}, 100);
  a.T().assign(src);  // a.T[...] = src: a[j, i] = src[0, i, j]
  CHECK(contents(a) == std::vector<int32_t>{100, 103, 106, 109, 101, 104, 107, 110, 102, 105, 108, 111});
}

TEST_CASE("assign between overlapping views reads before it writes", "[array][assign]") {
  Context ctx = test::host_context();
  DeviceArray a = device_iota(ctx, {8});
  a.view({Slice(1, {})}).assign(a.view({Slice({}, -1)}));  // a[1:] = a[:-1]
  CHECK(contents(a) == std::vector<int32_t>{0, 0, 1, 2, 3, 4, 5, 6});
  DeviceArray b = device_iota(ctx, {6});
  b.assign(b.view({Slice({}, {}, -1)}));  // b[...] = b[::-1]
  CHECK(contents(b) == std::vector<int32_t>{5, 4, 3, 2, 1, 0});
}

TEST_CASE("assign handles arrays of more axes than one launch takes", "[array][assign]") {
  Context ctx = test::host_context();
  const Shape shape(10, 2);  // 1024 elements in 10 axes
  DeviceArray src = device_iota(ctx, shape);
  DeviceArray dst = device_array(ctx, shape, dtypes::int32);
  // Reversed axes: the strides do not merge, so the copy needs all ten.
  DeviceArray dst_t = dst.T();
  dst_t.assign(src.T());
  CHECK(contents(dst) == iota32(1024));
  // And through a layout where source and destination disagree.
  dst.assign(src.T().copy_to_host().view());
  const std::vector<int32_t> got = contents(dst), want = src.T().copy_to_host().to_vector<int32_t>();
  CHECK(got == want);
}

TEST_CASE("assign and fill are ordered on a stream", "[array][assign]") {
  Context ctx = test::host_context();
  Stream s = ctx.create_stream();
  DeviceArray a = device_array(ctx, {64, 64}, dtypes::int32);
  DeviceArray b = device_array(ctx, {64, 64}, dtypes::int32);
  a.fill(1, s);
  a.view({Slice({}, {}, 2)}).fill(2, s);
  b.assign(a.T(), s);
  s.synchronize();
  const auto got = contents(b);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) REQUIRE(got[size_t(i * 64 + j)] == (j % 2 == 0 ? 2 : 1));
}

TEST_CASE("assign and fill refuse bad inputs and leave the array unchanged", "[array][assign][errors]") {
  Context ctx = test::host_context();
  DeviceArray a = device_iota(ctx, {3, 4});
  const std::vector<int32_t> before = contents(a);
  REQUIRE_GPUHAL_ERROR(a.assign(device_array(ctx, {3, 4}, dtypes::float32)), Status::ERROR_INVALID_DTYPE,
                       "source dtype float32 differs from int32");
  REQUIRE_GPUHAL_ERROR(a.assign(device_iota(ctx, {3, 3})), Status::ERROR_INCOMPATIBLE,
                       "could not broadcast input array from shape (3,3) into shape (3,4) (axis 1: 3 into 4)");
  REQUIRE_GPUHAL_ERROR(a.assign(device_iota(ctx, {2, 3, 4})), Status::ERROR_INCOMPATIBLE,
                       "from shape (2,3,4) into shape (3,4)");
  // NumPy drops the source's leading 1s beyond the destination's rank, and
  // prints the shape it broadcast (numpy: "from shape (3,3) into shape (3,4)").
  REQUIRE_GPUHAL_ERROR(a.assign(device_iota(ctx, {1, 1, 3, 3})), Status::ERROR_INCOMPATIBLE,
                       ": could not broadcast input array from shape (3,3) into shape (3,4) (axis 1");
  REQUIRE_GPUHAL_ERROR(device_iota(ctx, {35}).assign(device_iota(ctx, {1, 2, 3})), Status::ERROR_INCOMPATIBLE,
                       ": could not broadcast input array from shape (2,3) into shape (35,)");
  std::vector<double> doubles(12, 1.0);
  REQUIRE_GPUHAL_ERROR(a.assign(HostView::of(doubles, {3, 4})), Status::ERROR_INVALID_DTYPE, "float64 differs");
  REQUIRE_GPUHAL_ERROR(a.fill(1.5), Status::ERROR_INVALID_VALUE, "a float64 value for an int32 array");
  REQUIRE_GPUHAL_ERROR(a.fill(int64_t(1) << 40), Status::ERROR_INVALID_VALUE, "does not fit int32");
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {2}, dtypes::uint8).fill(-1), Status::ERROR_INVALID_VALUE,
                       "the value -1 does not fit uint8");
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {2}, dtypes::float16).fill(1.0), Status::ERROR_INVALID_DTYPE,
                       "view(dtypes::uint16)");
  REQUIRE_GPUHAL_ERROR(DeviceArray().fill(1), Status::ERROR_INVALID_HANDLE, "empty DeviceArray");
  REQUIRE_GPUHAL_ERROR(a.assign(DeviceArray()), Status::ERROR_INVALID_HANDLE, "empty DeviceArray");
  CHECK(contents(a) == before);
  // A zero-size destination does nothing, but shapes are still checked.
  DeviceArray empty = a.view({Slice(0, 0)});
  empty.fill(5);
  empty.assign(device_iota(ctx, {4}));
  REQUIRE_GPUHAL_ERROR(empty.assign(device_iota(ctx, {3})), Status::ERROR_INCOMPATIBLE, "into shape (0,4)");
  CHECK(contents(a) == before);
}

namespace {
struct Particle {
  float x, y, z;
  int32_t id;
};
}  // namespace

TEST_CASE("record arrays move, slice and assign as whole structs", "[array][records]") {
  Context ctx = test::host_context();
  CHECK(DType::record(16).name() == "V16");
  CHECK(DType::record(16).typestr() == "|V16");
  CHECK(DType::parse("|V12") == DType::record(12));
  CHECK(DType::parse("V3").itemsize() == 3);
  std::vector<Particle> ps(6);
  for (int i = 0; i < 6; ++i) ps[size_t(i)] = {float(i), float(2 * i), float(3 * i), i};
  DeviceArray d = to_device(ctx, HostView::of_records(ps, {2, 3}));
  CHECK(d.dtype() == DType::record(sizeof(Particle)));
  CHECK(d.strides() == Strides{48, 16});
  // d[:, ::-1] = d.T-like reversal through a device-side assignment of records.
  DeviceArray r = device_array(ctx, {2, 3}, DType::record(sizeof(Particle)));
  r.assign(d.view({Slice(), Slice({}, {}, -1)}));
  std::vector<Particle> back(6);
  r.copy_to_host(HostView::of_records(back, {2, 3}));
  for (int row = 0; row < 2; ++row)
    for (int col = 0; col < 3; ++col) {
      const Particle &p = back[size_t(row * 3 + col)];
      CHECK(p.id == row * 3 + (2 - col));
      CHECK(p.z == float(3 * p.id));
    }
  // What records have no meaning for is refused by name.
  REQUIRE_GPUHAL_ERROR(r.fill(1), Status::ERROR_INVALID_DTYPE, "V16");
  REQUIRE_GPUHAL_ERROR(DType::record(0), Status::ERROR_INVALID_DTYPE, "1 to 65535");
  REQUIRE_GPUHAL_ERROR(DType::record(70000), Status::ERROR_INVALID_DTYPE, "1 to 65535");
  REQUIRE_GPUHAL_ERROR(DType::parse("V0"), Status::ERROR_INVALID_DTYPE, "1 to 65535");
  REQUIRE_GPUHAL_ERROR(ModuleOptions().constant("c", HostView::of_records(ps)), Status::ERROR_INVALID_DTYPE,
                       "no C type");
  REQUIRE_GPUHAL_ERROR(to_dlpack(d), Status::ERROR_INVALID_DTYPE, "no DLPack type");
  CHECK(ctx.pending_deallocations() == 0);  // nothing exported, nothing left behind
}
