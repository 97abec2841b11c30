// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Layout: Numba's dummy-array rules with NumPy reshape semantics.
#include "test_support.hpp"

using namespace gpuhal;

namespace {
Layout L(Shape s, Strides st = {}, int64_t item = 8, char order = 'C') {
  return Layout::make(s, item, st, order);
}
}  // namespace

TEST_CASE("dense strides in C and F order", "[layout]") {
  CHECK(L({2, 3, 4}).strides() == Strides{96, 32, 8});
  CHECK(L({2, 3, 4}, {}, 8, 'F').strides() == Strides{8, 16, 48});
  CHECK(L({0, 5}).strides() == Strides{0, 0});  // np.empty((0, 5)).strides
  CHECK(Layout::dense_strides({0, 5}, 8, 'C') == Strides{40, 8});  // reshape's rule: zero counts as one
  CHECK(L({0, 5}).reshape({5, 0}).strides() == Strides{8, 8});   // np.empty((0, 5)).reshape(5, 0)
  CHECK(L({2, 3}, {}, 8, 'f').strides() == Strides{8, 16});      // order letters in either case
  CHECK(L({}).strides().empty());
  CHECK(L({}).size() == 1);
  CHECK(L({}).span_bytes() == 8);
  CHECK(L({5}, {16}).span_bytes() == 72);
  CHECK(L({0, 3}).span_bytes() == 0);
}

TEST_CASE("contiguity matches NumPy's relaxed rules", "[layout]") {
  CHECK(L({1, 4}, {32, 8}).is_c_contiguous());
  CHECK(L({1, 4}, {32, 8}).is_f_contiguous());
  CHECK(L({4, 1}, {8, 8}).is_c_contiguous());
  CHECK(L({4, 1}, {8, 8}).is_f_contiguous());
  CHECK(L({1, 10}, {800, 8}).is_f_contiguous());
  CHECK(L({4, 1}, {8, 800}).is_c_contiguous());
  const Layout bc = L({4, 3}, {0, 8});
  CHECK_FALSE(bc.is_c_contiguous());
  CHECK_FALSE(bc.is_f_contiguous());
  CHECK(bc.span_bytes() == 24);  // broadcast arrays span only their core
  CHECK(bc.core().shape() == Shape{3});
  CHECK(bc.core().is_c_contiguous());
  // A zero stride on a size-1 dim is ignored, as NumPy does (Numba's port
  // calls it broadcast; np.ndarray((1,), strides=(0,)).flags says C).
  CHECK(L({1}, {0}).is_c_contiguous());
  CHECK(L({1, 3}, {0, 8}).is_f_contiguous());
  CHECK(L({0, 3}, {8, 8}).is_c_contiguous());  // zero-size: both
  CHECK(L({0, 3}, {8, 8}).is_f_contiguous());
  CHECK(L({}).is_c_contiguous());
  CHECK_FALSE(L({3}, {-8}).is_c_contiguous());
}

