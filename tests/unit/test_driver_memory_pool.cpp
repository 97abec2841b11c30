// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// MemoryPoolKind::Driver: a MemoryPool backed by a pool the backend makes
// for it alone (plugin ABI 1.16). Refused by capability on the host
// backend; over the fake CUDA driver (which keeps cuda.h's pool rules in
// tests/fakes/cuda/pool_and_peer.cpp): a pool of its own beside the
// context's, the driver's statistics, trim and threshold, stream-ordered
// frees, resets, the pool as the context's memory manager, IPC of its
// memory (refused by name where the device has no mempool IPC), and
// MemoryPool::free's bad input on both kinds.
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "test_support.hpp"

using namespace gpuhal;

namespace {

MemoryPoolOptions driver_kind(uint64_t threshold = UINT64_MAX) {
  MemoryPoolOptions o;
  o.kind = MemoryPoolKind::Driver;
  o.release_threshold = threshold;
  return o;
}

// Writes `n` bytes of `value` into `m` and reads them back.
std::vector<uint8_t> round_trip(const DeviceMemory &m, uint64_t n, uint8_t value) {
  DeviceArray view(m, Layout::make({int64_t(n)}, 1), dtypes::uint8);
  std::vector<uint8_t> bytes(n, value);
  view.copy_from_host(HostView::of(bytes));
  return view.copy_to_host().to_vector<uint8_t>();
}

}  // namespace

TEST_CASE("driver memory pool: the host backend has none, and says which capability is missing", "[memory_pool]") {
  Context ctx = test::host_context();
  CHECK_FALSE(ctx.supports(Capability::DriverMemoryPools));
  REQUIRE_GPUHAL_ERROR(MemoryPool(ctx, driver_kind()), Status::ERROR_NOT_SUPPORTED, "Capability::DriverMemoryPools");
  MemoryPoolOptions bad;
  bad.kind = static_cast<MemoryPoolKind>(9);
  REQUIRE_GPUHAL_ERROR(MemoryPool(ctx, bad), Status::ERROR_INVALID_VALUE, "unknown kind 9");
  CHECK(MemoryPool(ctx).kind() == MemoryPoolKind::Caching);
  REQUIRE_GPUHAL_ERROR(MemoryPool().kind(), Status::ERROR_INVALID_HANDLE, "MemoryPool::kind");
}

TEST_CASE("memory pool free: bad input is refused by name and changes nothing, on both kinds", "[memory_pool]") {
  Context ctx = test::host_context();
  MemoryPool pool(ctx), other(ctx);
  Stream s = ctx.create_stream();
  DeviceMemory empty;
  REQUIRE_GPUHAL_ERROR(pool.free(empty, s), Status::ERROR_INVALID_HANDLE, "empty memory handle");
  DeviceMemory plain = ctx.allocate(256);
  REQUIRE_GPUHAL_ERROR(pool.free(plain, s), Status::ERROR_INVALID_VALUE, "not allocated from this pool");
  CHECK(plain);  // the caller's handle is left as it was
  DeviceMemory mine = other.allocate(256, s);
  REQUIRE_GPUHAL_ERROR(pool.free(mine, s), Status::ERROR_INVALID_VALUE, "not allocated from this pool");
  Context foreign = test::host_context();
  REQUIRE_GPUHAL_ERROR(other.free(mine, foreign.default_stream()), Status::ERROR_INVALID_VALUE, "another context");
  REQUIRE_GPUHAL_ERROR(other.free(mine, Stream()), Status::ERROR_INVALID_VALUE, "the stream is empty");
  REQUIRE_GPUHAL_ERROR(MemoryPool().free(mine, s), Status::ERROR_INVALID_HANDLE, "MemoryPool::free");
  CHECK(other.stats().allocations == 1);
  other.free(mine, s);
  CHECK_FALSE(mine);
  CHECK(other.stats().allocations == 0);
}

