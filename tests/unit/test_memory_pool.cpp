// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// MemoryPool: reuse on the allocating stream at once, on another stream
// only once the first stream's work is done; statistics; the release
// threshold and trim; the pool as its context's memory manager; resets,
// lifetimes and bad input. On the host backend (and over the fake CUDA
// driver where it is built).
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "test_support.hpp"

using namespace gpuhal;

namespace {

// Runs `body` against a host context and, where built, a cuda one over the fake driver.
template <class Body>
void on_each_backend(Body body) {
  {
    INFO("host");
    Context ctx = test::host_context();
    body(ctx);
  }
#ifdef GPUHAL_TEST_FAKE_CUDA
  {
    INFO("cuda over the fake driver");
    Context ctx = test::cuda_runtime().device(0).primary_context();
    body(ctx);
  }
#endif
}

}  // namespace

TEST_CASE("memory pool: a block comes back to its stream at once, with exact statistics", "[memory_pool]") {
  on_each_backend([](Context &ctx) {
    MemoryPool pool(ctx);
    Stream s = ctx.create_stream(StreamKind::NonBlocking);
    DevicePointer first = 0;
    {
      DeviceMemory m = pool.allocate(1000, s);
      first = m.device_pointer();
      CHECK(m.size() == 1000);
      const MemoryPoolStats st = pool.stats();
      CHECK(st.used_bytes == 1024);  // rounded to a power of two
      CHECK(st.reserved_bytes == 1024);
      CHECK(st.allocations == 1);
      CHECK(st.misses == 1);
    }
    MemoryPoolStats st = pool.stats();
    CHECK(st.used_bytes == 0);
    CHECK(st.reserved_bytes == 1024);  // idle, kept
    CHECK(st.allocations == 0);
    DeviceMemory again = pool.allocate(900, s);
    CHECK(again.device_pointer() == first);
    st = pool.stats();
    CHECK(st.hits == 1);
    CHECK(st.peak_used_bytes == 1024);
    DeviceMemory big = pool.allocate(3 << 20, s);  // rounded to 2 MiB steps
    CHECK(pool.stats().used_bytes == 1024 + (4 << 20));
    CHECK(pool.stats().peak_used_bytes == 1024 + (4 << 20));
    big = DeviceMemory();
    pool.reset_peak();
    CHECK(pool.stats().peak_used_bytes == 1024);
    // The memory works: written and read back on the pool's context.
    std::vector<uint8_t> bytes(900, 7);
    DeviceArray view(again, Layout::make({900}, 1), dtypes::uint8);
    view.copy_from_host(HostView::of(bytes));
    CHECK(view.copy_to_host().to_vector<uint8_t>() == bytes);
  });
}

