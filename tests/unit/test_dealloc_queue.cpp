// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The deferred deallocation queue (Numba's pending deallocations).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>

#include "test_support.hpp"

using namespace gpuhal;

namespace {
Context context_with(uint64_t count, double ratio, const char *limit = "1M") {
  Config c;
  c.backend = "host";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.max_pending_deallocs_count = count;
  c.max_pending_deallocs_ratio = ratio;
  c.set_option("GPUHAL_HOST_MEMORY_LIMIT", limit);
  return Runtime::load(c).device(0).primary_context();
}
}  // namespace

TEST_CASE("the 11th deferred free flushes the queue", "[dealloc]") {
  Context ctx = context_with(10, 0.2);
  const uint64_t free0 = ctx.memory_info().free;
  std::vector<DeviceArray> arrays;
  for (int i = 0; i < 11; ++i) arrays.push_back(device_array(ctx, {16}, dtypes::uint8));
  for (int i = 0; i < 10; ++i) arrays[size_t(i)] = DeviceArray();
  CHECK(ctx.pending_deallocations() == 10);
  CHECK(ctx.pending_deallocation_bytes() == 160);
  CHECK(ctx.memory_info().free == free0 - 11 * 16);  // nothing freed yet: no device sync
  arrays[10] = DeviceArray();
  CHECK(ctx.pending_deallocations() == 0);
  // Released while the context was idle, the blocks are kept as spares for
  // the next allocations of their size (user guide, idle blocks); an
  // explicit flush gives them back (none of them pending: it counts none).
  CHECK(ctx.memory_info().free == free0 - 11 * 16);
  CHECK(ctx.flush_deallocations() == 0);
  CHECK(ctx.memory_info().free == free0);
}

TEST_CASE("the byte limit flushes just past the limit", "[dealloc]") {
  Context ctx = context_with(1000, 0.2);  // 0.2 of 1 MiB = 209715 bytes
  DeviceArray a = device_array(ctx, {100000}, dtypes::uint8);
  DeviceArray b = device_array(ctx, {109715}, dtypes::uint8);
  DeviceArray c = device_array(ctx, {1}, dtypes::uint8);
  a = DeviceArray();
  b = DeviceArray();
  CHECK(ctx.pending_deallocation_bytes() == 209715);  // at the limit, not past it
  CHECK(ctx.pending_deallocations() == 2);
  c = DeviceArray();
  CHECK(ctx.pending_deallocations() == 0);
}

TEST_CASE("a count limit of 0 raised at run time queues again, and idle blocks come back", "[dealloc]") {
  Context ctx = context_with(0, 0.2);
  const uint64_t free0 = ctx.memory_info().free;
  { DeviceArray a = device_array(ctx, {4096}, dtypes::uint8); }
  CHECK(ctx.pending_deallocations() == 0);  // a limit of 0: every release flushes at once
  CHECK(ctx.memory_info().free == free0);
  ctx.set_pending_deallocation_limits(4, 0.2);
  for (int i = 0; i < 4; ++i) {
    DeviceArray a = device_array(ctx, {4096}, dtypes::uint8);
  }
  CHECK(ctx.pending_deallocations() == 4);
  { DeviceArray a = device_array(ctx, {4096}, dtypes::uint8); }
  CHECK(ctx.pending_deallocations() == 0);  // the fifth passes the limit of 4
  // The flush kept the idle blocks as spares (the host backend): the next
  // allocation of their size takes one, without a plugin call.
  const uint64_t free_spares = ctx.memory_info().free;
  CHECK(free_spares < free0);
  DeviceArray again = device_array(ctx, {4096}, dtypes::uint8);
  CHECK(ctx.memory_info().free == free_spares);
  again = DeviceArray();
  ctx.flush_deallocations();
  CHECK(ctx.memory_info().free == free0);
}

TEST_CASE("out of memory flushes the queue and retries once", "[dealloc][oom]") {
  Context ctx = context_with(1000, 1.0);
  std::vector<DeviceArray> held;
  for (int i = 0; i < 4; ++i) held.push_back(device_array(ctx, {240 * 1024}, dtypes::uint8));
  held.resize(1);  // three frees queued, 720 KiB pending
  CHECK(ctx.pending_deallocations() == 3);
  DeviceArray big = device_array(ctx, {500 * 1024}, dtypes::uint8);  // OOM -> flush -> retry succeeds
  CHECK(big.size() == 500 * 1024);
  CHECK(ctx.pending_deallocations() == 0);
  // When the queue cannot help, the error stays out-of-memory.
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {900 * 1024}, dtypes::uint8), Status::ERROR_OUT_OF_MEMORY,
                       "out of device memory");
}

