// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Streams, events, callbacks, barriers and context reset on the host backend.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "test_support.hpp"

using namespace gpuhal;

namespace {
// A gate a stream callback blocks on until the test opens it.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<bool> entered{false};
  void wait() {
    entered = true;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mu);
      open = true;
    }
    cv.notify_all();
  }
  void block(const Stream &s) {
    s.add_callback([this] { wait(); });
    while (!entered) std::this_thread::yield();
  }
};
}  // namespace

TEST_CASE("an async copy queued behind a blocked callback waits for it", "[stream]") {
  Context ctx = test::host_context();
  Stream s = ctx.create_stream();
  std::vector<int32_t> src(1024, 7), dst(1024, 0);
  DeviceArray d = to_device(ctx, HostView::of(src));
  Gate gate;
  gate.block(s);
  d.copy_to_host(HostView::of(dst), s);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(s.query());
  CHECK(dst[0] == 0);  // not happened yet
  CHECK(dst[1023] == 0);
  gate.release();
  s.synchronize();
  CHECK(s.query());
  CHECK(dst == src);
}

TEST_CASE("events order work across streams", "[stream][event]") {
  Context ctx = test::host_context();
  Stream a = ctx.create_stream(), b = ctx.create_stream();
  DeviceArray d = device_array(ctx, {256}, dtypes::uint8);
  d.memset(0);
  Gate gate;
  gate.block(a);
  Event e = ctx.create_event();
  e.record(a);
  CHECK_FALSE(e.query());
  b.wait(e);
  d.memset(9, b);  // must wait for a's blocked callback
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK_FALSE(b.query());
  gate.release();
  b.synchronize();
  CHECK(e.query());
  CHECK(d.copy_to_host().to_vector<uint8_t>() == std::vector<uint8_t>(256, 9));
}

TEST_CASE("stream barriers wait for a set of events or all prior work", "[stream][barrier]") {
  Context ctx = test::host_context();
  REQUIRE(ctx.supports(Capability::StreamBarrier));
  Stream a = ctx.create_stream(StreamKind::NonBlocking), b = ctx.create_stream(StreamKind::NonBlocking);
  Stream c = ctx.create_stream(StreamKind::NonBlocking);
  Gate ga, gb;
  ga.block(a);
  gb.block(b);
  std::atomic<int> ran{0};
  c.wait(std::vector<Event>{a.record(), b.record()});
  c.add_callback([&] { ran = 1; });
  ga.release();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(ran == 0);  // still waiting for b
  gb.release();
  c.synchronize();
  CHECK(ran == 1);

  Gate g;
  g.block(a);
  c.wait_for_all_prior_work();
  c.add_callback([&] { ran = 2; });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(ran == 1);
  g.release();
  c.synchronize();
  CHECK(ran == 2);
}

TEST_CASE("the default stream synchronises with blocking streams only", "[stream][default]") {
  Context ctx = test::host_context();
  Stream def = ctx.default_stream();
  CHECK(def.is_default());
  Stream blocking = ctx.create_stream(), nonblocking = ctx.create_stream(StreamKind::NonBlocking);
  DeviceArray d = device_array(ctx, {16}, dtypes::uint8);

  Gate g1;
  g1.block(nonblocking);
  d.memset(1, def);
  def.synchronize();  // does not wait for the non-blocking stream
  CHECK(d.copy_to_host().to_vector<uint8_t>()[0] == 1);
  g1.release();

  Gate g2;
  g2.block(blocking);
  d.memset(2, def);  // legacy semantics: waits for the blocking stream
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK_FALSE(def.query());
  g2.release();
  def.synchronize();
  ctx.synchronize();
  std::vector<uint8_t> out(16);
  d.copy_to_host(HostView::of(out));
  CHECK(out[15] == 2);
}