TEST_CASE("make validates shapes, strides, orders and sizes", "[layout][errors]") {
  REQUIRE_GPUHAL_ERROR(L({2, -3}), Status::ERROR_INVALID_SHAPE, "negative dimension -3 at axis 1");
  REQUIRE_GPUHAL_ERROR(L({2, 3}, {8}), Status::ERROR_INVALID_SHAPE, "have 1 entries but shape (2, 3) has 2");
  REQUIRE_GPUHAL_ERROR(L({2}, {}, 8, 'A'), Status::ERROR_INVALID_VALUE, "order must be one of C, F, got 'A'");
  // With explicit strides the letter is not used, and 'A' is accepted as Numba does.
  CHECK(L({2, 3}, {8, 16}, 8, 'A').strides() == Strides{8, 16});
  REQUIRE_GPUHAL_ERROR(L({2}, {8}, 8, 'K'), Status::ERROR_INVALID_VALUE, "order must be one of C, F, A, got 'K'");
  REQUIRE_GPUHAL_ERROR(L({2}, {}, 0), Status::ERROR_INVALID_VALUE, "itemsize must be positive");
  REQUIRE_GPUHAL_ERROR(L({int64_t(1) << 40, int64_t(1) << 40}), Status::ERROR_SIZE_OVERFLOW, "overflows");
  REQUIRE_GPUHAL_ERROR(L({int64_t(1) << 61}), Status::ERROR_SIZE_OVERFLOW, "overflows");
  REQUIRE_GPUHAL_ERROR(L({4}, {INT64_MAX / 2}), Status::ERROR_SIZE_OVERFLOW, "array span");
  // The lowest element exactly -2^63 bytes away: its negation does not exist (found by fuzz_layout).
  REQUIRE_GPUHAL_ERROR(Layout::make({2}, 1, {INT64_MIN}), Status::ERROR_SIZE_OVERFLOW, "overflows");
  REQUIRE_GPUHAL_ERROR(L(Shape(65, 1)), Status::ERROR_INVALID_SHAPE, "too many dimensions");
}

TEST_CASE("negative strides place element 0 inside the allocation", "[layout]") {
  const Layout l = L({10}, {-8});
  CHECK(l.offset() == 72);
  CHECK(l.span_begin() == 0);
  CHECK(l.span_end() == 80);
}

TEST_CASE("indexing follows Python's rules", "[layout]") {
  const Layout a = L({10});
  const Layout r = a.index({Slice({}, {}, -1)});
  CHECK(r.shape() == Shape{10});
  CHECK(r.strides() == Strides{-8});
  CHECK(r.offset() == 72);  // element 0 is the last one
  CHECK(a.index({Slice(2, 8, 3)}).shape() == Shape{2});
  CHECK(a.index({Slice(-3, {})}).shape() == Shape{3});
  CHECK(a.index({Slice(-3, {})}).offset() == 56);
  CHECK(a.index({Slice(20, 30)}).shape() == Shape{0});  // out-of-range slices are empty
  CHECK(a.index({Slice({}, 0)}).index({Slice({}, 1)}).shape() == Shape{0});
  CHECK(a.index({Slice(8, 2, -2)}).shape() == Shape{3});
  CHECK(a.index({Slice({}, {}, INT64_MIN)}).shape() == Shape{1});
  CHECK(a.index({Index(-1)}).offset() == 72);
  CHECK(a.index({Index(-1)}).ndim() == 0);

  const Layout m = L({4, 5});
  const Layout row = m.index({1});
  CHECK(row.shape() == Shape{5});
  CHECK(row.offset() == 40);
  const Layout col = m.index({all, 2});
  CHECK(col.shape() == Shape{4});
  CHECK(col.strides() == Strides{40});
  CHECK(m.index({Slice(0, 4, 2), Slice(1, 5, 2)}).strides() == Strides{80, 16});

  REQUIRE_GPUHAL_ERROR(a.index({10}), Status::ERROR_INDEX_OUT_OF_RANGE,
                       "index 10 is out of bounds for axis 0 with size 10");
  REQUIRE_GPUHAL_ERROR(a.index({-11}), Status::ERROR_INDEX_OUT_OF_RANGE, "index -11");
  REQUIRE_GPUHAL_ERROR(m.index({1, 2, 3}), Status::ERROR_INDEX_OUT_OF_RANGE,
                       "too many indices: 3 given for a 2-dimensional array");
  REQUIRE_GPUHAL_ERROR(a.index({Slice(0, 5, 0)}), Status::ERROR_INVALID_VALUE, "slice step cannot be zero");
}

