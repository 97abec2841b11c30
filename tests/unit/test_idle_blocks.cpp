// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Idle blocks: device memory released while none of its context's work can
// be in flight is a pending deallocation as Numba counts it, and the flush
// that passing a limit triggers keeps it as a spare that serves the next
// allocation of its size without the plugin; memory released while work may
// still use it (a busy block) is pending until a flush over the limits, and a
// spare only once that flush has synchronised the context.
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "gpuhal/dlpack.hpp"
#include "test_support.hpp"

using namespace gpuhal;

namespace {

constexpr uint64_t kCountLimit = 4;

Context limited_context() {
  // A fixed capacity: free memory then counts only this context's
  // allocations. A small count limit: a few releases pass it.
  Config c;
  c.backend = "host";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.set_option("GPUHAL_HOST_MEMORY_LIMIT", "64M");
  c.max_pending_deallocs_count = kCountLimit;
  return Runtime::load(c).device(0).primary_context();
}

DevicePointer released_pointer(const Context &ctx, uint64_t bytes) {
  DeviceMemory m = ctx.allocate(bytes);
  return m.device_pointer();
}

// Releases a block of `bytes` while the context is idle, then kCountLimit
// blocks of one byte: the last one passes the count limit, and the flush
// keeps them all as spares (from an empty queue nothing is left pending).
DevicePointer spared_pointer(const Context &ctx, uint64_t bytes) {
  const DevicePointer p = released_pointer(ctx, bytes);
  std::vector<DeviceMemory> fillers;
  for (uint64_t i = 0; i < kCountLimit; ++i) fillers.push_back(ctx.allocate(1));
  fillers.clear();
  return p;
}

}  // namespace

TEST_CASE("idle blocks: releases are pending as Numba counts them, and a flush over the limit keeps them as spares",
          "[dealloc][idle]") {
  Context ctx = limited_context();
  const uint64_t free0 = ctx.memory_info().free;
  const DevicePointer p = released_pointer(ctx, 4096);
  // A pending deallocation: counted, not given back to the plugin.
  CHECK(ctx.pending_deallocations() == 1);
  CHECK(ctx.pending_deallocation_bytes() == 4096);
  CHECK(ctx.memory_info().free < free0);
  // A pending block is never taken: each release counts one more.
  const DevicePointer q = released_pointer(ctx, 4096);
  CHECK(q != p);
  CHECK(ctx.pending_deallocations() == 2);
  for (uint64_t i = 2; i < kCountLimit; ++i) (void)released_pointer(ctx, 64 * i);
  CHECK(ctx.pending_deallocations() == kCountLimit);
  (void)released_pointer(ctx, 1);  // past the limit: the flush empties the queue
  CHECK(ctx.pending_deallocations() == 0);
  CHECK(ctx.pending_deallocation_bytes() == 0);
  CHECK(ctx.memory_info().free < free0);  // kept as spares
  // Spares serve allocations of exactly their size, the newest first,
  // without counting as pending.
  DeviceMemory a = ctx.allocate(4096);
  DeviceMemory b = ctx.allocate(4096);
  CHECK(a.device_pointer() == q);
  CHECK(b.device_pointer() == p);
  CHECK(a.size() == 4096);
  DeviceMemory c = ctx.allocate(4096);  // none left: the plugin's
  CHECK(c.device_pointer() != p);
  CHECK(c.device_pointer() != q);
  DeviceMemory bigger = ctx.allocate(4097);  // only exactly its size
  CHECK(ctx.pending_deallocations() == 0);
  // An explicit flush gives back the pending releases (it returns how many)
  // and the spares (the 64 * i and 1-byte blocks).
  a = DeviceMemory();
  b = DeviceMemory();
  c = DeviceMemory();
  bigger = DeviceMemory();
  CHECK(ctx.pending_deallocations() == 4);
  CHECK(ctx.flush_deallocations() == 4);
  CHECK(ctx.pending_deallocations() == 0);
  CHECK(ctx.memory_info().free == free0);
}