TEST_CASE("memory pool: another stream reuses a block only once the first stream's work is done", "[memory_pool]") {
  on_each_backend([](Context &ctx) {
    MemoryPool pool(ctx);
    Stream a = ctx.create_stream(StreamKind::NonBlocking), b = ctx.create_stream(StreamKind::NonBlocking);
    std::atomic<bool> go{false};
    a.add_callback([&go] {
      while (!go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    DevicePointer on_a = pool.allocate(4096, a).device_pointer();  // dropped at once: idle on a
    // a still has work queued: b must not get a's block.
    DeviceMemory on_b = pool.allocate(4096, b);
    CHECK(on_b.device_pointer() != on_a);
    CHECK(pool.stats().misses == 2);
    go = true;
    a.synchronize();
    DeviceMemory later = pool.allocate(4096, b);  // a is idle now: its block serves b
    CHECK(later.device_pointer() == on_a);
    CHECK(pool.stats().hits == 1);
  });
}

TEST_CASE("memory pool: the release threshold and trim give idle blocks back", "[memory_pool]") {
  on_each_backend([](Context &ctx) {
    MemoryPool pool(ctx, MemoryPoolOptions{uint64_t(1) << 20});
    CHECK(pool.release_threshold() == (uint64_t(1) << 20));
    {
      std::vector<DeviceMemory> blocks;
      for (int i = 0; i < 4; ++i) blocks.push_back(pool.allocate(512 << 10));  // 4 x 512 KiB
      CHECK(pool.stats().reserved_bytes == (uint64_t(2) << 20));
    }
    MemoryPoolStats st = pool.stats();
    CHECK(st.reserved_bytes == (uint64_t(1) << 20));  // 1 MiB idle kept, the rest given back
    CHECK(st.released_bytes == (uint64_t(1) << 20));
    CHECK(pool.trim(512 << 10) == (512u << 10));
    CHECK(pool.stats().reserved_bytes == (512u << 10));
    pool.set_release_threshold(0);  // gives back what is idle above it at once
    CHECK(pool.stats().reserved_bytes == 0);
    CHECK(pool.trim() == 0);
    ctx.flush_deallocations();
  });
}

TEST_CASE("memory pool: as its context's memory manager, every device array comes from it", "[memory_pool]") {
  Context ctx = test::host_runtime().device(0).primary_context();
  MemoryPool pool(ctx);
  ctx.set_memory_manager(pool.memory_manager());
  CHECK(ctx.memory_manager().name() == "memory pool");
  {
    DeviceArray a = device_array(ctx, {1000}, dtypes::float32);
    a.memset(0);
    CHECK(pool.stats().allocations == 1);
    CHECK(pool.stats().used_bytes == 4096);
  }
  CHECK(pool.stats().allocations == 0);
  DeviceArray again = device_array(ctx, {1000}, dtypes::float32);
  CHECK(pool.stats().hits == 1);
}

TEST_CASE("memory pool: a reset empties it, and allocations outlive the pool's handle", "[memory_pool]") {
  on_each_backend([](Context &ctx) {
    DeviceMemory outlives;
    {
      MemoryPool pool(ctx);
      outlives = pool.allocate(8192);
    }  // the allocation keeps the pool alive
    CHECK(outlives.size() == 8192);
    outlives = DeviceMemory();  // back to a pool nobody else holds: freed with it
    MemoryPool pool(ctx);
    DeviceMemory before = pool.allocate(4096);
    ctx.reset();
    const MemoryPoolStats st = pool.stats();
    CHECK(st.used_bytes == 0);
    CHECK(st.reserved_bytes == 0);
    CHECK(st.allocations == 0);
    before = DeviceMemory();  // freed by the reset: nothing to give back, no crash
    DeviceMemory after = pool.allocate(4096);
    CHECK(after.device_pointer() != 0);
    CHECK(pool.stats().allocations == 1);
  });
}

TEST_CASE("memory pool: bad input is refused by name", "[memory_pool][devices]") {
  Runtime rt = test::host_runtime({{"GPUHAL_HOST_DEVICES", "2"}});
  Context ctx = rt.device(0).primary_context(), other = rt.device(1).primary_context();
  MemoryPool pool(ctx);
  REQUIRE_GPUHAL_ERROR(pool.allocate(0), Status::ERROR_INVALID_VALUE, "size must be positive");
  REQUIRE_GPUHAL_ERROR(pool.allocate(uint64_t(1) << 63), Status::ERROR_SIZE_OVERFLOW, "MemoryPool::allocate");
  REQUIRE_GPUHAL_ERROR(pool.allocate(16, Stream()), Status::ERROR_INVALID_HANDLE, "Stream::context");
  REQUIRE_GPUHAL_ERROR(pool.allocate(16, other.default_stream()), Status::ERROR_INVALID_VALUE, "another context");
  REQUIRE_GPUHAL_ERROR(MemoryPool().allocate(16), Status::ERROR_INVALID_HANDLE, "MemoryPool::allocate");
  REQUIRE_GPUHAL_ERROR((void)MemoryPool().stats(), Status::ERROR_INVALID_HANDLE, "MemoryPool::stats");
  REQUIRE_GPUHAL_ERROR(MemoryPool(Context()), Status::ERROR_INVALID_HANDLE, "MemoryPool");
  CHECK(pool.stats().allocations == 0);
}

TEST_CASE("memory pool: threads allocating on their own streams at once", "[memory_pool]") {
  Context ctx = test::host_context();
  MemoryPool pool(ctx, MemoryPoolOptions{uint64_t(4) << 20});
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      try {
        Stream s = ctx.create_stream(StreamKind::NonBlocking);
        for (int i = 0; i < 500; ++i) {
          DeviceMemory m = pool.allocate(uint64_t(256) << ((i + t) % 8), s);
          if (!m.device_pointer()) ++failures;
        }
        s.synchronize();
      } catch (...) {
        ++failures;
      }
    });
  for (auto &th : threads) th.join();
  CHECK(failures == 0);
  const MemoryPoolStats st = pool.stats();
  CHECK(st.allocations == 0);
  CHECK(st.used_bytes == 0);
  CHECK(st.hits + st.misses == 2000);
}

TEST_CASE("memory pool: a pool that goes gives its idle blocks back", "[memory_pool]") {
  // Free memory is counted under a limit on the host backend (without one
  // it is the machine's), and always over the fake CUDA driver.
  auto check = [](Context ctx) {
    ctx.flush_deallocations();
    const uint64_t before = ctx.memory_info().free;
    {
      MemoryPool pool(ctx);
      Stream s = ctx.create_stream();
      for (int i = 0; i < 4; ++i) (void)pool.allocate(64 << 10, s);  // idle, kept (no threshold)
      (void)pool.allocate(1000, s);
      CHECK(pool.stats().reserved_bytes == (64 << 10) + 1024);
    }
    ctx.flush_deallocations();
    CHECK(ctx.memory_info().free == before);
  };
  check(test::host_context({{"GPUHAL_HOST_MEMORY_LIMIT", "64M"}}));
#ifdef GPUHAL_TEST_FAKE_CUDA
  check(test::cuda_runtime().device(0).primary_context());
#endif
}