TEST_CASE("DeferCleanup scopes nest and suppress flushes", "[dealloc][defer]") {
  Context ctx = context_with(10, 0.2);
  {
    DeferCleanup outer(ctx);
    {
      DeferCleanup inner(ctx);
      // All held, then dropped: one array's release does not serve the next.
      std::vector<DeviceArray> arrays;
      for (int i = 0; i < 20; ++i) arrays.push_back(device_array(ctx, {8}, dtypes::uint8));
      arrays.clear();
      CHECK(ctx.pending_deallocations() == 20);
      CHECK(ctx.flush_deallocations() == 0);  // deferred
    }
    CHECK(ctx.pending_deallocations() == 20);  // the outer scope still defers
  }
  CHECK(ctx.pending_deallocations() == 0);  // leaving the outermost scope: over the limit -> flushed
}

TEST_CASE("out of memory inside DeferCleanup does not flush", "[dealloc][defer][oom]") {
  Context ctx = context_with(1000, 1.0);
  DeviceArray a = device_array(ctx, {600 * 1024}, dtypes::uint8);
  DeferCleanup defer(ctx);
  a = DeviceArray();
  // Another size (the same one would take a's memory back: no plugin call).
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {700 * 1024}, dtypes::uint8), Status::ERROR_OUT_OF_MEMORY,
                       "out of device memory");
  CHECK(ctx.pending_deallocations() == 1);
}

TEST_CASE("an exception unwinding through DeferCleanup ends the scope", "[dealloc][defer]") {
  Context ctx = context_with(2, 1.0);
  try {
    DeferCleanup defer(ctx);
    std::vector<DeviceArray> arrays;
    for (int i = 0; i < 5; ++i) arrays.push_back(device_array(ctx, {8}, dtypes::uint8));
    throw std::runtime_error("user error");
  } catch (const std::runtime_error &) {
  }
  CHECK(ctx.pending_deallocations() == 0);  // flushed on the way out: 5 > 2
  device_array(ctx, {8}, dtypes::uint8);
  CHECK(ctx.pending_deallocations() == 1);  // and no longer deferred
}

TEST_CASE("a failing release stops the flush, is reported, and the rest stay queued", "[dealloc][errors]") {
  Context ctx = context_with(1000, 1.0);
  std::vector<std::string> reported;
  ctx.set_deallocation_error_handler([&](const Error &e) { reported.push_back(e.what()); });
  int ran = 0;
  ctx.defer_release([&] { ++ran; }, 10);
  ctx.defer_release([] { throw Error(Status::ERROR_DRIVER, "injected: cuMemFree failed"); }, 20);
  ctx.defer_release([&] { ++ran; }, 30);
  CHECK(ctx.flush_deallocations() == 1);
  CHECK(ran == 1);
  REQUIRE(reported.size() == 1);
  CHECK_THAT(reported[0], test::contains("deferred deallocation failed: injected: cuMemFree failed"));
  CHECK(ctx.pending_deallocations() == 1);
  CHECK(ctx.pending_deallocation_bytes() == 30);
  CHECK(ctx.flush_deallocations() == 1);
  CHECK(ran == 2);
  REQUIRE_GPUHAL_ERROR(ctx.defer_release(nullptr), Status::ERROR_INVALID_VALUE, "empty function");
}

TEST_CASE("a flush waits for pending work that may use the memory", "[dealloc][stream]") {
  Context ctx = context_with(1000, 1.0);
  Stream s = ctx.create_stream();
  std::vector<uint8_t> host(1 << 16, 1);
  DeviceArray d = to_device(ctx, HostView::of(host));
  std::atomic<bool> open{false};
  s.add_callback([&] {
    while (!open) std::this_thread::yield();
  });
  std::vector<uint8_t> out(host.size());
  d.copy_to_host(HostView::of(out), s);  // queued behind the callback
  d = DeviceArray();                     // its free is deferred, not run under the copy
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    open = true;
  });
  ctx.flush_deallocations();  // synchronises first
  opener.join();
  CHECK(out == host);
  CHECK(ctx.pending_deallocations() == 0);
}

