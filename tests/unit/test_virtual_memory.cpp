// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Virtual memory: what the conformance suite's memory.virtual_* checks do
// not see -- lifetimes across a reset, the memory given back, the host
// backend's read-only refusal, and the fake driver holding cuda.h's rules.
#include <dlfcn.h>

#include <cstdint>
#include <vector>

#include "fake_cuda_hooks.hpp"
#include "test_support.hpp"

using namespace gpuhal;

TEST_CASE("virtual memory on host: memory is counted while mapped or held and given back after", "[vm]") {
  Context ctx = test::host_context({{"GPUHAL_HOST_MEMORY_LIMIT", "64M"}});
  const uint64_t before = ctx.memory_info().free;
  const uint64_t m = vm_granularity(ctx).minimum;
  {
    VirtualRange r = VirtualRange::reserve(ctx, 32 << 20);
    CHECK(ctx.memory_info().free == before);  // addresses only
    PhysicalMemory p = PhysicalMemory::create(ctx, 32 << 20);
    CHECK(ctx.memory_info().free == before - (32 << 20));
    REQUIRE_GPUHAL_ERROR(PhysicalMemory::create(ctx, 48 << 20), Status::ERROR_OUT_OF_MEMORY, "memory limit");
    r.map(0, 32 << 20, p);
    p = PhysicalMemory();  // the mapping still holds it
    CHECK(ctx.memory_info().free == before - (32 << 20));
    // Read-only is not offered here: refused by name, nothing changed.
    REQUIRE_GPUHAL_ERROR(r.set_access(0, 32 << 20, VmAccess::Read), Status::ERROR_NOT_SUPPORTED, "READ_WRITE");
    r.set_access(0, 32 << 20, VmAccess::ReadWrite);
    DeviceArray a = r.array(0, {int64_t(m)}, dtypes::uint8);
    a.memset(7);
    CHECK(a.copy_to_host().to_vector<uint8_t>() == std::vector<uint8_t>(size_t(m), 7));
    // Access taken away: copies refuse the range instead of faulting.
    r.set_access(0, 32 << 20, VmAccess::None);
    REQUIRE_GPUHAL_ERROR(a.memset(1), Status::ERROR_INVALID_VALUE, "not inside one device allocation");
  }
  CHECK(ctx.memory_info().free == before);  // unmapped, released and freed with the last handle
}

TEST_CASE("virtual memory: handles outlive a reset and refuse use by name, and nothing leaks", "[vm]") {
  Context ctx = test::host_context({{"GPUHAL_HOST_MEMORY_LIMIT", "64M"}});
  const uint64_t before = ctx.memory_info().free;
  const uint64_t m = vm_granularity(ctx).minimum;
  VirtualRange r = VirtualRange::reserve(ctx, 4 * m);
  PhysicalMemory p = PhysicalMemory::create(ctx, 2 * m);
  r.map(0, 2 * m, p);
  r.set_access(0, 2 * m, VmAccess::ReadWrite);
  DeviceArray a = r.array(0, {int64_t(2 * m)}, dtypes::uint8);
  GrowableDeviceArray g(ctx, dtypes::float32, 1 << 20);
  g.resize(1000);
  ctx.reset();
  REQUIRE_GPUHAL_ERROR(r.map(2 * m, m, p), Status::ERROR_CONTEXT_DESTROYED, "");
  REQUIRE_GPUHAL_ERROR(a.memset(0), Status::ERROR_CONTEXT_DESTROYED, "");
  REQUIRE_GPUHAL_ERROR(g.resize(2000), Status::ERROR_CONTEXT_DESTROYED, "");
  a = DeviceArray();
  r = VirtualRange();
  p = PhysicalMemory();
  g = GrowableDeviceArray();
  CHECK(ctx.memory_info().free == before);
  // An empty handle names the call.
  REQUIRE_GPUHAL_ERROR(VirtualRange().map(0, m, PhysicalMemory()), Status::ERROR_INVALID_HANDLE, "VirtualRange::map");
  REQUIRE_GPUHAL_ERROR(GrowableDeviceArray().array(), Status::ERROR_INVALID_HANDLE, "empty GrowableDeviceArray");
}

