// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// DeviceArray on the host backend: factories, transfers, views, errors.
#include <cstring>
#include <future>
#include <numeric>

#include "test_support.hpp"

using namespace gpuhal;

namespace {
std::vector<double> iota(size_t n, double start = 0) {
  std::vector<double> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}
}  // namespace

TEST_CASE("device_array attributes follow Numba", "[array]") {
  Context ctx = test::host_context();
  DeviceArray a = device_array(ctx, {3, 4}, dtypes::float32);
  CHECK(a.shape() == Shape{3, 4});
  CHECK(a.strides() == Strides{16, 4});
  CHECK(a.ndim() == 2);
  CHECK(a.size() == 12);
  CHECK(a.nbytes() == 48);
  CHECK(a.alloc_size() == 48);
  CHECK(a.length() == 3);
  CHECK(a.is_c_contiguous());
  CHECK_FALSE(a.is_f_contiguous());
  CHECK(a.device_pointer() % 256 == 0);
  CHECK(device_array(ctx, {3, 4}, dtypes::float64, {}, 'F').strides() == Strides{8, 24});
  CHECK(device_array(ctx, {5}, dtypes::float64, {16}).alloc_size() == 72);

  DeviceArray z = device_array(ctx, {0, 5});
  CHECK(z.size() == 0);
  CHECK(z.device_pointer() == 0);
  CHECK(z.alloc_size() == 0);
  CHECK(z.is_c_contiguous());
  CHECK(z.is_f_contiguous());
  CHECK(z.copy_to_host().shape() == Shape{0, 5});

  DeviceArray s = device_array(ctx, {});
  CHECK(s.size() == 1);
  CHECK(s.alloc_size() == 8);
  REQUIRE_GPUHAL_ERROR(s.length(), Status::ERROR_INDEX_OUT_OF_RANGE, "0-d");
}

TEST_CASE("device_array rejects bad input and leaks nothing", "[array][errors]") {
  Context ctx = test::host_context({{"GPUHAL_HOST_MEMORY_LIMIT", "1M"}});
  const uint64_t free_before = ctx.memory_info().free;
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {int64_t(1) << 40, int64_t(1) << 40}), Status::ERROR_SIZE_OVERFLOW,
                       "overflows");
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {-1}), Status::ERROR_INVALID_SHAPE, "negative dimension");
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {2, 2}, dtypes::float64, {8}), Status::ERROR_INVALID_SHAPE, "strides");
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {2}, dtypes::float64, {}, 'A'), Status::ERROR_INVALID_VALUE, "order");
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {2}, DType{DTypeKind::Int, 7, 1}), Status::ERROR_INVALID_DTYPE,
                       "unsupported dtype");
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {1 << 20}), Status::ERROR_OUT_OF_MEMORY, "GPUHAL_HOST_MEMORY_LIMIT");
  REQUIRE_GPUHAL_ERROR(device_array(Context(nullptr), {2}), Status::ERROR_INVALID_HANDLE, "null context");
  CHECK(ctx.memory_info().free == free_before);
  {
    DeviceArray a = device_array(ctx, {1000});
    CHECK(ctx.memory_info().free == free_before - 8000);
  }
  CHECK(ctx.pending_deallocations() == 1);  // freed lazily, like Numba
  ctx.flush_deallocations();
  CHECK(ctx.memory_info().free == free_before);
}

TEST_CASE("to_device and copy_to_host round trip", "[array][transfer]") {
  Context ctx = test::host_context();
  std::vector<double> v = iota(12);
  DeviceArray d = to_device(ctx, HostView::of(v, {3, 4}));
  CHECK(d.shape() == Shape{3, 4});
  CHECK(d.copy_to_host().to_vector<double>() == v);

  std::vector<double> back(12, -1);
  d.copy_to_host(HostView::of(back, {3, 4}));
  CHECK(back == v);

  // F-ordered and scalar sources keep their layout.
  std::vector<double> f = iota(6);
  DeviceArray df = to_device(ctx, HostView::of(f.data(), {2, 3}, {8, 16}));
  CHECK(df.is_f_contiguous());
  CHECK(df.copy_to_host().at<double>({1, 2}) == 5.0);
  const int64_t answer = 42;
  DeviceArray d0 = to_device(ctx, HostView::scalar(answer));
  CHECK(d0.ndim() == 0);
  CHECK(d0.copy_to_host().at<int64_t>({}) == 42);

  // Copy::no allocates only; to= copies into an existing array.
  DeviceArray e = to_device(ctx, HostView::of(v), Copy::no);
  CHECK(e.shape() == Shape{12});
  to_device(HostView::of(v), e);
  CHECK(e.copy_to_host().to_vector<double>() == v);
  CHECK(to_device(e).device_pointer() == e.device_pointer());  // identity

  // Read-only host sources are fine.
  const std::vector<double> cv = iota(4, 10);
  CHECK(to_device(ctx, HostView::of(cv)).copy_to_host().to_vector<double>() == cv);
}