TEST_CASE("memory pool free: a caching pool's block freed on another stream serves that stream at once",
          "[memory_pool]") {
  Context ctx = test::host_context();
  MemoryPool pool(ctx);
  Stream a = ctx.create_stream(StreamKind::NonBlocking), b = ctx.create_stream(StreamKind::NonBlocking);
  DeviceMemory m = pool.allocate(4096, a);
  const DevicePointer p = m.device_pointer();
  DeviceMemory second = m;  // another handle keeps it
  pool.free(m, b);
  CHECK(pool.stats().allocations == 1);
  second = DeviceMemory();
  CHECK(pool.stats().allocations == 0);
  CHECK(pool.allocate(4096, b).device_pointer() == p);  // b's own block now
  // Memory of a context reset since: refused, and the new block at its
  // address keeps its own stream.
  DeviceMemory stale = pool.allocate(4096, a);
  ctx.reset();
  Stream a2 = ctx.create_stream(StreamKind::NonBlocking);
  DeviceMemory fresh = pool.allocate(4096, a2);
  REQUIRE_GPUHAL_ERROR(pool.free(stale, ctx.default_stream()), Status::ERROR_CONTEXT_DESTROYED, "MemoryPool::free");
  CHECK(stale);
  CHECK(pool.stats().allocations == 1);
}