// A synchronous copy on the legacy default stream runs on the caller's
// thread when no blocking stream has work (the host backend counts the busy
// ones instead of walking them): with one busy, created or per-thread, it
// must wait for that stream's work.
TEST_CASE("a synchronous copy on the default stream waits for every busy blocking stream", "[stream][default]") {
  Context ctx = test::host_context();
  DeviceArray d = device_array(ctx, {64}, dtypes::uint8);
  d.memset(0);
  std::vector<uint8_t> ones(64, 1), out(64);
  for (const char *which : {"created", "per-thread"}) {
    INFO(which);
    Gate g;
    Stream busy = std::string(which) == "per-thread" ? ctx.per_thread_default_stream() : ctx.create_stream();
    g.block(busy);
    DeviceArray e = device_array(ctx, {64}, dtypes::uint8);
    e.memset(7, busy);  // behind the gate
    std::atomic<bool> copied{false};
    std::thread t([&] {
      d.copy_from_device(e);  // the legacy stream: after the blocking stream's memset
      copied = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK_FALSE(copied);
    g.release();
    t.join();
    d.copy_to_host(HostView::of(out));
    CHECK(out == std::vector<uint8_t>(64, 7));
    // Every blocking stream idle again: copies complete at once.
    ctx.synchronize();
    d.copy_from_host(HostView::of(ones));
    d.copy_to_host(HostView::of(out));
    CHECK(out == ones);
  }
}

TEST_CASE("event timing and its errors", "[event]") {
  Context ctx = test::host_context();
  Stream s = ctx.create_stream();
  Event start = s.record();
  s.add_callback([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  Event end = s.record();
  end.synchronize();
  CHECK(Event::elapsed_ms(start, end) >= 15.0f);
  Event never = ctx.create_event();
  CHECK(never.query());  // never recorded: nothing to wait for
  never.synchronize();
  REQUIRE_GPUHAL_ERROR(Event::elapsed_ms(start, never), Status::ERROR_INVALID_VALUE, "never recorded");
  Event untimed = ctx.create_event(false);
  untimed.record(s);
  untimed.synchronize();
  REQUIRE_GPUHAL_ERROR(Event::elapsed_ms(start, untimed), Status::ERROR_INVALID_VALUE, "timing disabled");
  Gate g;
  g.block(s);
  Event pending = s.record();
  REQUIRE_GPUHAL_ERROR(Event::elapsed_ms(start, pending), Status::NOT_READY, "not completed");
  g.release();
  s.synchronize();
}

TEST_CASE("callbacks run in order and exceptions in them are contained", "[stream][callback]") {
  Context ctx = test::host_context({});
  Stream s = ctx.create_stream();
  std::vector<int> order;
  std::mutex mu;
  for (int i = 0; i < 5; ++i)
    s.add_callback([&, i] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    });
  s.add_callback([] { throw std::runtime_error("boom"); });
  s.add_callback([&] { order.push_back(5); });
  s.synchronize();
  CHECK(order == std::vector<int>{0, 1, 2, 3, 4, 5});
  REQUIRE_GPUHAL_ERROR(s.add_callback(nullptr), Status::ERROR_INVALID_VALUE, "empty function");
}

TEST_CASE("streams and events of another context are refused", "[stream][errors]") {
  Runtime rt = test::host_runtime({{"GPUHAL_HOST_DEVICES", "2"}});
  Context c0 = rt.device(0).primary_context(), c1 = rt.device(1).primary_context();
  Stream s0 = c0.create_stream();
  Event e1 = c1.create_event();
  REQUIRE_GPUHAL_ERROR(s0.wait(e1), Status::ERROR_INVALID_HANDLE, "another context");
  REQUIRE_GPUHAL_ERROR(e1.record(s0), Status::ERROR_INVALID_HANDLE, "another context");
  REQUIRE_GPUHAL_ERROR(s0.wait(Event(nullptr)), Status::ERROR_INVALID_HANDLE, "null event");
}

TEST_CASE("context reset invalidates old objects and frees their memory", "[context][reset]") {
  Context ctx = test::host_context({{"GPUHAL_HOST_MEMORY_LIMIT", "1M"}});
  const uint64_t free0 = ctx.memory_info().free;
  std::vector<double> v(1000, 1.5);
  DeviceArray d = to_device(ctx, HostView::of(v));
  Stream s = ctx.create_stream();
  Event e = s.record();
  CHECK(ctx.memory_info().free == free0 - 8000);
  ctx.reset();
  CHECK(ctx.memory_info().free == free0);  // the reset freed the array
  REQUIRE_GPUHAL_ERROR(d.copy_to_host(), Status::ERROR_CONTEXT_DESTROYED, "was reset");
  REQUIRE_GPUHAL_ERROR(s.synchronize(), Status::ERROR_CONTEXT_DESTROYED, "was reset");
  REQUIRE_GPUHAL_ERROR(e.query(), Status::ERROR_CONTEXT_DESTROYED, "was reset");
  REQUIRE_GPUHAL_ERROR(d.view({0}).copy_to_host(), Status::ERROR_CONTEXT_DESTROYED, "was reset");
  // New objects work; dropping the old ones is harmless.
  DeviceArray fresh = to_device(ctx, HostView::of(v));
  CHECK(fresh.copy_to_host().to_vector<double>() == v);
  d = DeviceArray();
  s = ctx.create_stream();
  CHECK(ctx.memory_info().free == free0 - 8000);
}

TEST_CASE("out of memory on the host backend is a real, recoverable error", "[memory][oom]") {
  Context ctx = test::host_context({{"GPUHAL_HOST_MEMORY_LIMIT", "64K"}});
  DeviceArray a = device_array(ctx, {4096}, dtypes::float64);  // 32 KiB
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {5000}, dtypes::float64), Status::ERROR_OUT_OF_MEMORY,
                       "host: mem_alloc failed (ERROR_OUT_OF_MEMORY): mem_alloc: out of device memory");
  a = DeviceArray();
  DeviceArray b = device_array(ctx, {5000}, dtypes::float64);  // fits after the flush + retry
  CHECK(b.size() == 5000);
  REQUIRE_GPUHAL_ERROR(ctx.allocate(0), Status::ERROR_INVALID_VALUE, "size must be positive");
}

TEST_CASE("many threads use one context concurrently", "[stream][threads]") {
  Context ctx = test::host_context();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Stream s = ctx.create_stream();
      for (int i = 0; i < 50; ++i) {
        std::vector<int32_t> v(257, t * 1000 + i), out(257, -1);
        DeviceArray d = to_device(ctx, HostView::of(v), s);
        d.copy_to_host(HostView::of(out), s);
        s.synchronize();
        if (out != v) ++failures;
      }
    });
  for (auto &th : threads) th.join();
  CHECK(failures == 0);
}