TEST_CASE("reshape has NumPy's index-order semantics or asks for a copy", "[layout][reshape]") {
  const Layout c23 = L({2, 3});
  CHECK(c23.reshape({3, 2}).strides() == Strides{16, 8});
  CHECK(c23.reshape({6}).strides() == Strides{8});
  CHECK(c23.reshape({-1}).shape() == Shape{6});
  CHECK(c23.reshape({3, -1}).shape() == Shape{3, 2});
  CHECK(c23.reshape({1, 2, 1, 3, 1}).strides() == Strides{48, 24, 24, 8, 8});
  // NumPy: C(2,3).reshape(6, order='F') reads column by column: no view of a
  // C array can do that, so it needs a copy (Numba silently reinterprets).
  REQUIRE_GPUHAL_ERROR(c23.reshape({6}, 'F'), Status::ERROR_REQUIRES_COPY, "requires a copy");
  REQUIRE_GPUHAL_ERROR(c23.reshape({3, 2}, 'F'), Status::ERROR_REQUIRES_COPY, "requires a copy");
  // An F array read in F order is a view.
  const Layout f23 = L({2, 3}, {}, 8, 'F');
  CHECK(f23.reshape({6}, 'F').strides() == Strides{8});
  CHECK(f23.reshape({3, 2}, 'F').strides() == Strides{8, 24});
  CHECK(f23.reshape({6}, 'A').strides() == Strides{8});  // 'A' -> F for F-only arrays
  REQUIRE_GPUHAL_ERROR(f23.reshape({6}), Status::ERROR_REQUIRES_COPY, "order 'C'");
  // Non-contiguous arrays reshape as views where NumPy can (Numba cannot).
  const Layout s = L({2, 2}, {24, 16});
  CHECK(s.reshape({2, 1, 2}).strides() == Strides{24, 32, 16});  // NumPy's values
  REQUIRE_GPUHAL_ERROR(s.reshape({4}), Status::ERROR_REQUIRES_COPY, "strides (24, 16)");
  // Zero-size and 0-d.
  CHECK(L({0, 3}).reshape({3, 0}).shape() == Shape{3, 0});
  CHECK(L({}).reshape({1}).strides() == Strides{8});
  CHECK(L({1}).reshape({}).ndim() == 0);
}

TEST_CASE("reshape rejects bad shapes", "[layout][reshape][errors]") {
  const Layout c23 = L({2, 3});
  REQUIRE_GPUHAL_ERROR(c23.reshape({4}), Status::ERROR_INVALID_SHAPE, "cannot reshape array of size 6 into shape (4,)");
  REQUIRE_GPUHAL_ERROR(c23.reshape({-1, -1}), Status::ERROR_INVALID_SHAPE, "can only specify one unknown dimension");
  REQUIRE_GPUHAL_ERROR(c23.reshape({4, -1}), Status::ERROR_INVALID_SHAPE, "cannot reshape array of size 6");
  REQUIRE_GPUHAL_ERROR(c23.reshape({0, -1}), Status::ERROR_INVALID_SHAPE, "cannot reshape");
  // NumPy takes any negative value as the unknown size (numpy 2.4: reshape((-2, 3)) == reshape((-1, 3))).
  CHECK(c23.reshape({-2, 3}).shape() == Shape{2, 3});
  CHECK(c23.reshape({3, -7}).shape() == Shape{3, 2});
  REQUIRE_GPUHAL_ERROR(c23.reshape({-2, -1}), Status::ERROR_INVALID_SHAPE, "only specify one unknown");
  REQUIRE_GPUHAL_ERROR(c23.reshape({6}, 'X'), Status::ERROR_INVALID_VALUE, "order must be one of C, F, A, got 'X'");
  REQUIRE_GPUHAL_ERROR(c23.reshape({int64_t(1) << 40, int64_t(1) << 40}), Status::ERROR_SIZE_OVERFLOW, "overflows");
}