TEST_CASE("strided and differently ordered host sources are gathered", "[array][transfer]") {
  Context ctx = test::host_context();
  std::vector<double> v = iota(24);
  HostView m = HostView::of(v, {4, 6});
  DeviceArray d = device_array(ctx, {4, 3});
  d.copy_from_host(m.view({all, Slice({}, {}, 2)}));
  CHECK(d.copy_to_host().to_vector<double>() == std::vector<double>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22});
  // to_device itself needs a contiguous host array (Numba's sentry).
  REQUIRE_GPUHAL_ERROR(to_device(ctx, m.view({all, Slice({}, {}, 2)})), Status::ERROR_NOT_CONTIGUOUS, "non-contiguous");
  // Broadcast host arrays are fine: only their core is transferred.
  std::vector<double> row{1, 2, 3};
  DeviceArray b = to_device(ctx, HostView::of(row.data(), {4, 3}, {0, 8}));
  CHECK(b.alloc_size() == 24);
  CHECK(b.copy_to_host().at<double>({3, 2}) == 3.0);
}

TEST_CASE("copy compatibility checks: dtype, shape, strides", "[array][transfer][errors]") {
  Context ctx = test::host_context();
  DeviceArray d = device_array(ctx, {2, 3});
  std::vector<double> v = iota(6);
  std::vector<float> vf(6);
  REQUIRE_GPUHAL_ERROR(d.copy_from_host(HostView::of(vf, {2, 3})), Status::ERROR_INVALID_DTYPE,
                       "incompatible dtype: float64 vs. float32");
  REQUIRE_GPUHAL_ERROR(d.copy_from_host(HostView::of(v, {3, 2})), Status::ERROR_INCOMPATIBLE,
                       "incompatible shape: (2, 3) vs. (3, 2)");
  std::vector<double> out(6);
  REQUIRE_GPUHAL_ERROR(d.copy_to_host(HostView::of(out.data(), {2, 3}, {8, 16})), Status::ERROR_INCOMPATIBLE,
                       "incompatible strides: (24, 8) vs. (8, 16)");
  REQUIRE_GPUHAL_ERROR(d.copy_to_host(HostView::of(vf, {2, 3})), Status::ERROR_INVALID_DTYPE, "incompatible dtype");
  const std::vector<double> ro(6);
  REQUIRE_GPUHAL_ERROR(d.copy_to_host(HostView::of(ro, {2, 3})), Status::ERROR_INVALID_VALUE, "read-only");
  // Size-1 axes are ignored by the checks.
  DeviceArray r = device_array(ctx, {1, 6});
  r.copy_from_host(HostView::of(v));
  CHECK(r.copy_to_host().to_vector<double>() == v);
  // Device to device: C from F is copied element by element (Numba refuses
  // strides that differ; #21 asks for strided device copies).
  DeviceArray f = device_array(ctx, {2, 3}, dtypes::float64, {}, 'F');
  f.copy_from_host(HostView::of(v, {2, 3}));
  d.copy_from_device(f);
  CHECK(d.copy_to_host().to_vector<double>() == v);
  REQUIRE_GPUHAL_ERROR(d.copy_from_device(device_array(ctx, {6})), Status::ERROR_INCOMPATIBLE, "incompatible shape");
  REQUIRE_GPUHAL_ERROR(d.copy_from_device(device_array(ctx, {2, 3}, dtypes::float32)), Status::ERROR_INVALID_DTYPE,
                       "incompatible dtype");
  // Views that are not contiguous cannot be a single-region destination/source.
  REQUIRE_GPUHAL_ERROR(f[1].copy_from_host(HostView::of(v.data(), {3})), Status::ERROR_NOT_CONTIGUOUS,
                       "non-contiguous");
  // A strided device destination takes a device source element by element.
  DeviceArray column = device_array(ctx, {2});
  column.copy_from_host(HostView::of(v.data(), {2}));
  DeviceArray d2 = device_array(ctx, {2, 3});
  d2.fill(-1.0);
  d2.view({all, 1}).copy_from_device(column);
  CHECK(d2.copy_to_host().to_vector<double>() == std::vector<double>{-1, 0, -1, -1, 1, -1});
  // A destination whose elements alias (a broadcast axis) is not copied
  // into element by element: its core (3,) is not the source's shape.
  REQUIRE_GPUHAL_ERROR(DeviceArray(d2.memory(), Layout::make({2, 3}, 8, {0, 8}), dtypes::float64)
                           .copy_from_device(device_array(ctx, {2, 3})),
                       Status::ERROR_INCOMPATIBLE, "incompatible shape: (3,) vs. (2, 3)");
  REQUIRE_GPUHAL_ERROR(DeviceArray(d2.memory(), Layout::make({2, 3}, 8, {0, 8}), dtypes::float64).fill(1.0),
                       Status::ERROR_INVALID_VALUE, "broadcast axis (axis 0, stride 0)");
  // A failed copy changed nothing.
  d.copy_from_host(HostView::of(v, {2, 3}));
  REQUIRE_GPUHAL_ERROR(d.copy_from_host(HostView::of(vf, {2, 3})), Status::ERROR_INVALID_DTYPE, "dtype");
  CHECK(d.copy_to_host().to_vector<double>() == v);
}