TEST_CASE("idle blocks: an allocate-and-drop loop counts as Numba's test_max_pending_count does, and reuses its blocks",
          "[dealloc][idle]") {
  Context ctx = limited_context();
  ctx.flush_deallocations();
  std::set<DevicePointer> first_round, later;
  for (int round = 0; round < 3; ++round) {
    for (uint64_t i = 0; i < kCountLimit; ++i) {
      const DevicePointer p = released_pointer(ctx, 8);
      (round == 0 ? first_round : later).insert(p);
      CHECK(ctx.pending_deallocations() == i + 1);
    }
    const DevicePointer p = released_pointer(ctx, 8);  // one more: the flush
    (round == 0 ? first_round : later).insert(p);
    CHECK(ctx.pending_deallocations() == 0);
  }
  // After the first round every allocation is one of its blocks, kept as
  // spares by each round's flush.
  CHECK(first_round.size() == kCountLimit + 1);
  for (const DevicePointer p : later) CHECK(first_round.count(p) == 1);
}

TEST_CASE("idle blocks: spares nobody takes are freed by the next flush over the limit", "[dealloc][idle]") {
  Context ctx = limited_context();
  const uint64_t free0 = ctx.memory_info().free;
  (void)spared_pointer(ctx, 1 << 20);
  const uint64_t with_spare = ctx.memory_info().free;
  CHECK(with_spare < free0 - (1 << 20) + 1);
  // A round of other sizes: the 1 MiB spare is not taken, and goes.
  for (uint64_t i = 0; i <= kCountLimit; ++i) (void)released_pointer(ctx, 4096);
  CHECK(ctx.pending_deallocations() == 0);
  // (The round's own five 4 KiB blocks are its spares now.)
  CHECK(ctx.memory_info().free >= with_spare + (1 << 20) - (kCountLimit + 1) * 4096);
}

TEST_CASE("idle blocks: memory released under work in flight is not handed out again before a flush",
          "[dealloc][idle][stream]") {
  Context ctx = limited_context();
  Stream gated = ctx.create_stream(StreamKind::NonBlocking);
  std::atomic<bool> open{false};
  gated.add_callback([&] {
    while (!open) std::this_thread::yield();
  });
  std::vector<uint8_t> ones(4096, 1);
  DeviceArray old = device_array(ctx, {4096}, dtypes::uint8);
  const DevicePointer p = old.device_pointer();
  old.copy_from_host(HostView::of(ones), gated);  // waits behind the callback
  old = DeviceArray();                            // its memory is still the copy's target
  CHECK(ctx.pending_deallocations() == 1);
  DeviceArray fresh = device_array(ctx, {4096}, dtypes::uint8);
  CHECK(fresh.device_pointer() != p);
  fresh.memset(7);  // the default stream does not wait for a non-blocking one
  open = true;
  gated.synchronize();
  std::vector<uint8_t> out(4096);
  fresh.copy_to_host(HostView::of(out));
  CHECK(out == std::vector<uint8_t>(4096, 7));  // the late copy did not land here
}