TEST_CASE("ravel returns a contiguous view or asks for a copy", "[layout][ravel]") {
  CHECK(L({2, 3}).ravel().shape() == Shape{6});
  CHECK(L({2, 3}).ravel('A').strides() == Strides{8});
  CHECK(L({2, 3}, {}, 8, 'F').ravel('F').shape() == Shape{6});
  CHECK(L({2, 3}, {}, 8, 'F').ravel('A').shape() == Shape{6});
  REQUIRE_GPUHAL_ERROR(L({2, 3}).ravel('F'), Status::ERROR_REQUIRES_COPY, "ravel in order 'F'");
  REQUIRE_GPUHAL_ERROR(L({4}, {16}).ravel(), Status::ERROR_REQUIRES_COPY, "not contiguous");
  REQUIRE_GPUHAL_ERROR(L({4, 3}, {0, 8}).ravel(), Status::ERROR_REQUIRES_COPY, "requires a copy");
  REQUIRE_GPUHAL_ERROR(L({4}).ravel('Z'), Status::ERROR_INVALID_VALUE, "order");
  CHECK(L({}).ravel().shape() == Shape{1});
  CHECK(L({0, 4}).ravel().shape() == Shape{0});
}

TEST_CASE("strides_like keeps the source's order like empty_like", "[layout]") {
  const Layout c = L({10, 12});
  CHECK(strides_like(c.index({Slice({}, {}, 2), Slice({}, {}, 2)})) == Strides{48, 8});
  const Layout f = L({10, 12}, {}, 8, 'F');
  CHECK(strides_like(f.index({Slice({}, {}, 2), Slice({}, {}, 2)})) == Strides{8, 40});
  CHECK(strides_like(L({4, 3}, {0, 8})) == Strides{8, 32});
  CHECK(strides_like(L({3, 4, 5}, {160, 40, 8}).index({})) == Strides{160, 40, 8});
  CHECK(strides_like(L({4, 3, 5}, {40, 160, 8})) == Strides{40, 160, 8});
}

TEST_CASE("ravel and strides_like take NumPy's K and A orders in either case", "[layout][ravel]") {
  // np.ndarray((2, 3), strides=(8, 16)) is F; its transpose-like (3, 2) with
  // strides (16, 8) is neither C nor F in axis order but dense by |stride|.
  const Layout perm = L({3, 2}, {8, 24}).transpose({1, 0});  // (2, 3), strides (24, 8): C
  CHECK(perm.ravel('k').strides() == Strides{8});
  const Layout k = L({2, 3, 4}).transpose({1, 0, 2});  // (3, 2, 4), strides (32, 96, 8)
  CHECK_FALSE(k.is_contiguous());
  CHECK(k.ravel('K').shape() == Shape{24});  // np: a view, element 0 first
  CHECK(k.ravel('K').offset() == k.offset());
  REQUIRE_GPUHAL_ERROR(k.ravel('C'), Status::ERROR_REQUIRES_COPY, "ravel in order 'C'");
  REQUIRE_GPUHAL_ERROR(L({3}, {-8}).ravel('K'), Status::ERROR_REQUIRES_COPY, "requires a copy");  // np copies
  CHECK(L({2, 3}, {}, 8, 'F').ravel('a').strides() == Strides{8});
  CHECK(strides_like(k, 'K') == Strides{32, 96, 8});
  CHECK(strides_like(k, 'c') == Strides{64, 32, 8});
  CHECK(strides_like(k, 'F') == Strides{8, 24, 48});
  CHECK(strides_like(L({2, 3}, {}, 8, 'F'), 'A') == Strides{8, 16});
  CHECK(strides_like(L({0, 3}), 'K') == Strides{0, 0});  // np.empty_like of an empty array
  REQUIRE_GPUHAL_ERROR(strides_like(k, 'X'), Status::ERROR_INVALID_VALUE, "order must be one of C, F, A, K");
  REQUIRE_GPUHAL_ERROR(L({4}).reshape({2, 2}, 'K'), Status::ERROR_INVALID_VALUE, "order must be one of C, F, A");
}