TEST_CASE("views share memory and keep their base alive", "[array][views]") {
  Context ctx = test::host_context();
  std::vector<double> v = iota(20);
  DeviceArray row;
  {
    DeviceArray d = to_device(ctx, HostView::of(v, {4, 5}));
    row = d[2];
    CHECK(row.device_pointer() == d.device_pointer() + 80);
    CHECK(d.view({-1, -1}).copy_to_host().at<double>({}) == 19.0);
  }
  CHECK(row.copy_to_host().to_vector<double>() == std::vector<double>{10, 11, 12, 13, 14});
  DeviceArray d = to_device(ctx, HostView::of(v));
  DeviceArray rev = d.view({Slice({}, {}, -1)});
  CHECK(rev.strides() == Strides{-8});
  CHECK(rev.device_pointer() == d.device_pointer() + 152);
  HostArray h = rev.copy_to_host();  // negative strides come back as they are
  CHECK(h.strides() == Strides{-8});
  CHECK(h.at<double>({0}) == 19.0);
  CHECK(h.to_vector<double>().back() == 0.0);
  DeviceArray every3 = d.view({Slice(1, {}, 3)});
  CHECK(every3.copy_to_host().to_vector<double>() == std::vector<double>{1, 4, 7, 10, 13, 16, 19});
  REQUIRE_GPUHAL_ERROR(d.view({20}), Status::ERROR_INDEX_OUT_OF_RANGE, "out of bounds");
}

TEST_CASE("copying a strided view into a strided host view leaves the gaps alone", "[array][views]") {
  Context ctx = test::host_context();
  std::vector<double> v = iota(10);
  DeviceArray d = to_device(ctx, HostView::of(v));
  std::vector<double> out(10, -1);
  d.view({Slice({}, {}, 2)}).copy_to_host(HostView::of(out).view({Slice({}, {}, 2)}));
  CHECK(out == std::vector<double>{0, -1, 2, -1, 4, -1, 6, -1, 8, -1});
}

// A synchronous copy between a device array and a host view of the same
// dtype, shape and strides, C-contiguous, takes the core's short path in
// both directions; these are the cases that path must get right (a view
// that starts inside its allocation, one row, a scalar) or must leave to the
// general path (a read-only destination, an empty array, another order).
TEST_CASE("same-layout synchronous copies: views with an offset, scalars, and what they leave to the general path",
          "[array][transfer]") {
  Context ctx = test::host_context();
  const std::vector<double> v = iota(12);
  DeviceArray d = to_device(ctx, HostView::of(v, {4, 3}));
  // Rows 1-2: C-contiguous, starting 24 bytes into the allocation.
  DeviceArray rows = d.view({Slice(1, 3)});
  std::vector<double> out(6, -1);
  rows.copy_to_host(HostView::of(out, {2, 3}));
  CHECK(out == std::vector<double>{3, 4, 5, 6, 7, 8});
  const std::vector<double> in{-3, -4, -5, -6, -7, -8};
  rows.copy_from_host(HostView::of(in, {2, 3}));
  CHECK(d.copy_to_host().to_vector<double>() == std::vector<double>{0, 1, 2, -3, -4, -5, -6, -7, -8, 9, 10, 11});
  // One row, and one element as a 0-d view.
  std::vector<double> row(3, -1);
  d[3].copy_to_host(HostView::of(row));
  CHECK(row == std::vector<double>{9, 10, 11});
  std::vector<double> one(1, -1);
  d.view({2, 1}).copy_to_host(HostView::of(one).view({0}));
  CHECK(one[0] == -7);
  // Left to the general path: its checks and errors still hold.
  const std::vector<double> ro(6);
  REQUIRE_GPUHAL_ERROR(rows.copy_to_host(HostView::of(ro, {2, 3})), Status::ERROR_INVALID_VALUE, "read-only");
  DeviceArray empty = device_array(ctx, {0, 3});
  std::vector<double> none;
  empty.copy_to_host(HostView::of(none.data(), {0, 3}, {24, 8}));
  empty.copy_from_host(HostView::of(none.data(), {0, 3}, {24, 8}));
  std::vector<double> f_out(6, -1);
  REQUIRE_GPUHAL_ERROR(rows.copy_to_host(HostView::of(f_out.data(), {2, 3}, {8, 16})), Status::ERROR_INCOMPATIBLE,
                       "incompatible strides");
  CHECK(f_out == std::vector<double>(6, -1));
  // Both C-contiguous with the same shape: strides on an axis of extent 1
  // may differ (no element steps along it; NumPy's relaxed strides), and
  // the copy is still the span's bytes, both ways.
  DeviceArray one_row = d.view({Slice(2, 3)});  // shape {1, 3}, strides {24, 8}
  std::vector<double> odd(3, -1);
  one_row.copy_to_host(HostView::of(odd.data(), {1, 3}, {1000, 8}));
  CHECK(odd == std::vector<double>{-6, -7, -8});
  const std::vector<double> back{60, 70, 80};
  one_row.copy_from_host(HostView::of(back.data(), {1, 3}, {-8, 8}));
  CHECK(d.copy_to_host().to_vector<double>() == std::vector<double>{0, 1, 2, -3, -4, -5, 60, 70, 80, 9, 10, 11});
}

