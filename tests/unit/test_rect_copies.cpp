// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Rectangular copies: the core's plan (which layouts are one rectangle),
// and each plugin's lowering over its fake vendor library: one cuMemcpy3D
// per strided transfer on cuda, hsa_amd_memory_async_copy_rect on hsa
// where its rules hold (rows one by one where they do not), and the fakes
// holding the vendors' rules (cuda.h's cuMemcpy3D, hsa_ext_amd.h's
// copy_rect). That every backend moves the right bytes is the conformance
// suite's transfers.rect_* and abi.copy_rect_rules.
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "fake_cuda_hooks.hpp"
#include "rect_copy.hpp"
#include "test_support.hpp"

using namespace gpuhal;
using detail::plan_rect;

TEST_CASE("rect plan: sub-tiles, boxes and merged planes are one rectangle, transposes and negative strides are not") {
  // A 1024x1024 float tile of an 8192x8192 array, to a dense one.
  auto p = plan_rect({1024, 1024}, {4096, 4}, {32768, 4}, 4);
  REQUIRE(p);
  CHECK(p->width_bytes == 4096);
  CHECK(p->height == 1024);
  CHECK(p->depth == 1);
  CHECK(p->dst_pitch == 4096);
  CHECK(p->src_pitch == 32768);
  // A box of a 3-D array: three dimensions.
  p = plan_rect({7, 7, 10}, {280, 40, 4}, {640, 64, 4}, 4);
  REQUIRE(p);
  CHECK((p->width_bytes == 40 && p->height == 7 && p->depth == 7 && p->src_pitch == 64 && p->src_slice_pitch == 640));
  // Whole planes: the inner two axes merge into rows of 640 bytes.
  p = plan_rect({4, 10, 16}, {640, 64, 4}, {640, 64, 4}, 4);
  REQUIRE(p);
  CHECK((p->width_bytes == 4 * 640 && p->height == 1 && p->depth == 1));
  // Axes of extent 1 do not count; a 0-d or one-element array is one row.
  p = plan_rect({1, 5, 1}, {999, 4, 7}, {3, 4, 1}, 4);
  REQUIRE(p);
  CHECK((p->width_bytes == 20 && p->height == 1));
  // Not one rectangle: a transpose (no axis contiguous on both sides), a
  // negative or zero stride, four dimensions left after merging, a column
  // of single elements, no elements.
  CHECK_FALSE(plan_rect({8, 8}, {32, 4}, {4, 32}, 4));
  CHECK_FALSE(plan_rect({8, 8}, {32, 4}, {-32, 4}, 4));
  CHECK_FALSE(plan_rect({8, 8}, {32, 4}, {0, 4}, 4));
  CHECK_FALSE(plan_rect({2, 3, 4, 5}, {4000, 1000, 40, 4}, {4000, 1000, 40, 4}, 4));
  CHECK_FALSE(plan_rect({16}, {4}, {32}, 4));
  CHECK_FALSE(plan_rect({0, 4}, {16, 4}, {16, 4}, 4));
  // Rows of one side that would overlap are not a rectangle either.
  CHECK_FALSE(plan_rect({4, 8}, {16, 4}, {32, 4}, 4));
}

#if GPUHAL_TEST_HAVE_CUDA_PLUGIN