TEST_CASE("legacy, per-thread and external streams", "[stream][default]") {
  Context ctx = test::host_context();
  Stream legacy = ctx.legacy_default_stream();
  CHECK(legacy.is_default());
  CHECK_FALSE(legacy.is_owned());
  std::vector<int32_t> v(100, 5), out(100);
  DeviceArray d = to_device(ctx, HostView::of(v), legacy);
  legacy.synchronize();

  // Each thread gets its own per-thread default stream.
  Gate gate;
  Stream mine = ctx.per_thread_default_stream();
  gate.block(mine);
  std::atomic<bool> other_done{false};
  std::thread other([&] {
    Stream theirs = ctx.per_thread_default_stream();  // not blocked by this thread's gate
    DeviceArray e = device_array(ctx, {4}, dtypes::uint8);
    e.memset(1, theirs);
    theirs.synchronize();
    other_done = true;
  });
  other.join();
  CHECK(other_done);
  CHECK_FALSE(mine.query());
  gate.release();
  mine.synchronize();

  // An external stream is used, never destroyed.
  Stream owner = ctx.create_stream();
  {
    Stream ext = ctx.external_stream(owner.native_handle());
    CHECK_FALSE(ext.is_owned());
    d.copy_to_host(HostView::of(out), ext);
    ext.synchronize();
  }
  CHECK(out == v);
  ctx.flush_deallocations();
  CHECK(owner.query());  // still alive after the wrapper went
  REQUIRE_GPUHAL_ERROR(ctx.external_stream(nullptr), Status::ERROR_INVALID_HANDLE, "null handle");
  int not_a_stream = 0;
  REQUIRE_GPUHAL_ERROR(ctx.external_stream(reinterpret_cast<gpuhal::NativeStream>(&not_a_stream)).synchronize(),
                       Status::ERROR_INVALID_HANDLE, "invalid stream handle");
}