TEST_CASE("zero-size views whose span does not start at 0 copy to the host as empty arrays", "[array][views]") {
  // HostArray::with_layout once applied the view's offset to a null buffer
  // (undefined behaviour, reported by the sanitizer pass).
  Context ctx = test::host_context();
  DeviceArray d = device_array(ctx, {4, 5}, dtypes::float32);
  for (const DeviceArray &v : {d.view({Slice(3, 3)}), d.view({Slice(), Slice(4, 2)}), d.T().view({Slice(2, 2)})}) {
    HostArray h = v.copy_to_host();
    CHECK(h.size() == 0);
    CHECK(h.shape() == v.shape());
    CHECK(h.data() == nullptr);
  }
  // Numba's negative reshape and explicit strides with order 'A' (NumPy's rules).
  CHECK(d.reshape({-3, 2}).shape() == Shape{10, 2});
  CHECK(device_array(ctx, {2, 3}, dtypes::float64, {8, 16}, 'A').strides() == Strides{8, 16});
}

TEST_CASE("reshape and ravel on device arrays", "[array][reshape]") {
  Context ctx = test::host_context();
  std::vector<double> v = iota(6);
  DeviceArray d = to_device(ctx, HostView::of(v, {2, 3}));
  DeviceArray r = d.reshape({3, 2});
  CHECK(r.device_pointer() == d.device_pointer());
  CHECK(r.copy_to_host().at<double>({2, 1}) == 5.0);
  CHECK(d.reshape({-1}).shape() == Shape{6});
  CHECK(d.ravel().copy_to_host().to_vector<double>() == v);
  REQUIRE_GPUHAL_ERROR(d.reshape({6}, 'F'), Status::ERROR_REQUIRES_COPY, "requires a copy");
  REQUIRE_GPUHAL_ERROR(d.ravel('F'), Status::ERROR_REQUIRES_COPY, "requires a copy");
  REQUIRE_GPUHAL_ERROR(d.reshape({4}), Status::ERROR_INVALID_SHAPE, "cannot reshape array of size 6 into shape (4,)");
  REQUIRE_GPUHAL_ERROR(d.reshape({-1, -1}), Status::ERROR_INVALID_SHAPE, "one unknown dimension");
  REQUIRE_GPUHAL_ERROR(d.reshape({6}, 'K'), Status::ERROR_INVALID_VALUE, "order");
  // The F-ordered case NumPy reads column by column.
  DeviceArray f = to_device(ctx, HostView::of(v.data(), {2, 3}, {8, 16}));
  CHECK(f.reshape({6}, 'F').copy_to_host().to_vector<double>() == v);
  CHECK(f.reshape({3, 2}, 'A').strides() == Strides{8, 24});
}