TEST_CASE("reshape to the same shape is the array as it is", "[layout][reshape]") {
  // NumPy returns a plain view before resolving -1 or checking contiguity.
  const Layout odd = L({2, 1}, {16, 32});
  CHECK(odd.reshape({2, 1}) == odd);
  const Layout neg = L({3}, {-8});
  CHECK(neg.reshape({3}) == neg);
  CHECK(neg.reshape({-1}).strides() == Strides{-8});  // np.zeros(3)[::-1].reshape(-1): a view
}

TEST_CASE("indexing a zero-size array with huge strides does not overflow", "[layout][fuzz]") {
  // Found by fuzz_layout: (huge, 0) arrays have no span to bound offsets.
  const Layout l = Layout::make({int64_t(1) << 58, 0}, 8, {int64_t(1) << 60, 8});
  CHECK(l.size() == 0);
  const Layout row = l.index({(int64_t(1) << 58) - 1});
  CHECK(row.shape() == Shape{0});
  CHECK(l.index({Slice(int64_t(1) << 57, {})}).shape() == Shape{int64_t(1) << 57, 0});
}

TEST_CASE("reshape of arrays with huge strides asks for a copy instead of overflowing", "[layout][fuzz]") {
  // Found by fuzz_layout: dim * stride in the no-copy check overflowed.
  const Layout l = Layout::make({2, 3}, 8, {8, int64_t(1) << 61});
  REQUIRE_GPUHAL_ERROR(l.reshape({6}), Status::ERROR_REQUIRES_COPY, "requires a copy");
}

TEST_CASE("transpose permutes shape and strides as NumPy's does, as a view", "[layout][transpose]") {
  // np.empty((2, 3, 4), np.float32): strides (48, 16, 4).
  const Layout a = Layout::make({2, 3, 4}, 4);
  // a.transpose() and a.T reverse the axes: shape (4, 3, 2), strides (4, 16, 48).
  const Layout t = a.transpose();
  CHECK(t.shape() == Shape{4, 3, 2});
  CHECK(t.strides() == Strides{4, 16, 48});
  CHECK(t.offset() == a.offset());
  CHECK(t.is_f_contiguous());
  CHECK_FALSE(t.is_c_contiguous());
  // a.transpose(1, 0, 2): (3, 2, 4), (16, 48, 4); negative axes count from the end.
  CHECK(a.transpose({1, 0, 2}).shape() == Shape{3, 2, 4});
  CHECK(a.transpose({1, 0, 2}).strides() == Strides{16, 48, 4});
  CHECK(a.transpose({-2, -3, -1}) == a.transpose({1, 0, 2}));
  // Twice is the identity; 0-d and 1-d are unchanged.
  CHECK(t.transpose() == a);
  CHECK(Layout::make({5}, 8).transpose() == Layout::make({5}, 8));
  CHECK(Layout().transpose() == Layout());
  // A strided, offset view keeps its offset (np.arange(24).reshape(4, 6)[1:, ::-2].T).
  const Layout v = Layout::make({4, 6}, 8).index({Slice(1, {}), Slice({}, {}, -2)});
  const Layout vt = v.transpose();
  CHECK(vt.shape() == Shape{3, 3});
  CHECK(vt.strides() == Strides{-16, 48});
  CHECK(vt.offset() == v.offset());
  // NumPy's errors: "axes don't match array", "repeated axis in transpose", AxisError.
  REQUIRE_GPUHAL_ERROR(a.transpose({0, 1}), Status::ERROR_INVALID_VALUE, "axes don't match array");
  REQUIRE_GPUHAL_ERROR(a.transpose({0, 1, 1}), Status::ERROR_INVALID_VALUE, "repeated axis");
  REQUIRE_GPUHAL_ERROR(a.transpose({0, 1, 3}), Status::ERROR_INDEX_OUT_OF_RANGE, "axis 3 is out of bounds");
  REQUIRE_GPUHAL_ERROR(a.transpose({0, 1, -4}), Status::ERROR_INDEX_OUT_OF_RANGE, "axis -4 is out of bounds");
}