#ifdef GPUHAL_TEST_FAKE_CUDA
TEST_CASE("driver memory pool: cuda makes a pool of its own, with the driver's statistics, trim and threshold",
          "[memory_pool][cuda]") {
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  REQUIRE(ctx.supports(Capability::DriverMemoryPools));
  void *fake = dlopen(GPUHAL_TEST_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(fake);
  auto created = reinterpret_cast<int (*)(int, uint64_t *, uint64_t *)>(dlsym(fake, "fake_cuda_created_pools"));
  auto default_idle = reinterpret_cast<uint64_t (*)(int)>(dlsym(fake, "fake_cuda_pool_idle"));
  REQUIRE(created);
  REQUIRE(default_idle);
  const int before = created(0, nullptr, nullptr);
  {
    MemoryPool pool(ctx, driver_kind());
    CHECK(pool.kind() == MemoryPoolKind::Driver);
    CHECK(created(0, nullptr, nullptr) == before + 1);  // beside the context's own, never the default pool
    Stream s = ctx.create_stream(StreamKind::NonBlocking);
    DeviceMemory m = pool.allocate(1000, s);
    CHECK(round_trip(m, 1000, 5) == std::vector<uint8_t>(1000, 5));
    MemoryPoolStats st = pool.stats();
    CHECK(st.used_bytes == 1000);  // the driver's bytes, not rounded by gpuhal
    CHECK(st.reserved_bytes == 1000);
    CHECK(st.peak_used_bytes == 1000);
    CHECK(st.allocations == 1);
    CHECK(st.hits == 0);
    CHECK(st.misses == 0);
    pool.free(m, s);
    s.synchronize();  // the free ran: the pool holds the bytes idle (threshold: keep everything)
    st = pool.stats();
    CHECK(st.used_bytes == 0);
    CHECK(st.reserved_bytes == 1000);
    CHECK(st.allocations == 0);
    CHECK(default_idle(0) == 0);  // nothing of ours in the pool other libraries share
    pool.reset_peak();
    CHECK(pool.stats().peak_used_bytes == 0);
    DeviceMemory kept = pool.allocate(512, s);
    CHECK(pool.stats().peak_used_bytes == 512);
    // trim keeps the used bytes and at most keep_bytes idle.
    CHECK(pool.trim(0) == 1000 - 512);  // the fake serves 512 from the idle 1000, gives the rest back
    CHECK(pool.stats().reserved_bytes == 512);
    CHECK(pool.stats().released_bytes == 488);
    kept = DeviceMemory();
    s.synchronize();
    CHECK(pool.trim(0) == 512);
    CHECK(pool.stats().reserved_bytes == 0);
    pool.set_release_threshold(0);
    CHECK(pool.release_threshold() == 0);
  }
  ctx.synchronize();
  CHECK(created(0, nullptr, nullptr) == before);  // destroyed with its last handle
}

TEST_CASE("driver memory pool: memory outlives the pool handle, a reset makes a new pool",
          "[memory_pool][cuda]") {
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  void *fake = dlopen(GPUHAL_TEST_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  auto created = reinterpret_cast<int (*)(int, uint64_t *, uint64_t *)>(dlsym(fake, "fake_cuda_created_pools"));
  REQUIRE(created);
  const int before = created(0, nullptr, nullptr);
  DeviceMemory m;
  {
    MemoryPool pool(ctx, driver_kind());
    m = pool.allocate(4096);
  }
  CHECK(round_trip(m, 4096, 9) == std::vector<uint8_t>(4096, 9));  // the allocation keeps the pool
  m = DeviceMemory();
  ctx.synchronize();
  CHECK(created(0, nullptr, nullptr) == before);

  MemoryPool pool(ctx, driver_kind());
  DeviceMemory old = pool.allocate(256);
  ctx.reset();
  CHECK(pool.stats().allocations == 0);  // the reset freed it with the pool
  REQUIRE_GPUHAL_ERROR(pool.free(old, ctx.default_stream()), Status::ERROR_CONTEXT_DESTROYED, "MemoryPool::free");
  CHECK(old);                            // refused: the handle is left as it was
  old = DeviceMemory();                  // nothing to free twice
  DeviceMemory fresh = pool.allocate(256);
  CHECK(round_trip(fresh, 256, 3) == std::vector<uint8_t>(256, 3));
  CHECK(pool.stats().allocations == 1);
}

TEST_CASE("driver memory pool: its memory is shared through the pool's descriptor where the device allows",
          "[memory_pool][cuda]") {
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  MemoryPool pool(ctx, driver_kind());
  Stream s = ctx.create_stream();
  DeviceArray d(pool.allocate(4096, s), Layout::make({1024}, 4), dtypes::int32);
  d.copy_from_host(HostView::of(std::vector<int>(1024, 7)));
  // As if received from another process (the core refuses its own exports).
  const IpcArrayHandle h = IpcArrayHandle::deserialize(get_ipc_handle(d).serialize());
  {
    IpcArray opened = open_ipc_array(ctx, h);
    CHECK(opened.array().copy_to_host().to_vector<int>() == std::vector<int>(1024, 7));
    opened.array().copy_from_host(HostView::of(std::vector<int>(1024, 9)));
    CHECK(d.copy_to_host().to_vector<int>() == std::vector<int>(1024, 9));
  }
  ctx.flush_deallocations();
  d = DeviceArray();  // freed: its export is withdrawn
  s.synchronize();
  REQUIRE_GPUHAL_ERROR(open_ipc_array(ctx, h), Status::ERROR_INVALID_IPC_HANDLE, "no longer shares");
}

TEST_CASE("driver memory pool: where the device has no mempool IPC, its memory is refused for export by name",
          "[memory_pool][cuda]") {
  setenv("FAKE_CUDA_NO_POOL_IPC", "1", 1);
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  MemoryPool pool(ctx, driver_kind());  // still made, without IPC
  DeviceMemory m = pool.allocate(4096);
  REQUIRE_GPUHAL_ERROR(get_ipc_handle(m, 0, 4096), Status::ERROR_NOT_SUPPORTED,
                       "a MemoryPool of the driver kind) cannot be exported on this device");
  unsetenv("FAKE_CUDA_NO_POOL_IPC");
}

TEST_CASE("driver memory pool: serves its context's allocations as the memory manager, under validation",
          "[memory_pool][cuda]") {
  Runtime rt = test::cuda_runtime({{"GPUHAL_LAYERS", "validation,leak"}, {"GPUHAL_LEAK_CHECK", "fail"}});
  Context ctx = rt.device(0).primary_context();
  MemoryPool pool(ctx, driver_kind(0));
  ctx.set_memory_manager(pool.memory_manager());
  {
    DeviceArray a = device_array(ctx, {1000}, dtypes::float32);
    CHECK(pool.stats().allocations == 1);
    CHECK(pool.stats().used_bytes == 4000);
  }
  ctx.synchronize();
  CHECK(pool.stats().allocations == 0);
  CHECK(pool.stats().reserved_bytes == 0);  // threshold 0: released at the synchronisation
  Stream per_thread = ctx.per_thread_default_stream();
  DeviceMemory m = pool.allocate(64, per_thread);
  std::thread([&m] { m = DeviceMemory(); }).join();  // freed from another thread: on the legacy stream
  ctx.synchronize();
  CHECK(pool.stats().used_bytes == 0);
}
#endif
