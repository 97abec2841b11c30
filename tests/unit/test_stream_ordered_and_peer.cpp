// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Stream-ordered allocation (Context::allocate_async) and peer access, on
// the host backend and on the cuda backend over the fake driver.
#include <dlfcn.h>
#include <stdlib.h>

#include "test_support.hpp"

using namespace gpuhal;

namespace {

// The same checks on any backend.
void check_stream_ordered(const Context &ctx) {
  REQUIRE(ctx.supports(Capability::StreamOrderedMemory));
  const uint64_t free_before = ctx.memory_info().free;
  Stream s = ctx.create_stream();
  {
    DeviceMemory m = ctx.allocate_async(4096, s);
    DeviceArray a(m, Layout::make({1024}, 4), dtypes::int32);
    a.memset(7, s);
    HostArray h = a.copy_to_host(s);
    s.synchronize();
    CHECK(h.to_vector<int32_t>()[1023] == 0x07070707);
    CHECK(ctx.pending_deallocations() == 0);
  }  // freed on `s`, without a device synchronisation or the deferred queue
  CHECK(ctx.pending_deallocations() == 0);
  s.synchronize();
  CHECK(ctx.memory_info().free == free_before);

  REQUIRE_GPUHAL_ERROR(ctx.allocate_async(0, s), Status::ERROR_INVALID_VALUE, "positive");
  REQUIRE_GPUHAL_ERROR(ctx.allocate_async(UINT64_MAX, s), Status::ERROR_SIZE_OVERFLOW, "largest size");
  REQUIRE_GPUHAL_ERROR(ctx.allocate_async(16, Stream(nullptr)), Status::ERROR_INVALID_HANDLE, "empty");
}

}  // namespace

TEST_CASE("stream-ordered allocation on the host backend") {
  Context ctx = test::host_context({{"GPUHAL_HOST_MEMORY_LIMIT", "64M"}});  // exact free-memory figures
  check_stream_ordered(ctx);
  SECTION("the memory outlives its stream handle and survives nothing after a reset") {
    DeviceMemory m = ctx.allocate_async(64, ctx.create_stream());  // the memory keeps the stream
    ctx.reset();
    m = DeviceMemory();  // freed by the reset: nothing to do
    CHECK(ctx.memory_info().free == ctx.memory_info().total);
  }
  SECTION("a stream of another context is refused") {
    Runtime other = test::host_runtime({{"GPUHAL_HOST_MEMORY_LIMIT", "64M"}});
    Stream foreign = other.device(0).primary_context().create_stream();
    REQUIRE_GPUHAL_ERROR(ctx.allocate_async(16, foreign), Status::ERROR_INVALID_HANDLE, "another context");
  }
}

TEST_CASE("stream-ordered allocation on the cuda backend uses a pool of its own, never the device's default pool") {
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  void *fake = dlopen(GPUHAL_TEST_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(fake);
  auto default_threshold = reinterpret_cast<uint64_t (*)(int)>(dlsym(fake, "fake_cuda_release_threshold"));
  auto default_idle = reinterpret_cast<uint64_t (*)(int)>(dlsym(fake, "fake_cuda_pool_idle"));
  auto created = reinterpret_cast<int (*)(int, uint64_t *, uint64_t *)>(dlsym(fake, "fake_cuda_created_pools"));
  REQUIRE(default_threshold);
  REQUIRE(default_idle);
  REQUIRE(created);
  check_stream_ordered(ctx);
  // The context's own pool has the threshold; the default pool, which other
  // libraries share, keeps the driver's 0 and holds nothing of ours.
  uint64_t idle = 0, threshold = 0;
  CHECK(created(0, &idle, &threshold) == 1);
  CHECK(threshold == rt.device(0).properties().total_memory / 2);
  CHECK(default_threshold(0) == 0);
  CHECK(default_idle(0) == 0);
  {
    Stream s = ctx.create_stream();
    DeviceMemory m = ctx.allocate_async(1 << 20, s);
    m = DeviceMemory();
    s.synchronize();
  }
  created(0, &idle, nullptr);
  CHECK(idle >= (uint64_t(1) << 20));  // kept for reuse, under the threshold
  CHECK(default_idle(0) == 0);
  // A reset destroys the old context's pool (the new context has one).
  ctx.reset();
  CHECK(created(0, nullptr, nullptr) == 1);
  dlclose(fake);
}

TEST_CASE("peer access between host devices") {
  Runtime rt = test::host_runtime({{"GPUHAL_HOST_DEVICES", "2"}});
  REQUIRE(rt.supports(Capability::PeerAccess));
  Device d0 = rt.device(0), d1 = rt.device(1);
  CHECK(d0.can_access_peer(d1));
  CHECK_FALSE(d0.can_access_peer(d0));
  Context c0 = d0.primary_context(), c1 = d1.primary_context();
  c0.enable_peer_access(c1);
  c0.enable_peer_access(c1);  // again: fine
  REQUIRE_GPUHAL_ERROR(c0.enable_peer_access(c0), Status::ERROR_INVALID_VALUE, "another device");
  REQUIRE_GPUHAL_ERROR(c0.enable_peer_access(Context(nullptr)), Status::ERROR_INVALID_HANDLE, "null peer");
  Runtime other = test::host_runtime({{"GPUHAL_HOST_DEVICES", "2"}});
  CHECK_FALSE(d0.can_access_peer(other.device(1)));
  // Device-to-device copies across devices.
  std::vector<float> v(256, 2.5f);
  DeviceArray a = to_device(c0, HostView::of(v));
  DeviceArray b = device_array(c1, {256}, dtypes::float32);
  b.copy_from_device(a);
  CHECK(b.copy_to_host().to_vector<float>() == v);
}

TEST_CASE("peer access on the cuda backend over the fake driver") {
  setenv("FAKE_CUDA_DEVICES", "2", 1);
  Runtime rt = test::cuda_runtime();
  REQUIRE(rt.device_count() == 2);
  CHECK(rt.device(0).can_access_peer(rt.device(1)));
  CHECK_FALSE(rt.device(1).can_access_peer(rt.device(1)));
  Context c0 = rt.device(0).primary_context(), c1 = rt.device(1).primary_context();
  c0.enable_peer_access(c1);
  c0.enable_peer_access(c1);  // CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED is success
  c1.enable_peer_access(c0);
}

TEST_CASE("backends without the entries report ERROR_NOT_SUPPORTED") {
  Config c;
  c.backend = test::fake("two");
  Runtime rt = Runtime::load(c);
  CHECK_FALSE(rt.supports(Capability::StreamOrderedMemory));
  CHECK_FALSE(rt.supports(Capability::PeerAccess));
  CHECK_FALSE(rt.device(0).can_access_peer(rt.device(1)));
  Context c0 = rt.device(0).primary_context();
  REQUIRE_GPUHAL_ERROR(c0.allocate_async(16, c0.create_stream()), Status::ERROR_NOT_SUPPORTED,
                       "no stream-ordered allocation");
  REQUIRE_GPUHAL_ERROR(c0.enable_peer_access(rt.device(1).primary_context()), Status::ERROR_NOT_SUPPORTED,
                       "no peer access");
}