TEST_CASE("cuda rect copies: a strided transfer is one cuMemcpy3D, and the fake driver keeps cuMemcpy3D's rules",
          "[cuda]") {
  Runtime rt = test::cuda_runtime();
  REQUIRE(rt.supports(Capability::RectCopies));
  Context ctx = rt.device(0).primary_context();
  std::vector<float> all(64 * 96);
  for (size_t i = 0; i < all.size(); ++i) all[i] = float(i);
  DeviceArray d = to_device(ctx, HostView::of(all, {64, 96}));
  auto calls = test::fake_symbol<uint64_t (*)()>("fake_cuda_memcpy3d_calls");
  const uint64_t before = calls();
  HostArray tile = d.view({Slice(8, 40), Slice(16, 48)}).copy_to_host();
  CHECK(calls() == before + 1);
  const auto got = tile.to_vector<float>();
  for (int64_t y = 0; y < 32; ++y)
    for (int64_t x = 0; x < 32; ++x) REQUIRE(got[size_t(y * 32 + x)] == all[size_t((y + 8) * 96 + x + 16)]);

  // The driver's rules, asked of it directly (cuda.h, cuMemcpy3D), in the
  // device's primary context made current on this thread.
  void *primary = nullptr;
  REQUIRE(test::fake_symbol<int (*)(void **, int)>("cuDevicePrimaryCtxRetain")(&primary, 0) == 0);
  REQUIRE(test::fake_symbol<int (*)(void *)>("cuCtxSetCurrent")(primary) == 0);
  using CopyFn = int (*)(const void *);
  auto memcpy3d = test::fake_symbol<CopyFn>("cuMemcpy3D_v2");
  struct Memcpy3D {  // cuda.h's CUDA_MEMCPY3D (tests/backend/cuda/cuda_api_check.cpp checks the plugin's copy)
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    int srcMemoryType;
    const void *srcHost;
    unsigned long long srcDevice;
    void *srcArray, *reserved0;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    int dstMemoryType;
    void *dstHost;
    unsigned long long dstDevice;
    void *dstArray, *reserved1;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
  };
  std::vector<float> host(32 * 32);
  Memcpy3D p{};
  p.srcMemoryType = 2;  // device
  p.srcDevice = d.memory().device_pointer();
  p.srcPitch = 96 * 4;
  p.dstMemoryType = 1;  // host
  p.dstHost = host.data();
  p.dstPitch = 32 * 4;
  p.WidthInBytes = 32 * 4;
  p.Height = 32;
  p.Depth = 1;
  CHECK(memcpy3d(&p) == 0);
  Memcpy3D bad = p;
  bad.dstPitch = 16;  // "dstPitch must be greater than or equal to WidthInBytes + dstXInBytes"
  CHECK(memcpy3d(&bad) == 1);
  bad = p;
  bad.srcLOD = 1;  // "must be set to 0"
  CHECK(memcpy3d(&bad) == 1);
  bad = p;
  bad.Depth = 2;
  bad.srcHeight = 16;  // "srcHeight must be greater than or equal to Height + srcY"
  bad.dstHeight = 32;
  CHECK(memcpy3d(&bad) == 1);
  bad = p;
  bad.srcPitch = size_t(1) << 31;  // "returns an error if any pitch is greater than the maximum allowed"
  CHECK(memcpy3d(&bad) == 1);
  bad = p;
  bad.srcMemoryType = 3;  // a CUDA array: not modelled, refused
  CHECK(memcpy3d(&bad) == 801);
  CHECK(test::fake_symbol<int (*)(void *)>("cuCtxSetCurrent")(nullptr) == 0);
  CHECK(test::fake_symbol<int (*)(int)>("cuDevicePrimaryCtxRelease_v2")(0) == 0);
}
#endif

