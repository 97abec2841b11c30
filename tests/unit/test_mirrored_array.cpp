// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// MirroredArray (Numba's SmartArray).
#include "test_support.hpp"

using namespace gpuhal;

TEST_CASE("mirrored arrays copy lazily and track validity", "[mirrored]") {
  Context ctx = test::host_context();
  MirroredArray m = MirroredArray::empty(ctx, {3, 4}, dtypes::int32);
  CHECK(m.valid(Where::host));
  CHECK_FALSE(m.valid(Where::device));
  CHECK_FALSE(m.has_device());
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) m.get_host().at<int32_t>({i, j}) = i * 10 + j;
  m.mark_changed(Where::host);

  const DeviceArray &d = m.get_device();  // allocates and copies now
  CHECK(m.has_device());
  CHECK(m.valid(Where::device));
  CHECK(d.copy_to_host().at<int32_t>({2, 3}) == 23);
  const gpuhal::DevicePointer ptr = d.device_pointer();
  CHECK(m.get_device().device_pointer() == ptr);  // no second allocation

  // Device writes: mark the device side, the host side is refreshed on demand.
  m.get_device().memset(0);
  m.mark_changed(Where::device);
  CHECK_FALSE(m.valid(Where::host));
  CHECK(m.get_host().at<int32_t>({2, 3}) == 0);
  CHECK(m.valid(Where::host));
  CHECK(m.valid(Where::device));

  // Copies share the sides.
  MirroredArray alias = m;
  alias.get_host().at<int32_t>({0, 0}) = 7;
  alias.mark_changed(Where::host);
  CHECK_FALSE(m.valid(Where::device));
  CHECK(m.get_device().copy_to_host().at<int32_t>({0, 0}) == 7);
}

TEST_CASE("mirrored arrays keep F order and report misuse", "[mirrored][errors]") {
  Context ctx = test::host_context();
  MirroredArray f = MirroredArray::empty(ctx, {2, 3}, dtypes::float64, 'F');
  CHECK(f.get_device().strides() == Strides{8, 16});
  MirroredArray fresh = MirroredArray::empty(ctx, {4});
  REQUIRE_GPUHAL_ERROR(fresh.mark_changed(Where::device), Status::ERROR_INVALID_VALUE, "no device side yet");
  MirroredArray none;
  REQUIRE_GPUHAL_ERROR(none.get_host(), Status::ERROR_INVALID_HANDLE, "empty handle");
  std::vector<double> v(8);
  HostArray strided = HostArray::empty({8}, dtypes::float64);
  CHECK_NOTHROW(MirroredArray::from_host(ctx, strided));
  REQUIRE_GPUHAL_ERROR(MirroredArray::from_host(Context(nullptr), strided), Status::ERROR_INVALID_HANDLE,
                       "null context");
  MirroredArray zero = MirroredArray::empty(ctx, {0, 5});
  CHECK(zero.get_device().size() == 0);
  CHECK(zero.get_host().shape() == Shape{0, 5});
}

TEST_CASE("mirrored arrays made on the device side copy to the host lazily", "[mirrored]") {
  Context ctx = test::host_context();
  // Numba's SmartArray(shape=..., where='gpu'): the device side first.
  MirroredArray m = MirroredArray::empty(ctx, {2, 3}, dtypes::int32, 'F', Where::device);
  CHECK(m.has_device());
  CHECK_FALSE(m.has_host());
  CHECK(m.valid(Where::device));
  CHECK_FALSE(m.valid(Where::host));
  CHECK(m.shape() == Shape{2, 3});
  CHECK(m.dtype() == dtypes::int32);
  CHECK(m.get_device().strides() == Strides{4, 8});
  m.get_device().fill(5);
  REQUIRE_GPUHAL_ERROR(m.mark_changed(Where::host), Status::ERROR_INVALID_VALUE, "there is no host side yet");
  const HostArray &h = m.get_host();  // allocated with the device side's layout, and copied
  CHECK(m.has_host());
  CHECK(h.strides() == Strides{4, 8});
  CHECK(h.to_vector<int32_t>() == std::vector<int32_t>(6, 5));
  h.at<int32_t>({1, 2}) = 9;
  m.mark_changed(Where::host);
  CHECK(m.get_device().copy_to_host().at<int32_t>({1, 2}) == 9);

  // From an existing device array (Numba's SmartArray(obj=d_ary, where='gpu')).
  DeviceArray d = to_device(ctx, HostView::of(std::vector<double>{1, 2, 3}));
  MirroredArray w = MirroredArray::from_device(d);
  CHECK(w.get_device().device_pointer() == d.device_pointer());  // shared, not copied
  CHECK(w.get_host().to_vector<double>() == std::vector<double>{1, 2, 3});
  REQUIRE_GPUHAL_ERROR(MirroredArray::from_device(DeviceArray()), Status::ERROR_INVALID_HANDLE, "empty DeviceArray");
  DeviceArray strided = device_array(ctx, {4, 4}, dtypes::float64).view({Slice(), Slice({}, {}, 2)});
  REQUIRE_GPUHAL_ERROR(MirroredArray::from_device(strided), Status::ERROR_NOT_CONTIGUOUS, "device side must be contiguous");
  REQUIRE_GPUHAL_ERROR(MirroredArray::empty(Context(nullptr), {2}, dtypes::float64, 'C', Where::device),
                       Status::ERROR_INVALID_HANDLE, "null context");
}