TEST_CASE("host: a stream of a second runtime over the same plugin is usable as an external stream",
          "[stream][external]") {
  // Context::external_stream promises it ("another gpuhal runtime over the
  // same plugin"); the host plugin refused it at first use, as each context
  // knew only its own streams.
  Context mine = test::host_context();
  Runtime other_runtime = test::host_runtime();
  Context theirs = other_runtime.device(0).primary_context();
  std::vector<float> v(4096, 2.5f), out(4096, 0.0f);
  DeviceArray d = to_device(mine, HostView::of(v));
  {
    Stream owner = theirs.create_stream();
    Stream ext = mine.external_stream(owner.native_handle());
    d.copy_to_host(HostView::of(out), ext);
    ext.synchronize();
    CHECK(out == v);
    d.memset(0, ext);
    ext.synchronize();
    CHECK(d.copy_to_host().to_vector<float>()[4095] == 0.0f);
    // Destroyed by its owner: refused by name from then on.
    owner = Stream();
    theirs.flush_deallocations();
    REQUIRE_GPUHAL_ERROR(ext.synchronize(), Status::ERROR_INVALID_HANDLE, "invalid stream handle");
  }
}

TEST_CASE("AutoSynchronize synchronizes, also when an exception unwinds", "[stream][auto]") {
  Context ctx = test::host_context();
  Stream s = ctx.create_stream();
  std::atomic<bool> ran{false};
  try {
    AutoSynchronize sync(s);
    s.add_callback([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ran = true;
    });
    throw std::runtime_error("inside the scope");
  } catch (const std::runtime_error &) {
    CHECK(ran);  // the scope's exit waited for the stream
  }
  {
    AutoSynchronize sync(s);
    s.add_callback([&] { ran = false; });
  }
  CHECK_FALSE(ran);
}