#if GPUHAL_TEST_HAVE_HSA_PLUGIN
TEST_CASE("hsa rect copies: aligned regions go to hsa_amd_memory_async_copy_rect, others row by row, same bytes",
          "[hsa]") {
  void *fake = dlopen(GPUHAL_TEST_FAKE_HSA, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(fake);
  auto calls = reinterpret_cast<uint64_t (*)()>(dlsym(fake, "fake_hsa_copy_rect_calls"));
  REQUIRE(calls);
  {
    Config c;
    c.backend = "hsa";
    c.plugin_path = {GPUHAL_TEST_LIB_DIR};
    c.set_option("GPUHAL_HSA_RUNTIME", GPUHAL_TEST_FAKE_HSA);
    Runtime rt = Runtime::load(c);
    REQUIRE(rt.supports(Capability::RectCopies));
    Context ctx = rt.device(0).primary_context();
    std::vector<int32_t> all(48 * 40);
    for (size_t i = 0; i < all.size(); ++i) all[i] = int32_t(i);
    DeviceArray d = to_device(ctx, HostView::of(all, {48, 40}));
    DeviceArray target = device_array(ctx, {48, 40}, dtypes::int32);
    target.memset(0);
    // Device to device, 4-byte aligned: one copy_rect.
    uint64_t before = calls();
    target.view({Slice(4, 20), Slice(3, 30)}).assign(d.view({Slice(4, 20), Slice(3, 30)}));
    CHECK(calls() == before + 1);
    // Into pageable host memory: not reachable by the engine, rows staged.
    before = calls();
    HostArray tile = d.view({Slice(4, 20), Slice(3, 30)}).copy_to_host();
    CHECK(calls() == before);
    // Pinned host memory of the array's strides: one copy_rect.
    HostArray pinned = pinned_array(ctx, {48, 40}, dtypes::int32);
    before = calls();
    d.view({Slice(4, 20), Slice(3, 30)}).copy_to_host(pinned.view().view({Slice(4, 20), Slice(3, 30)}));
    CHECK(calls() == before + 1);
    // Bytes at odd addresses (uint8 elements): rows one by one.
    DeviceArray bytes = d.view(dtypes::uint8).reshape({48, 160});
    DeviceArray bytes_target = device_array(ctx, {48, 160}, dtypes::uint8);
    before = calls();
    bytes_target.view({Slice(1, 9), Slice(3, 50)}).assign(bytes.view({Slice(1, 9), Slice(5, 52)}));
    CHECK(calls() == before);
    const auto t = target.copy_to_host().to_vector<int32_t>();
    const auto h = tile.to_vector<int32_t>();
    for (int64_t y = 0; y < 48; ++y)
      for (int64_t x = 0; x < 40; ++x) {
        const bool in = y >= 4 && y < 20 && x >= 3 && x < 30;
        REQUIRE(t[size_t(y * 40 + x)] == (in ? all[size_t(y * 40 + x)] : 0));
        if (in) {
          REQUIRE(h[size_t((y - 4) * 27 + x - 3)] == all[size_t(y * 40 + x)]);
          REQUIRE(pinned.at<int32_t>({y, x}) == all[size_t(y * 40 + x)]);
        }
      }
    const auto b = bytes_target.view({Slice(1, 9), Slice(3, 50)}).copy_to_host().to_vector<uint8_t>();
    std::vector<uint8_t> raw(all.size() * 4);
    std::memcpy(raw.data(), all.data(), raw.size());
    for (int64_t y = 0; y < 8; ++y)
      for (int64_t x = 0; x < 47; ++x) REQUIRE(b[size_t(y * 47 + x)] == raw[size_t((y + 1) * 160 + x + 5)]);
  }
  dlclose(fake);
}
#endif

#if GPUHAL_TEST_HAVE_CUDA_PLUGIN
TEST_CASE("cuda managed hints: prefetch and advise reach the driver with CUDA's location, and its rules hold",
          "[cuda]") {
  Runtime rt = test::cuda_runtime();
  REQUIRE(rt.supports(Capability::ManagedHints));
  Context ctx = rt.device(0).primary_context();
  DeviceArray m = managed_array(ctx, {1024}, dtypes::float32);
  Stream s = ctx.create_stream();
  auto last = [] {
    int call = 0, advice = 0, type = 0, id = 0;
    uint64_t bytes = 0;
    test::fake_symbol<void (*)(int *, int *, int *, int *, uint64_t *)>("fake_cuda_last_hint")(&call, &advice, &type,
                                                                                               &id, &bytes);
    return std::vector<int64_t>{call, advice, type, id, int64_t(bytes)};
  };
  prefetch(m, Location::device(0), s);
  CHECK(last() == std::vector<int64_t>{1, 0, 1, 0, 4096});  // CU_MEM_LOCATION_TYPE_DEVICE, device 0
  prefetch(m.view({Slice(256, 512)}), Location::host(), s);
  CHECK(last() == std::vector<int64_t>{1, 0, 2, 0, 1024});  // CU_MEM_LOCATION_TYPE_HOST, the view's span
  advise(m, Advice::SetAccessedBy, Location::device(0));
  CHECK(last() == std::vector<int64_t>{2, 5, 1, 0, 4096});
  // The range forms: the bytes named, nothing past the memory's end.
  prefetch(m.memory(), 1000, 24, Location::device(0), s);
  CHECK(last() == std::vector<int64_t>{1, 0, 1, 0, 24});
  advise(m.memory(), 4000, 96, Advice::SetReadMostly);
  CHECK(last() == std::vector<int64_t>{2, 1, 2, 0, 96});
  const std::vector<int64_t> before = last();
  prefetch(m.memory(), 4096, 0, Location::host(), s);  // empty: nothing sent
  CHECK(last() == before);
  REQUIRE_GPUHAL_ERROR(prefetch(m.memory(), 4000, 97, Location::host(), s), Status::ERROR_INDEX_OUT_OF_RANGE,
                       "reach past the memory's 4096");
  REQUIRE_GPUHAL_ERROR(advise(m.memory(), UINT64_MAX, 2, Advice::SetReadMostly), Status::ERROR_INDEX_OUT_OF_RANGE,
                       "advise");
  REQUIRE_GPUHAL_ERROR(prefetch(DeviceMemory(), 0, 0, Location::host(), s), Status::ERROR_INVALID_HANDLE,
                       "empty memory");
  DeviceArray plain_bytes = device_array(ctx, {64}, dtypes::uint8);
  REQUIRE_GPUHAL_ERROR(advise(plain_bytes.memory(), 0, 64, Advice::SetReadMostly), Status::ERROR_INVALID_VALUE,
                       "not a managed array");
  CHECK(last() == before);
  s.synchronize();
  // A device without CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS (the
  // fake reads the setting at each query): refused by name, not sent.
  setenv("FAKE_CUDA_NO_CONCURRENT_MANAGED_ACCESS", "1", 1);
  try {
    prefetch(m, Location::device(0), s);
    FAIL("a prefetch to a device without concurrent managed access succeeded");
  } catch (const Error &e) {
    CHECK(e.status() == Status::ERROR_NOT_SUPPORTED);
    CHECK(std::string(e.what()).find("CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS") != std::string::npos);
  }
  prefetch(m, Location::host(), s);  // the host is always a location
  unsetenv("FAKE_CUDA_NO_CONCURRENT_MANAGED_ACCESS");
  s.synchronize();
  // The driver's own rule, asked directly: device memory is not managed.
  void *primary = nullptr;
  REQUIRE(test::fake_symbol<int (*)(void **, int)>("cuDevicePrimaryCtxRetain")(&primary, 0) == 0);
  REQUIRE(test::fake_symbol<int (*)(void *)>("cuCtxSetCurrent")(primary) == 0);
  struct Location2 {
    int type, id;
  };
  auto raw_prefetch =
      test::fake_symbol<int (*)(unsigned long long, size_t, Location2, unsigned, void *)>("cuMemPrefetchAsync_v2");
  DeviceArray plain = device_array(ctx, {1024}, dtypes::float32);
  CHECK(raw_prefetch(plain.memory().device_pointer(), 4096, Location2{1, 0}, 0, nullptr) == 1);
  CHECK(raw_prefetch(m.memory().device_pointer(), 4096, Location2{1, 0}, 1, nullptr) == 1);   // flags must be 0
  CHECK(raw_prefetch(m.memory().device_pointer(), 4096, Location2{1, 7}, 0, nullptr) == 101);  // no device 7
  CHECK(test::fake_symbol<int (*)(void *)>("cuCtxSetCurrent")(nullptr) == 0);
  CHECK(test::fake_symbol<int (*)(int)>("cuDevicePrimaryCtxRelease_v2")(0) == 0);
}
#endif