TEST_CASE("idle blocks: every kind of work keeps the context busy until it synchronises", "[dealloc][idle][stream]") {
  // Each call below may leave work in flight after it returns: memory
  // released after it must not be handed out again before a context
  // synchronisation (the same check for each entry that submits work).
  Context ctx = limited_context();
  Stream s = ctx.create_stream();
  DeviceArray a = device_array(ctx, {64}, dtypes::float32);
  DeviceArray b = device_array(ctx, {64}, dtypes::float32);
  std::vector<float> host(64, 1.0f);
  Event e = ctx.create_event();
  const std::vector<std::pair<const char *, std::function<void()>>> in_flight = {
      {"memset on a stream", [&] { a.memset(1, s); }},
      {"copy from the host on a stream", [&] { a.copy_from_host(HostView::of(host), s); }},
      {"copy to the host on a stream", [&] { a.copy_to_host(HostView::of(host), s); }},
      {"copy between device arrays", [&] { b.copy_from_device(a, s); }},
      {"a kernel (fill)", [&] { a.fill(2.0f, s); }},
      {"an event record", [&] { e.record(s); }},
      {"a wait for an event", [&] { s.wait(e); }},
      {"a host callback", [&] { s.add_callback([] {}); }},
  };
  for (const auto &w : in_flight) {
    INFO(w.first);
    ctx.synchronize();
    const DevicePointer idle = spared_pointer(ctx, 128);
    CHECK(released_pointer(ctx, 128) == idle);  // idle: kept, then taken back
    w.second();
    const DevicePointer busy = released_pointer(ctx, 128);
    CHECK(released_pointer(ctx, 128) != busy);  // busy: queued for the flush
    ctx.flush_deallocations();
  }
  // Synchronous copies and memsets return when done (plugin.h): nothing of
  // theirs is in flight, so the context stays idle.
  const std::vector<std::pair<const char *, std::function<void()>>> done_on_return = {
      {"memset", [&] { a.memset(1); }},
      {"copy from the host", [&] { a.copy_from_host(HostView::of(host)); }},
      {"copy to the host", [&] { a.copy_to_host(HostView::of(host)); }},
  };
  for (const auto &w : done_on_return) {
    INFO(w.first);
    ctx.synchronize();
    w.second();
    const DevicePointer idle = spared_pointer(ctx, 128);
    CHECK(released_pointer(ctx, 128) == idle);
    ctx.flush_deallocations();
  }
}

TEST_CASE("idle blocks: a stream's synchronisation does not make the context idle, the context's does",
          "[dealloc][idle][stream]") {
  Context ctx = limited_context();
  Stream s = ctx.create_stream();
  DeviceArray a = device_array(ctx, {256}, dtypes::uint8);
  a.memset(3, s);
  s.synchronize();
  const DevicePointer busy = released_pointer(ctx, 256);  // other streams could still run
  CHECK(released_pointer(ctx, 256) != busy);
  ctx.flush_deallocations();  // an explicit flush frees every block
  ctx.synchronize();
  const DevicePointer idle = spared_pointer(ctx, 256);
  CHECK(released_pointer(ctx, 256) == idle);
  // A flush synchronises too.
  a.memset(4, s);
  ctx.flush_deallocations();
  const DevicePointer after_flush = spared_pointer(ctx, 256);
  CHECK(released_pointer(ctx, 256) == after_flush);
}

namespace {
// In a context that never looks idle (work gpuhal does not see may be on
// its streams) but whose synchronise waits for that work: released memory
// is pending, never taken before a flush, and a spare after it.
void check_busy_until_flushed(const Context &ctx) {
  ctx.synchronize();
  const DevicePointer p = released_pointer(ctx, 512);
  const DevicePointer q = released_pointer(ctx, 512);
  CHECK(q != p);  // pending: not reused before a flush, although the context looks idle
  std::vector<DeviceMemory> fillers;
  for (uint64_t i = 0; i < kCountLimit; ++i) fillers.push_back(ctx.allocate(1));
  fillers.clear();  // past the limit: the flush synchronised, the unseen work included
  const DevicePointer reused = released_pointer(ctx, 512);
  CHECK((reused == p || reused == q));
}
}  // namespace