TEST_CASE("a synchronous copy still waits for pending work of the blocking streams", "[stream][default]") {
  Context ctx = test::host_context();
  Stream blocking = ctx.create_stream();
  std::vector<int32_t> v(64, 4);
  DeviceArray d = device_array(ctx, {64}, dtypes::int32);
  d.copy_from_host(HostView::of(v));  // idle: runs inline
  Gate gate;
  gate.block(blocking);
  std::atomic<bool> done{false};
  std::thread t([&] {
    d.copy_from_host(HostView::of(v));  // synchronous: legacy rules make it wait
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  CHECK_FALSE(done);
  gate.release();
  t.join();
  CHECK(done);
  CHECK(d.copy_to_host().to_vector<int32_t>() == v);
}

TEST_CASE("moved-from streams, events and contexts give a clear error, never a null dereference", "[streams]") {
  gpuhal::Context ctx = test::host_context();
  gpuhal::Context moved_ctx = ctx;
  gpuhal::Context keep = std::move(moved_ctx);
  gpuhal::Stream s = ctx.create_stream();
  gpuhal::Stream keep_s = std::move(s);
  gpuhal::Event e = ctx.create_event();
  gpuhal::Event keep_e = std::move(e);
  const auto empty = gpuhal::Status::ERROR_INVALID_HANDLE;
  // NOLINTBEGIN(bugprone-use-after-move): the point of the test
  REQUIRE_GPUHAL_ERROR(s.synchronize(), empty, "Stream::synchronize: empty handle");
  REQUIRE_GPUHAL_ERROR(s.query(), empty, "Stream::query: empty handle");
  REQUIRE_GPUHAL_ERROR(s.context(), empty, "Stream::context: empty handle");
  REQUIRE_GPUHAL_ERROR(s.add_callback([] {}), empty, "Stream::add_callback: empty handle");
  REQUIRE_GPUHAL_ERROR(s.record(), empty, "Stream::record: empty handle");
  REQUIRE_GPUHAL_ERROR(s.wait(keep_e), empty, "Stream::wait: empty handle");
  REQUIRE_GPUHAL_ERROR(s.wait_for_all_prior_work(), empty, "empty handle");
  REQUIRE_GPUHAL_ERROR(s.native_handle(), empty, "Stream::native_handle: empty handle");
  REQUIRE_GPUHAL_ERROR(e.synchronize(), empty, "Event::synchronize: empty handle");
  REQUIRE_GPUHAL_ERROR(e.query(), empty, "Event::query: empty handle");
  REQUIRE_GPUHAL_ERROR(e.record(keep_s), empty, "Event::record: empty handle");
  REQUIRE_GPUHAL_ERROR(keep_s.wait(e), empty, "null event");
  REQUIRE_GPUHAL_ERROR(moved_ctx.create_stream(), empty, "Context::create_stream: empty handle");
  REQUIRE_GPUHAL_ERROR(moved_ctx.synchronize(), empty, "Context::synchronize: empty handle");
  REQUIRE_GPUHAL_ERROR(moved_ctx.memory_info(), empty, "Context::memory_info: empty handle");
  REQUIRE_GPUHAL_ERROR(moved_ctx.reset(), empty, "Context::reset: empty handle");
  REQUIRE_GPUHAL_ERROR(moved_ctx.device(), empty, "Context::device: empty handle");
  REQUIRE_GPUHAL_ERROR(moved_ctx.flush_deallocations(), empty, "empty handle");
  REQUIRE_GPUHAL_ERROR(gpuhal::Context(nullptr).allocate(16), empty, "Context::allocate: empty handle");
  // NOLINTEND(bugprone-use-after-move)
  // The handles moved to work.
  keep_e.record(keep_s);
  keep_s.synchronize();
  CHECK(keep_e.query());
  CHECK(keep.memory_info().total > 0);
}

TEST_CASE("empty handles refuse every call by name, and handles hash and compare by identity", "[handles][errors]") {
  Context none;
  REQUIRE_GPUHAL_ERROR(none.synchronize(), Status::ERROR_INVALID_HANDLE, "empty handle");
  REQUIRE_GPUHAL_ERROR(none.create_stream(), Status::ERROR_INVALID_HANDLE, "empty handle");
  CHECK(Context(nullptr) == none);
  Stream no_stream;
  REQUIRE_GPUHAL_ERROR(no_stream.synchronize(), Status::ERROR_INVALID_HANDLE, "Stream::synchronize");
  Event no_event;
  REQUIRE_GPUHAL_ERROR(no_event.synchronize(), Status::ERROR_INVALID_HANDLE, "Event::synchronize");

  Runtime rt = test::host_runtime();
  Context ctx = rt.device(0).primary_context();
  Stream a = ctx.create_stream(), b = ctx.create_stream();
  std::unordered_set<Stream> streams{a, b, a};
  CHECK(streams.size() == 2);
  std::unordered_set<Context> contexts{ctx, rt.device(0).primary_context()};
  CHECK(contexts.size() == 1);
  CHECK(std::hash<Context>()(ctx) == ctx.hash());
  CHECK(ctx.hash() != none.hash());

  DeviceMemory m = ctx.allocate(64), n = ctx.allocate(64);
  DeviceMemory m2 = m;
  CHECK(m == m2);
  CHECK(m != n);
  CHECK(DeviceMemory() == DeviceMemory());
}
