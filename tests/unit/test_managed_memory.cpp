// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Managed arrays (Numba's cuda.managed_array) on the host backend, over the
// fake CUDA driver (cuMemAllocManaged's rules, quoted in
// tests/fakes/cuda/memory.cpp) and over the fake HSA runtime.
#include <stdlib.h>

#include <numeric>

#include "fake_cuda_hooks.hpp"
#include "test_support.hpp"

using namespace gpuhal;

TEST_CASE("managed arrays are one memory for host and device on the host backend", "[managed]") {
  Context ctx = test::host_context();
  REQUIRE(ctx.device().runtime().supports(Capability::ManagedMemory));
  DeviceArray m = managed_array(ctx, {3, 4}, dtypes::int32);
  CHECK(m.is_managed());
  CHECK(m.strides() == Strides{16, 4});
  HostView h = m.host_view();
  CHECK(h.writeable());
  CHECK(h.data() == reinterpret_cast<void *>(uintptr_t(m.device_pointer())));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) *static_cast<int32_t *>(h.element({i, j})) = i * 10 + j;
  // The device sees the host's writes, and the host the device's.
  CHECK(m.copy_to_host().at<int32_t>({2, 3}) == 23);
  m.view({1}).fill(-1);
  CHECK(*static_cast<int32_t *>(m.host_view().element({1, 2})) == -1);
  // Views share the memory and stay managed; *_like keeps the order.
  CHECK(m.T().host_view().strides() == Strides{4, 16});
  DeviceArray f = managed_array_like(m.T());
  CHECK(f.is_managed());
  CHECK(f.strides() == Strides{4, 16});
  std::vector<double> src(6, 1.5);
  CHECK(managed_array_like(ctx, HostView::of(src, {2, 3})).shape() == Shape{2, 3});
  // An empty managed array has nothing to view but a shape.
  CHECK(managed_array(ctx, {0, 3}).host_view().shape() == Shape{0, 3});
}

TEST_CASE("managed arrays refuse bad inputs and device memory has no host view", "[managed][errors]") {
  Context ctx = test::host_context();
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {4}).host_view(), Status::ERROR_INVALID_VALUE, "not a managed array");
  REQUIRE_GPUHAL_ERROR(managed_array(Context(nullptr), {4}), Status::ERROR_INVALID_HANDLE, "null context");
  REQUIRE_GPUHAL_ERROR(managed_array(ctx, {-1}), Status::ERROR_INVALID_SHAPE, "negative dimension");
  REQUIRE_GPUHAL_ERROR(managed_array(ctx, {2}, dtypes::float64, {}, 'K'), Status::ERROR_INVALID_VALUE, "order");
  REQUIRE_GPUHAL_ERROR(DeviceArray().host_view(), Status::ERROR_INVALID_HANDLE, "empty DeviceArray");
}

TEST_CASE("managed arrays beyond the device's memory are out of memory, naming the call", "[managed][errors]") {
  // More than the device has: the out-of-memory rule of device memory.
  Context small = test::host_context({{"GPUHAL_HOST_MEMORY_LIMIT", "1M"}});
  REQUIRE_GPUHAL_ERROR(managed_array(small, {int64_t(1) << 20}, dtypes::float64), Status::ERROR_OUT_OF_MEMORY,
                       "mem_alloc_managed");
  CHECK(small.pending_deallocations() == 0);
}

#if GPUHAL_TEST_HAVE_CUDA_PLUGIN
TEST_CASE("cuda: managed arrays come from cuMemAllocManaged and go with cuMemFree", "[managed][cuda]") {
  Runtime rt = test::cuda_runtime();
  REQUIRE(rt.supports(Capability::ManagedMemory));
  Context ctx = rt.device(0).primary_context();
  {
    DeviceArray m = managed_array(ctx, {256}, dtypes::float32);
    CHECK(m.is_managed());
    HostView h = m.host_view();
    for (int i = 0; i < 256; ++i) *static_cast<float *>(h.element({i})) = float(i);
    CHECK(m.copy_to_host().at<float>({255}) == 255.0f);  // the driver reads what the host wrote
  }
  ctx.flush_deallocations();
  auto managed_live = test::fake_symbol<long (*)()>("fake_cuda_managed_allocations");
  CHECK(managed_live() == 0);  // freed with cuMemFree
}

TEST_CASE("cuda: a device without managed memory says so by name", "[managed][cuda][errors]") {
  // cuda.h: "If the device doesn't support allocating managed memory,
  // CUDA_ERROR_NOT_SUPPORTED is returned" (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY 0).
  setenv("FAKE_CUDA_NO_MANAGED_MEMORY", "1", 1);
  Context ctx = test::cuda_runtime().device(0).primary_context();
  REQUIRE(ctx.device().runtime().supports(Capability::ManagedMemory));  // the backend has it; this device not
  REQUIRE_GPUHAL_ERROR(managed_array(ctx, {16}), Status::ERROR_NOT_SUPPORTED, "CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY");
  unsetenv("FAKE_CUDA_NO_MANAGED_MEMORY");
  // The context is still usable.
  CHECK(device_array(ctx, {16}).size() == 16);
}
#endif