TEST_CASE("idle blocks: vendor handles given out turn reuse off for the context", "[dealloc][idle]") {
  SECTION("a stream's native handle: released memory is busy, a spare only after the flush's synchronise") {
    Context ctx = limited_context();
    Stream s = ctx.create_stream();
    (void)s.native_handle();  // another library may put work on it that gpuhal does not see
    check_busy_until_flushed(ctx);
  }
  SECTION("an external stream never used: nothing is asked about it, and nothing changes") {
    // numba-cuda's own tests wrap a dummy pointer and never use it; a GPU
    // driver asked about it would dereference it.
    Context ctx = limited_context();
    int junk = 0;
    Stream wrapped = ctx.external_stream(reinterpret_cast<NativeStream>(&junk));
    check_busy_until_flushed(ctx);
  }
  SECTION("an external stream of another runtime, used: its context's synchronise does not wait for it") {
    Context ctx = limited_context();
    Context theirs = limited_context();  // another runtime over the same plugin
    Stream owner = theirs.create_stream();
    Stream wrapped = ctx.external_stream(owner.native_handle());
    device_array(ctx, {64}, dtypes::uint8).memset(1, wrapped);  // the first use asks the plugin
    ctx.synchronize();
    wrapped.synchronize();
    const DevicePointer p = spared_pointer(ctx, 512);
    CHECK(released_pointer(ctx, 512) != p);
  }
  SECTION("an external stream that is the context's own, used (context_waits_for_stream): busy, a spare after "
          "the flush") {
    Context ctx = limited_context();
    Stream s = ctx.create_stream();
    Stream wrapped = ctx.external_stream(s.native_handle());
    device_array(ctx, {64}, dtypes::uint8).memset(1, wrapped);
    check_busy_until_flushed(ctx);
  }
}

TEST_CASE("idle blocks: memory shared with other processes is never reused", "[dealloc][idle][ipc]") {
  Context ctx = limited_context();
  REQUIRE(ctx.supports(Capability::Ipc));
  DevicePointer p = 0;
  {
    DeviceMemory m = ctx.allocate(8192);
    p = m.device_pointer();
    (void)get_ipc_handle(m, 0, 8192);
  }
  CHECK(ctx.pending_deallocations() == 1);
  DeviceMemory again = ctx.allocate(8192);
  CHECK(again.device_pointer() != p);
}

TEST_CASE("idle blocks: memory exported through DLPack is never reused", "[dealloc][idle][dlpack]") {
  // The consumer may still have work on it, out of gpuhal's sight, when it
  // lets the tensor go.
  Context ctx = limited_context();
  DevicePointer p = 0;
  {
    DeviceArray a = device_array(ctx, {1024}, dtypes::uint8);
    p = a.device_pointer();
    dlpack::DLManagedTensorVersioned *t = to_dlpack_versioned(a);
    t->deleter(t);
  }
  CHECK(ctx.pending_deallocations() == 1);
  DeviceArray again = device_array(ctx, {1024}, dtypes::uint8);
  CHECK(again.device_pointer() != p);
}

TEST_CASE("idle blocks: a reset drops them and frees nothing twice", "[dealloc][idle]") {
  Context ctx = limited_context();
  const uint64_t free0 = ctx.memory_info().free;
  (void)released_pointer(ctx, 4096);
  CHECK(ctx.pending_deallocations() == 1);
  ctx.reset();
  CHECK(ctx.pending_deallocations() == 0);
  CHECK(ctx.memory_info().free == free0);
  DeviceMemory m = ctx.allocate(4096);
  CHECK(m.device_pointer() != 0);
  m = DeviceMemory();
  ctx.flush_deallocations();
  CHECK(ctx.memory_info().free == free0);
}

TEST_CASE("idle blocks: a release inside a stream callback is queued, not kept", "[dealloc][idle][stream]") {
  Context ctx = limited_context();
  Stream s = ctx.create_stream();
  auto d = std::make_shared<DeviceArray>(device_array(ctx, {1024}, dtypes::uint8));
  const DevicePointer p = d->device_pointer();
  s.add_callback([d]() mutable { d.reset(); });  // the last handle goes on the worker thread
  d.reset();
  s.synchronize();
  CHECK(ctx.pending_deallocations() == 1);
  ctx.synchronize();  // idle now, but the queued release waits for its flush
  DeviceArray again = device_array(ctx, {1024}, dtypes::uint8);
  CHECK(again.device_pointer() != p);
}