TEST_CASE("streams and events are released through the queue too", "[dealloc][stream]") {
  Context ctx = context_with(1000, 1.0);
  { Stream s = ctx.create_stream(); }
  { Event e = ctx.create_event(); }
  CHECK(ctx.pending_deallocations() == 2);
  CHECK(ctx.flush_deallocations() == 2);
}

TEST_CASE("dropping a handle inside a stream callback cannot deadlock", "[dealloc][stream]") {
  Context ctx = context_with(0, 1.0);  // flush on every release
  Stream s = ctx.create_stream();
  auto d = std::make_shared<DeviceArray>(device_array(ctx, {8}, dtypes::uint8));
  std::atomic<bool> go{false};
  s.add_callback([d, &go]() mutable {
    while (!go) std::this_thread::yield();
    d.reset();  // the last handle goes on the worker thread
  });
  d.reset();
  go = true;
  s.synchronize();  // the callback's flush could not synchronise from the worker: it stays queued
  CHECK(ctx.pending_deallocations() == 1);
  CHECK(ctx.flush_deallocations() == 1);
}

TEST_CASE("the deallocation settings are parsed and checked", "[dealloc][config]") {
  auto parse = [](const char *name, const char *value) {
    return Config::parse(
        {name},
        [&](const std::string &n) -> std::optional<std::string> {
          if (n == name) return std::string(value);
          return std::nullopt;
        },
        false);
  };
  CHECK(parse("GPUHAL_MAX_PENDING_DEALLOCS_COUNT", "25").max_pending_deallocs_count == 25);
  CHECK(parse("GPUHAL_MAX_PENDING_DEALLOCS_RATIO", "0.5").max_pending_deallocs_ratio == 0.5);
  CHECK(Config().max_pending_deallocs_count == 10);
  CHECK(Config().max_pending_deallocs_ratio == 0.2);
  REQUIRE_GPUHAL_ERROR(parse("GPUHAL_MAX_PENDING_DEALLOCS_COUNT", "-1"), Status::ERROR_INVALID_CONFIG,
                       "GPUHAL_MAX_PENDING_DEALLOCS_COUNT='-1': expected a non-negative integer");
  REQUIRE_GPUHAL_ERROR(parse("GPUHAL_MAX_PENDING_DEALLOCS_RATIO", "1.5"), Status::ERROR_INVALID_CONFIG,
                       "expected a number from 0 to 1");
  REQUIRE_GPUHAL_ERROR(parse("GPUHAL_MAX_PENDING_DEALLOCS_RATIO", "0.2x"), Status::ERROR_INVALID_CONFIG,
                       "RATIO='0.2x'");
}

TEST_CASE("a release that queues further releases does not deadlock the flush running it", "[dealloc]") {
  // Each deferred release holds the last handle of a device array, so
  // running it queues the array's own release from inside the flush: the
  // queue must take it (the running flush picks it up) instead of flushing
  // again on the same thread (which deadlocked on its own mutex).
  // A fixed capacity: free memory then counts only this context's allocations.
  gpuhal::Context ctx = test::host_context({{"GPUHAL_HOST_MEMORY_LIMIT", "64M"}});
  const uint64_t free_before = ctx.memory_info().free;
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread([ctx, done] {
    for (int i = 0; i < 24; ++i) {
      gpuhal::DeviceArray d = gpuhal::device_array(ctx, {256}, gpuhal::dtypes::float32);
      ctx.defer_release([d] {});
    }
    ctx.flush_deallocations();
    // An explicit flush from inside a release runs nothing and returns.
    ctx.defer_release([ctx] { CHECK(ctx.flush_deallocations() == 0); });
    ctx.flush_deallocations();
    done->set_value();
  }).detach();
  if (finished.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    std::fprintf(stderr, "HANG: the deferred-release flush deadlocked\n");
    std::_Exit(3);
  }
  CHECK(ctx.pending_deallocations() == 0);
  CHECK(ctx.memory_info().free == free_before);
}