#if GPUHAL_TEST_HAVE_CUDA_PLUGIN
TEST_CASE("cuda virtual memory: the fake driver keeps cuMemMap's, cuMemUnmap's and cuMemSetAccess's rules", "[cuda][vm]") {
  Runtime rt = test::cuda_runtime();
  REQUIRE(rt.supports(Capability::VirtualMemory));
  Context ctx = rt.device(0).primary_context();
  const uint64_t m = vm_granularity(ctx).minimum;
  CHECK(m == uint64_t(2) << 20);  // an H100's
  VirtualRange r = VirtualRange::reserve(ctx, 4 * m);
  PhysicalMemory p = PhysicalMemory::create(ctx, 2 * m);
  // "ptr, size, and offset must be a multiple of" the granularity: the core
  // says so by name before the driver sees the call (the driver's own
  // refusal, checked directly below, gives no reason).
  REQUIRE_GPUHAL_ERROR(r.map(m / 2, m, p), Status::ERROR_INVALID_VALUE, "multiple of the minimum granularity");
  REQUIRE_GPUHAL_ERROR(PhysicalMemory::create(ctx, m / 2), Status::ERROR_INVALID_VALUE,
                       "multiple of the minimum granularity");
  REQUIRE_GPUHAL_ERROR(VirtualRange::reserve(ctx, m, m / 2), Status::ERROR_INVALID_VALUE, "the alignment");
  REQUIRE_GPUHAL_ERROR(r.map(0, 2 * m, p, m), Status::ERROR_INVALID_VALUE, "reaches past the physical memory");
  r.map(0, 2 * m, p);
  REQUIRE_GPUHAL_ERROR(r.map(m, m, p), Status::ERROR_INVALID_VALUE, "overlaps a mapping");
  // "cuMemUnmap cannot unmap a sub-range"; cuMemSetAccess wants "a fully mapped address range".
  REQUIRE_GPUHAL_ERROR(r.unmap(0, m), Status::ERROR_INVALID_VALUE, "unmapped whole");
  REQUIRE_GPUHAL_ERROR(r.set_access(0, 3 * m, VmAccess::ReadWrite), Status::ERROR_INVALID_VALUE, "cuMemSetAccess");
  // Without access the driver's copies refuse the memory (asked directly).
  void *primary = nullptr;
  REQUIRE(test::fake_symbol<int (*)(void **, int)>("cuDevicePrimaryCtxRetain")(&primary, 0) == 0);
  REQUIRE(test::fake_symbol<int (*)(void *)>("cuCtxSetCurrent")(primary) == 0);
  {
    // The fake driver's own rules, asked directly.
    struct Prop {
      int type, handle_types, location_type, location_id;
      void *win32;
      unsigned char flags[8];
    } prop{1, 0, 1, 0, nullptr, {}};
    auto create = test::fake_symbol<int (*)(unsigned long long *, size_t, const Prop *, unsigned long long)>(
        "cuMemCreate");
    auto map = test::fake_symbol<int (*)(unsigned long long, size_t, size_t, unsigned long long, unsigned long long)>(
        "cuMemMap");
    unsigned long long h = 0;
    CHECK(create(&h, m / 2, &prop, 0) == 1);  // CUDA_ERROR_INVALID_VALUE
    REQUIRE(create(&h, 2 * m, &prop, 0) == 0);
    CHECK(map(r.base() + 2 * m + m / 2, m, 0, h, 0) == 1);
    CHECK(test::fake_symbol<int (*)(unsigned long long)>("cuMemRelease")(h) == 0);
  }
  auto memset8 = test::fake_symbol<int (*)(unsigned long long, unsigned char, size_t)>("cuMemsetD8_v2");
  CHECK(memset8(r.base(), 1, 64) == 1);
  r.set_access(0, 2 * m, VmAccess::ReadWrite);
  CHECK(memset8(r.base(), 1, 64) == 0);
  CHECK(test::fake_symbol<int (*)(void *)>("cuCtxSetCurrent")(nullptr) == 0);
  CHECK(test::fake_symbol<int (*)(int)>("cuDevicePrimaryCtxRelease_v2")(0) == 0);
  r.unmap(0, 2 * m);
}
#endif

TEST_CASE("virtual memory on host: physical memory beyond the device's total is out of memory, as cuMemCreate's",
          "[vm][errors]") {
  // A memfd is sparse: without the check any size was taken, petabytes too.
  Context ctx = test::host_context();
  const uint64_t m = vm_granularity(ctx).minimum;
  const uint64_t total = ctx.memory_info().total;
  const uint64_t beyond = (total / m + 1) * m;
  REQUIRE_GPUHAL_ERROR(PhysicalMemory::create(ctx, beyond), Status::ERROR_OUT_OF_MEMORY, "total memory");
  REQUIRE_GPUHAL_ERROR(PhysicalMemory::create(ctx, m << 40), Status::ERROR_OUT_OF_MEMORY, "total memory");
  CHECK(PhysicalMemory::create(ctx, m).size() == m);  // and the context is as it was
}