TEST_CASE("idle blocks: threads allocating and releasing at once never share memory", "[dealloc][idle][threads]") {
  Context ctx = limited_context();
  constexpr int kThreads = 4;
  constexpr int kRounds = 400;
  std::mutex live_mu;
  std::set<DevicePointer> live;  // every pointer some thread holds now
  std::atomic<int> shared{0}, corrupted{0};
  auto hold = [&](const DeviceArray &a) {
    std::lock_guard<std::mutex> lock(live_mu);
    if (!live.insert(a.device_pointer()).second) ++shared;
  };
  auto drop = [&](DeviceArray &a) {
    {
      std::lock_guard<std::mutex> lock(live_mu);
      live.erase(a.device_pointer());
    }
    a = DeviceArray();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::vector<uint8_t> in(4096, uint8_t(t + 1));
      for (int i = 0; i < kRounds; ++i) {
        // Two sizes, so blocks of both are kept and taken by every thread;
        // most rounds submit no work, so the context is mostly idle.
        const int64_t n = (i % 2) ? 4096 : 1024;
        DeviceArray a = device_array(ctx, {n}, dtypes::uint8);
        hold(a);
        DeviceArray b = device_array(ctx, {n}, dtypes::uint8);
        hold(b);
        if (i % 16 == 0) {
          const std::vector<uint8_t> src(in.begin(), in.begin() + n);
          std::vector<uint8_t> dst(src.size());
          a.copy_from_host(HostView::of(src));
          a.copy_to_host(HostView::of(dst));
          if (dst != src) ++corrupted;
        }
        drop(b);
        drop(a);
      }
    });
  }
  for (auto &th : threads) th.join();
  CHECK(shared == 0);
  CHECK(corrupted == 0);
  ctx.flush_deallocations();
  CHECK(ctx.pending_deallocations() == 0);
}

TEST_CASE("idle blocks: a count limit of 0 keeps none", "[dealloc][idle][config]") {
  Config c;
  c.backend = "host";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.max_pending_deallocs_count = 0;
  Context ctx = Runtime::load(c).device(0).primary_context();
  (void)released_pointer(ctx, 4096);
  CHECK(ctx.pending_deallocations() == 0);  // freed at once, as before
}

// An asynchronous copy on another context's stream reads the source's
// memory: work the source's context neither counts nor waits for. Dropping
// the source's last handle while that copy is queued must not let the
// memory be freed, kept or handed to a new allocation before the copy ran.
TEST_CASE("idle blocks: a source read by another context's queued copy is not reused under it",
          "[dealloc][idle][stream]") {
  Config c;
  c.backend = "host";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.set_option("GPUHAL_HOST_DEVICES", "2");
  c.max_pending_deallocs_count = kCountLimit;
  Runtime rt = Runtime::load(c);
  REQUIRE(rt.device_count() == 2);
  Context c0 = rt.device(0).primary_context(), c1 = rt.device(1).primary_context();
  constexpr int64_t kBytes = 1 << 16;
  std::vector<uint8_t> data(kBytes);
  for (int64_t i = 0; i < kBytes; ++i) data[size_t(i)] = uint8_t(i % 251);
  DeviceArray dst = device_array(c1, {kBytes}, dtypes::uint8);
  Stream s1 = c1.create_stream();
  std::atomic<bool> go{false};
  s1.add_callback([&go] {
    for (int i = 0; i < 2000 && !go.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  {
    DeviceArray src = to_device(c0, HostView::of(data));
    c0.synchronize();  // c0 idle: nothing of its own in flight
    dst.copy_from_device(src, s1);  // queued behind the hold, on c1's stream
  }
  // c0 passes its count limit (a flush: it synchronises c0, not c1), then
  // allocates the source's size again and overwrites it.
  std::vector<DeviceArray> fresh;
  for (uint64_t i = 0; i < kCountLimit; ++i) (void)c0.allocate(1);
  for (int i = 0; i < 4; ++i) {
    fresh.push_back(device_array(c0, {kBytes}, dtypes::uint8));
    fresh.back().memset(7);
  }
  go = true;
  s1.synchronize();
  CHECK(dst.copy_to_host().to_vector<uint8_t>() == data);
}
