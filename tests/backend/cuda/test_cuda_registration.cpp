// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's host registrations over the fake CUDA driver
// (tests/fakes/cuda/), which refuses what the real driver refuses: a second
// registration of any byte, any part of memory it pinned itself, and a copy
// that spans two registrations as one.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fake_cuda_hooks.hpp"
#include "test_support.hpp"

using namespace gpuhal;
using test::cuda_runtime;
using test::fake_pageable_h2d_bytes;
using test::fake_registered_ranges;

#if GPUHAL_TEST_HAVE_CUDA_PLUGIN

TEST_CASE("cuda: overlapping and nested registrations never reach the driver as overlaps, and all end") {
  // The driver refuses a second registration of any byte
  // (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED); the core registers only the
  // bytes no live registration covers and counts the pieces.
  Runtime rt = cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  const int before = fake_registered_ranges();
  std::vector<float> v(1000, 1.0f);
  {
    HostRegistration whole = register_host(ctx, HostView::of(v).view({Slice(0, 600)}));
    HostRegistration tail = register_host(ctx, HostView::of(v).view({Slice(400, 1000)}));  // partly overlaps
    HostRegistration inner = register_host(ctx, HostView::of(v).view({Slice(100, 200)}));  // nested
    {
      PinnedScope pin(ctx, {HostView::of(v)});  // covers all three
      // A mapped view inside one piece: a driver copy takes one registration
      // (docs/memory.md, registered host memory).
      MappedScope mapped(ctx, {HostView::of(v).view({Slice(400, 600)})});
      CHECK(mapped[0].copy_to_host().to_vector<float>() == std::vector<float>(200, 1.0f));
    }
    CHECK(fake_registered_ranges() == before + 2);  // [0, 600) and [600, 1000): each byte once
    whole.release();
    CHECK(fake_registered_ranges() == before + 2);  // [0, 600) is still used by inner and tail
    tail.release();
    CHECK(fake_registered_ranges() == before + 1);
    // The bytes inner covers are still registered: transfers through them work.
    Stream s = ctx.create_stream();
    DeviceArray d = to_device(ctx, HostView::of(v).view({Slice(100, 200)}), s);
    s.synchronize();
    CHECK(d.copy_to_host().to_vector<float>() == std::vector<float>(100, 1.0f));
  }
  CHECK(fake_registered_ranges() == before);
}

TEST_CASE("cuda: registering any part of pinned memory is refused as already registered, and changes nothing") {
  // The driver refuses it with CUDA_ERROR_INVALID_VALUE (fake_cuda's
  // cuMemHostRegister, as an H100 did); the plugin says what it is, as the
  // host and hsa plugins do.
  Runtime rt = cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  const int before = fake_registered_ranges();
  HostArray p = pinned_array(ctx, {1024}, dtypes::float32);
  std::fill_n(static_cast<float *>(p.data()), 1024, 3.0f);
  REQUIRE_GPUHAL_ERROR(register_host(ctx, p.view()), Status::ERROR_ALREADY_REGISTERED, "pinned");
  REQUIRE_GPUHAL_ERROR(register_host(ctx, p.view().view({Slice(100, 200)})), Status::ERROR_ALREADY_REGISTERED,
                       "pinned");
  CHECK(fake_registered_ranges() == before + 1);  // the pinned array's own pages (core/host_memory.cpp)
  DeviceArray d = to_device(ctx, p.view());
  CHECK(d.copy_to_host().to_vector<float>() == std::vector<float>(1024, 3.0f));
  // The driver's own pinned memory (write-combined: cuMemHostAlloc) too.
  MappedArray w = mapped_array(ctx, {1024}, dtypes::float32, {}, 'C', false, true);
  REQUIRE_GPUHAL_ERROR(register_host(ctx, w.host.view().view({Slice(10, 20)})), Status::ERROR_ALREADY_REGISTERED,
                       "pinned");
  CHECK(fake_registered_ranges() == before + 1);
}

TEST_CASE("cuda: a copy over partly registered memory or over two registrations is cut where the driver wants it") {
  // The driver refuses a copy whose host range is partly registered or spans
  // two registrations (CUDA_ERROR_INVALID_VALUE; tests/fakes/cuda/fake_cuda.hpp,
  // host_range_mixed, seen on an H100): the plugin copies each piece alone.
  Runtime rt = cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  std::vector<float> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.5f;
  Stream s = ctx.create_stream();
  {
    // Two pieces, [0, 600) and [600, 1000), and a range reaching past both.
    HostRegistration head = register_host(ctx, HostView::of(v).view({Slice(0, 600)}));
    HostRegistration tail = register_host(ctx, HostView::of(v).view({Slice(400, 900)}));
    DeviceArray d = to_device(ctx, HostView::of(v), s);  // [0, 600) [600, 900) pinned, [900, 1000) not
    std::vector<float> out(1000, -1.0f);
    HostRegistration part = register_host(ctx, HostView::of(out).view({Slice(100, 300)}));
    d.copy_to_host(HostView::of(out), s);  // three pieces
    s.synchronize();
    CHECK(out == v);
    std::fill(out.begin(), out.end(), -1.0f);
    DeviceArray e = device_array(ctx, {1000}, dtypes::float32);
    e.copy_from_host(HostView::of(v));  // synchronous, the same pieces
    e.copy_to_host(HostView::of(out));
    CHECK(out == v);
  }
  // Pageable pieces of 16 MiB and more still go through the plugin's staging.
  const size_t mib = size_t(1) << 20;
  std::vector<uint8_t> big(33 * mib + 100);
  for (size_t i = 0; i < big.size(); ++i) big[i] = uint8_t(i * 13 + (i >> 16));
  HostRegistration middle = register_host(ctx, HostView::of(big).view({Slice(int64_t(16 * mib), int64_t(17 * mib))}));
  const uint64_t before = fake_pageable_h2d_bytes();
  DeviceArray d = to_device(ctx, HostView::of(big), s);
  s.synchronize();
  CHECK(fake_pageable_h2d_bytes() == before);  // [0, 16 MiB) and [17 MiB, end) were staged, the middle went straight
  CHECK(d.copy_to_host().to_vector<uint8_t>() == big);
}

#endif