TEST_CASE("device arrays and host views transpose as views of the same memory", "[transpose]") {
  Context ctx = test::host_context();
  std::vector<int32_t> v(6);
  for (int i = 0; i < 6; ++i) v[size_t(i)] = i;
  const HostView h = HostView::of(v, {2, 3});
  CHECK(h.T().shape() == Shape{3, 2});
  CHECK(*static_cast<int32_t *>(h.T().element({2, 1})) == 5);
  DeviceArray d = to_device(ctx, h);
  DeviceArray dt = d.T();
  CHECK(dt.shape() == Shape{3, 2});
  CHECK(dt.device_pointer() == d.device_pointer());
  // Copied out element by element: row i of the transpose is column i.
  CHECK(dt.copy_to_host().to_vector<int32_t>() == std::vector<int32_t>{0, 3, 1, 4, 2, 5});
  CHECK(d.transpose({1, 0}).strides() == dt.strides());
  // Row 0 of the transpose is column 0 of d: strided, so a copy into it is
  // refused as Numba refuses it (a view, not a copy: d is untouched).
  std::vector<int32_t> sevens{7, 7};
  CHECK(dt.view({0}).strides() == Strides{12});
  REQUIRE_GPUHAL_ERROR(dt.view({0}).copy_from_host(HostView::of(sevens)), Status::ERROR_NOT_CONTIGUOUS,
                       "non-contiguous");
  CHECK(dt.view({1}).copy_to_host().to_vector<int32_t>() == std::vector<int32_t>{1, 4});
  REQUIRE_GPUHAL_ERROR(d.transpose({0}), Status::ERROR_INVALID_VALUE, "axes don't match array");
  // A view of an empty handle is empty, as for view() and reshape(): refused at use.
  REQUIRE_GPUHAL_ERROR(DeviceArray().T().context(), Status::ERROR_INVALID_HANDLE, "empty DeviceArray");
}

TEST_CASE("view(dtype) resizes the last axis as NumPy's does", "[layout][viewdtype]") {
  // np.zeros((2, 3), 'f8').view('f4'): shape (2, 6), strides (24, 4).
  const Layout a = Layout::make({2, 3}, 8);
  CHECK(a.view_itemsize(4).shape() == Shape{2, 6});
  CHECK(a.view_itemsize(4).strides() == Strides{24, 4});
  CHECK(a.view_itemsize(1).shape() == Shape{2, 24});
  // The same itemsize: any layout, unchanged (0-d too).
  CHECK(a.index({Slice({}, {}, 2)}).view_itemsize(8) == a.index({Slice({}, {}, 2)}));
  CHECK(Layout::make({}, 8).view_itemsize(8).itemsize() == 8);
  // np.zeros((2, 8), 'f4').view('c16'): shape (2, 2), strides (32, 16).
  const Layout f = Layout::make({2, 8}, 4);
  CHECK(f.view_itemsize(16).shape() == Shape{2, 2});
  CHECK(f.view_itemsize(16).strides() == Strides{32, 16});
  // A last axis of length 1 need not be contiguous: shape (2, 1), strides (24, 24) (what NumPy
  // gives for np.zeros((2, 3))[:, ::3]) viewed as 'f4' is shape (2, 2), strides (24, 4).
  const Layout one = Layout::make({2, 1}, 8, {24, 24});
  CHECK(one.view_itemsize(4).shape() == Shape{2, 2});
  CHECK(one.view_itemsize(4).strides() == Strides{24, 4});
  CHECK(one.view_itemsize(4).offset() == one.offset());
  // Empty arrays need no contiguity either.
  CHECK(Layout::make({0, 3}, 8).index({Slice(), Slice({}, {}, 2)}).view_itemsize(4).shape() == Shape{0, 4});
  // NumPy's refusals.
  REQUIRE_GPUHAL_ERROR(Layout::make({}, 8).view_itemsize(4), Status::ERROR_INVALID_VALUE, "0d array");
  REQUIRE_GPUHAL_ERROR(a.index({Slice(), Slice({}, {}, 2)}).view_itemsize(4), Status::ERROR_INVALID_VALUE,
                       "the last axis must be contiguous");
  REQUIRE_GPUHAL_ERROR(a.view_itemsize(16), Status::ERROR_INVALID_VALUE, "divisor of the total size in bytes");
  REQUIRE_GPUHAL_ERROR(Layout::make({4}, 2).view_itemsize(3).size(), Status::ERROR_INVALID_VALUE,
                       "divisor of the total size in bytes");
  REQUIRE_GPUHAL_ERROR(Layout::make({4}, 8).view_itemsize(3), Status::ERROR_INVALID_VALUE,
                       "divisor of the size of original dtype");
}