TEST_CASE("device_array_like keeps the order of its source", "[array]") {
  Context ctx = test::host_context();
  DeviceArray c = device_array(ctx, {10, 12});
  CHECK(device_array_like(c.view({Slice({}, {}, 2), Slice({}, {}, 2)})).strides() == Strides{48, 8});
  DeviceArray f = device_array(ctx, {10, 12}, dtypes::float64, {}, 'F');
  CHECK(device_array_like(f).strides() == Strides{8, 80});
  std::vector<float> h(12);
  DeviceArray l = device_array_like(ctx, HostView::of(h, {3, 4}));
  CHECK(l.dtype() == dtypes::float32);
  CHECK(l.shape() == Shape{3, 4});
}

TEST_CASE("memset and device-to-device copies", "[array][transfer]") {
  Context ctx = test::host_context();
  DeviceArray a = device_array(ctx, {8}, dtypes::uint8);
  a.memset(7);
  CHECK(a.copy_to_host().to_vector<uint8_t>() == std::vector<uint8_t>(8, 7));
  DeviceArray b = device_array_like(a);
  b.copy_from_device(a);
  CHECK(b.copy_to_host().to_vector<uint8_t>() == std::vector<uint8_t>(8, 7));
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {8}).view({Slice({}, {}, 2)}).memset(0), Status::ERROR_NOT_CONTIGUOUS,
                       "non-contiguous");
}

TEST_CASE("arrays of a second device and of another runtime", "[array][devices]") {
  Runtime rt = test::host_runtime({{"GPUHAL_HOST_DEVICES", "2"}});
  Context c0 = rt.device(0).primary_context(), c1 = rt.device(1).primary_context();
  std::vector<int32_t> v{1, 2, 3, 4};
  DeviceArray a = to_device(c0, HostView::of(v));
  DeviceArray b = device_array(c1, {4}, dtypes::int32);
  b.copy_from_device(a);  // peer copy (unified addressing)
  CHECK(b.copy_to_host().to_vector<int32_t>() == v);
  CHECK(b.context() == c1);
  // A stream of another context is refused.
  REQUIRE_GPUHAL_ERROR(b.copy_from_device(a, c0.create_stream()), Status::ERROR_INVALID_HANDLE, "another context");
}

TEST_CASE("an empty DeviceArray handle reports misuse", "[array][errors]") {
  DeviceArray none;
  REQUIRE_GPUHAL_ERROR(none.context(), Status::ERROR_INVALID_HANDLE, "empty DeviceArray");
  std::vector<double> v(2);
  REQUIRE_GPUHAL_ERROR(none.copy_from_host(HostView::of(v)), Status::ERROR_INVALID_HANDLE, "empty DeviceArray");
  REQUIRE_GPUHAL_ERROR(HostView::of(v, {3}), Status::ERROR_INVALID_SHAPE, "needs 24 bytes but the vector holds 16");
}

TEST_CASE("large copies, split over the host backend's threads, arrive byte for byte") {
  gpuhal::Context ctx = test::host_context();
  const int64_t n = (int64_t(40) << 20) + 12345;  // not a multiple of the 2 MiB chunks
  std::vector<uint8_t> src(static_cast<size_t>(n)), back(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) src[size_t(i)] = uint8_t(i * 7 + (i >> 13));
  gpuhal::DeviceArray d = gpuhal::to_device(ctx, gpuhal::HostView::of(src));
  gpuhal::DeviceArray e = gpuhal::device_array_like(d);
  gpuhal::Stream s = ctx.create_stream();
  e.copy_from_device(d, s);
  e.copy_to_host(gpuhal::HostView::of(back), s);
  s.synchronize();
  CHECK(back == src);
}

TEST_CASE("copy_to_host on a stream keeps its result alive until the copy ran", "[array][transfer][lifetime]") {
  // The result of copy_to_host(stream) may be dropped before the stream
  // runs the copy (a Python caller that ignores it, an exception between
  // the call and the synchronize): the copy must not write into freed
  // memory. The stream is held up by a callback so that the copy surely
  // runs after the HostArray handle is gone; 16 MiB so that the buffer is
  // its own mapping, unmapped when freed (a crash without ASan too).
  Context ctx = test::host_context();
  DeviceArray d = device_array(ctx, {2 << 20}, dtypes::float64);
  d.memset(0x11);
  Stream s = ctx.create_stream();
  std::promise<void> go;
  std::shared_future<void> started = go.get_future().share();
  s.add_callback([started] { started.wait(); });
  {
    HostArray h = d.copy_to_host(s);
    CHECK(h.size() == d.size());
  }
  go.set_value();
  s.synchronize();
  // And the result is freed once the stream has run the copy.
  HostArray kept = d.copy_to_host(s);
  s.synchronize();
  unsigned char expected[8];
  std::memset(expected, 0x11, sizeof expected);
  CHECK(std::memcmp(&kept.at<double>({7}), expected, 8) == 0);
}