TEST_CASE("device arrays and host views read their memory as another dtype", "[viewdtype]") {
  Context ctx = test::host_context();
  std::vector<uint32_t> v{0x3f800000u, 0x40000000u, 0x40400000u, 0x40800000u};  // 1, 2, 3, 4 as float32
  DeviceArray d = to_device(ctx, HostView::of(v, {2, 2}));
  DeviceArray f = d.view(dtypes::float32);
  CHECK(f.dtype() == dtypes::float32);
  CHECK(f.copy_to_host().to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  DeviceArray bytes = d.view(dtypes::uint8);
  CHECK(bytes.shape() == Shape{2, 8});
  CHECK(bytes.view({0, 3}).copy_to_host().at<uint8_t>({}) == 0x3f);  // little-endian: the high byte last
  DeviceArray wide = d.view(dtypes::uint64);
  CHECK(wide.shape() == Shape{2, 1});
  CHECK(wide.device_pointer() == d.device_pointer());
  const HostView h = HostView::of(v, {2, 2});
  CHECK(*static_cast<float *>(h.view(dtypes::float32).element({1, 1})) == 4.0f);
  REQUIRE_GPUHAL_ERROR(d.T().view(dtypes::uint8), Status::ERROR_INVALID_VALUE, "last axis must be contiguous");
  REQUIRE_GPUHAL_ERROR(d.view(DType{DTypeKind::Float, 24, 1}), Status::ERROR_INVALID_DTYPE, "");
}

TEST_CASE("slices of one or no element keep NumPy's stride (stride * step) and offset", "[layout][slice]") {
  // np.zeros((2, 3))[:, ::3]: shape (2, 1), strides (24, 24).
  const Layout a = Layout::make({2, 3}, 8).index({Slice(), Slice({}, {}, 3)});
  CHECK(a.shape() == Shape{2, 1});
  CHECK(a.strides() == Strides{24, 24});
  CHECK_FALSE(a.is_c_contiguous());  // rows 24 bytes apart, elements 8: as NumPy's flags say
  CHECK(Layout::make({3, 4}, 8).index({Slice(1, 2)}).is_c_contiguous());  // (1, 4), (32, 8): relaxed
  // np.zeros(5)[2:3:4]: (1,), (32,); np.zeros(5)[3:3:2]: (0,), (8,) (a slice of
  // nothing is start 0, step 1 in NumPy); np.zeros(5)[::-7]: (1,), (-56,).
  CHECK(Layout::make({5}, 8).index({Slice(2, 3, 4)}).strides() == Strides{32});
  CHECK(Layout::make({5}, 8).index({Slice(3, 3, 2)}).strides() == Strides{8});
  CHECK(Layout::make({5}, 8).index({Slice(3, 3, 2)}).offset() == 0);
  CHECK(Layout::make({5}, 8).index({Slice({}, {}, -7)}).strides() == Strides{-56});
  // A step whose product with the stride does not fit in 64 bits keeps the
  // stride (NumPy's C arithmetic would wrap; the stride of one element is
  // never used to address memory).
  CHECK(Layout::make({5}, 8).index({Slice(0, 1, INT64_MAX)}).strides() == Strides{8});
}
