// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Device memory: allocations are distinct, bad sizes and exhaustion are
// errors that leave the context working.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void allocations_disjoint(Env &env) {
  std::vector<DeviceMemory> held;
  for (uint64_t size : {uint64_t(1), uint64_t(3), uint64_t(4096), uint64_t(1) << 20, uint64_t(12345)}) {
    DeviceMemory m = env.ctx.allocate(size);
    expect(m.device_pointer() != 0, "allocation of " + std::to_string(size) + " bytes returned a null pointer");
    expect(m.size() == size,
           "allocation of " + std::to_string(size) + " bytes reports size " + std::to_string(m.size()));
    for (const auto &o : held) {
      const bool disjoint =
          m.device_pointer() + size <= o.device_pointer() || o.device_pointer() + o.size() <= m.device_pointer();
      expect(disjoint, "two live allocations overlap");
    }
    held.push_back(m);
  }
  // Each is its own memory: writing one leaves the others.
  std::vector<DeviceArray> arrays;
  for (size_t i = 0; i < held.size(); ++i) {
    arrays.emplace_back(held[i], Layout::make({int64_t(held[i].size())}, 1), dtypes::uint8);
    arrays.back().memset(uint8_t(i + 1));
  }
  for (size_t i = 0; i < arrays.size(); ++i)
    expect(bytes_of(arrays[i]) == std::vector<uint8_t>(size_t(held[i].size()), uint8_t(i + 1)),
           "allocation " + std::to_string(i) + " was written by another's memset");
}

void bad_sizes(Env &env) {
  expect_error([&] { env.ctx.allocate(0); }, Status::ERROR_INVALID_VALUE, "", "allocate(0)");
  // More than the device has: an error (the status may be either), never a
  // crash, and the context goes on working.
  const uint64_t total = env.runtime.device(0).properties().total_memory;
  for (uint64_t bytes : {UINT64_MAX, total * 4 + 4096}) {
    bool refused = false;
    try {
      env.ctx.allocate(bytes);
    } catch (const Error &e) {
      refused = e.status() == Status::ERROR_OUT_OF_MEMORY || e.status() == Status::ERROR_SIZE_OVERFLOW;
      expect(refused, "allocate(" + std::to_string(bytes) + ") failed with " + to_string(e.status()) +
                          ", expected ERROR_OUT_OF_MEMORY or ERROR_SIZE_OVERFLOW");
    }
    expect(refused,
           "allocate(" + std::to_string(bytes) + ") succeeded on a device of " + std::to_string(total) + " bytes");
  }
  const auto v = pattern(4096, 9);
  expect(bytes_of(to_device(env.ctx, HostView::of(v))) == v, "the context does not work after a refused allocation");
}

// Sets the context's deferred-deallocation count limit for a check's
// duration (the byte ratio at 1.0: the count decides), and puts the
// previous limits back.
class CountLimitScope {
 public:
  CountLimitScope(const Context &ctx, uint64_t count)
      : ctx_(ctx), saved_(ctx.pending_deallocation_limits()),
        total_(double(ctx.device().properties().total_memory)) {
    ctx_.set_pending_deallocation_limits(count, 1.0);
  }
  ~CountLimitScope() {
    ctx_.set_pending_deallocation_limits(saved_.count, total_ > 0 ? double(saved_.bytes) / total_ : 0.0);
  }
  CountLimitScope(const CountLimitScope &) = delete;
  CountLimitScope &operator=(const CountLimitScope &) = delete;

 private:
  const Context &ctx_;
  Context::PendingDeallocationLimits saved_;
  double total_;
};

void freed_memory_reused(Env &env) {
  // Allocating and dropping a quarter of the free memory many times never
  // runs out: freed memory (through the deferred queue) comes back. At
  // most three releases pending: Numba's default of ten would hold 2.75 GiB
  // at once, which under a sanitizer's shadow memory (14 GB) was more than
  // a loaded CI machine had.
  env.ctx.flush_deallocations();
  const CountLimitScope limit(env.ctx, 2);
  const uint64_t free = env.ctx.memory_info().free;
  const uint64_t chunk = std::min<uint64_t>(free / 4, uint64_t(256) << 20);
  expect(chunk > 0, "no free memory");
  for (int i = 0; i < 16; ++i) {
    DeviceMemory m = env.ctx.allocate(chunk);
    DeviceArray a(m, Layout::make({int64_t(chunk)}, 1), dtypes::uint8);
    a.view({Slice(0, 64)}).memset(uint8_t(i));
  }
  env.ctx.flush_deallocations();
}

// Holds a stream with a callback until open() is called, or a timer opens
// it after about 200 ms, so that nothing hangs where a backend runs
// callbacks and other work on one host thread (hsa). Synchronise the stream
// before the gate goes: its callback reads the gate.
class Gate {
 public:
  explicit Gate(const Stream &stream) {
    timer_ = std::thread([this] {
      for (int i = 0; i < 40 && !open_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      open_ = true;
    });
    try {
      stream.add_callback([this] {
        while (!open_.load()) std::this_thread::yield();
      });
    } catch (...) {
      open_ = true;
      timer_.join();
      throw;
    }
  }
  ~Gate() {
    open_ = true;
    timer_.join();
  }
  Gate(const Gate &) = delete;
  Gate &operator=(const Gate &) = delete;
  void open() { open_ = true; }

 private:
  std::atomic<bool> open_{false};
  std::thread timer_;
};

// Four new arrays of 64 KiB, each set to 7 at once (synchronously); the
// gate is then opened and its stream finished, and each must still hold
// its 7s: none was written by the gated work on memory released before it.
// Returns whether one of them got `reuse_of`'s memory.
bool fresh_arrays_keep_their_bytes(Env &env, Gate &gate, const Stream &gated, DevicePointer reuse_of) {
  bool reused = false;
  std::vector<DeviceArray> fresh;
  for (int i = 0; i < 4; ++i) {  // the same size, as an allocator would most like to reuse
    fresh.push_back(device_array(env.ctx, {1 << 16}, dtypes::uint8));
    reused = reused || fresh.back().memory().device_pointer() == reuse_of;
    fresh.back().memset(7);
  }
  gate.open();
  gated.synchronize();
  const std::vector<uint8_t> sevens(1 << 16, 7);
  for (const DeviceArray &a : fresh) {
    const std::vector<uint8_t> got = bytes_of(a);
    expect(got == sevens, "a new allocation was written by work queued on memory released before it: " +
                              first_difference(got, sevens));
  }
  return reused;
}

void released_under_work_waits(Env &env) {
  // Memory whose last handle goes while queued work still writes it must not
  // serve another allocation before that work is done (the deferred queue's
  // flush waits for it; an idle block is only what nothing can use). The
  // copy waits behind a callback on a non-blocking stream, so the new
  // allocations' synchronous memsets do not wait for it where streams are
  // independent (cuda, host); where a backend runs callbacks and memsets on
  // one host thread (hsa), the memsets wait for the gate, which a timer
  // opens, so nothing hangs.
  Stream gated = env.ctx.create_stream(StreamKind::NonBlocking);
  Gate gate(gated);
  const std::vector<uint8_t> ones(1 << 16, 1);
  DeviceArray old = device_array(env.ctx, {1 << 16}, dtypes::uint8);
  old.copy_from_host(HostView::of(ones), gated);
  old = DeviceArray();
  (void)fresh_arrays_keep_their_bytes(env, gate, gated, 0);
}

void released_under_work_reused_after_flush(Env &env) {
  // The same memory released under gated work, then the count limit passed
  // while the gate is still closed: the flush that follows must wait for the
  // gated copy before anything reuses the memory (where the backend's
  // synchronise waits for all work, the released block comes back as a
  // spare: DeviceProperties::synchronize_waits_for_all_work); where it
  // does, an allocation of the same size after the flush gets it back.
  env.ctx.flush_deallocations();
  const CountLimitScope limit(env.ctx, 2);
  Stream gated = env.ctx.create_stream(StreamKind::NonBlocking);
  std::atomic<bool> copied{false};
  Gate gate(gated);
  const std::vector<uint8_t> ones(1 << 16, 1);
  DeviceArray old = device_array(env.ctx, {1 << 16}, dtypes::uint8);
  const DevicePointer old_pointer = old.memory().device_pointer();
  old.copy_from_host(HostView::of(ones), gated);
  gated.add_callback([&copied] { copied = true; });
  old = DeviceArray();
  for (int i = 0; i < 2; ++i) (void)env.ctx.allocate(64);  // the third release passes the limit: a flush
  expect(copied.load() || env.ctx.pending_deallocations() > 0,
         "the flush over the limit returned before the work queued on the released memory was done");
  const bool reused = fresh_arrays_keep_their_bytes(env, gate, gated, old_pointer);
  if (env.ctx.device().properties().synchronize_waits_for_all_work)
    expect(reused, "the released block was not reused after the flush that synchronised (busy blocks)");
}

void pool_stream_order(Env &env) {
  // A MemoryPool's block goes back to the stream it was allocated on: that
  // stream reuses it at once; another only once the first stream's work is
  // done (a callback holds it busy). A plugin that runs callbacks inside
  // add_callback (every stream always idle) is checked for the rest.
  MemoryPool pool(env.ctx);
  Stream a = env.ctx.create_stream(StreamKind::NonBlocking), b = env.ctx.create_stream(StreamKind::NonBlocking);
  const DevicePointer first = pool.allocate(4096, a).device_pointer();
  expect(pool.allocate(4096, a).device_pointer() == first, "the allocating stream did not get its idle block back");
  std::atomic<bool> ran{false};
  a.add_callback([&ran] { ran = true; });
  const bool inline_callbacks = ran.load();
  a.synchronize();
  DeviceMemory on_b;
  if (!inline_callbacks) {
    std::atomic<bool> go{false};
    a.add_callback([&go] {
      for (int i = 0; i < 10000 && !go.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    expect(pool.allocate(4096, a).device_pointer() == first, "the busy stream did not get its own idle block back");
    on_b = pool.allocate(4096, b);
    expect(on_b.device_pointer() != first, "another stream got a block its stream's queued work may still use");
    go = true;
    a.synchronize();
  }
  expect(pool.allocate(4096, b).device_pointer() == first,
         "another stream did not reuse the idle block once its stream's work was done");
  const MemoryPoolStats st = pool.stats();
  const uint64_t live = on_b ? 1 : 0;
  expect(st.allocations == live && st.used_bytes == 4096 * live && st.reserved_bytes == 4096 * (1 + live),
         "pool statistics: " + std::to_string(st.allocations) + " allocations, " + std::to_string(st.used_bytes) +
             " used, " + std::to_string(st.reserved_bytes) + " reserved");
  on_b = DeviceMemory();
  const uint64_t trimmed = pool.trim();
  expect(trimmed == 4096 * (1 + live) && pool.stats().reserved_bytes == 0,
         "trim gave back " + std::to_string(trimmed) + " bytes, " + std::to_string(pool.stats().reserved_bytes) +
             " still reserved");
}

// A block freed with MemoryPool::free on a stream whose queued work still
// writes it serves no allocation on another stream before that work is
// done: four new blocks on `b`, each set to 7 on `b`, keep their 7s after
// the gated stream's write ran. Then every block is back: trim(0) leaves
// nothing reserved.
void pool_free_waits_for_its_stream(Env &env, MemoryPoolKind kind) {
  MemoryPoolOptions options;
  options.kind = kind;
  MemoryPool pool(env.ctx, options);
  Stream gated = env.ctx.create_stream(StreamKind::NonBlocking), b = env.ctx.create_stream(StreamKind::NonBlocking);
  constexpr int64_t kBytes = 1 << 16;
  {
    Gate gate(gated);
    DeviceMemory old = pool.allocate(kBytes, gated);
    const std::vector<uint8_t> ones(kBytes, 1);
    DeviceArray(old, Layout::make({kBytes}, 1), dtypes::uint8).copy_from_host(HostView::of(ones), gated);
    pool.free(old, gated);
    expect(!old, "MemoryPool::free left the caller's handle set");
    std::vector<DeviceArray> fresh;
    for (int i = 0; i < 4; ++i) {
      fresh.emplace_back(pool.allocate(kBytes, b), Layout::make({kBytes}, 1), dtypes::uint8);
      fresh.back().memset(7, b);
    }
    b.synchronize();
    gate.open();
    gated.synchronize();
    const std::vector<uint8_t> sevens(kBytes, 7);
    for (const DeviceArray &a : fresh) {
      const std::vector<uint8_t> got = bytes_of(a);
      expect(got == sevens, "a pool block was handed to another stream while work queued before its free still "
                            "wrote it: " + first_difference(got, sevens));
    }
  }
  env.ctx.synchronize();
  const MemoryPoolStats st = pool.stats();
  expect(st.allocations == 0 && st.used_bytes == 0,
         "after every block was freed the pool reports " + std::to_string(st.allocations) + " allocations, " +
             std::to_string(st.used_bytes) + " bytes used");
  pool.trim(0);
  expect(pool.stats().reserved_bytes == 0,
         "trim(0) with nothing in use left " + std::to_string(pool.stats().reserved_bytes) + " bytes reserved");
}

void pool_free_on_stream(Env &env) { pool_free_waits_for_its_stream(env, MemoryPoolKind::Caching); }

void driver_pool_free_on_stream(Env &env) {
  if (!env.ctx.supports(Capability::DriverMemoryPools)) {
    MemoryPoolOptions options;
    options.kind = MemoryPoolKind::Driver;
    expect_error([&] { MemoryPool pool(env.ctx, options); }, Status::ERROR_NOT_SUPPORTED,
                 "Capability::DriverMemoryPools", "a driver MemoryPool without the capability");
    throw Unsupported{"no memory pools as objects", to_string(Capability::DriverMemoryPools)};
  }
  pool_free_waits_for_its_stream(env, MemoryPoolKind::Driver);
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"memory.allocations_disjoint", "live allocations have their size, never overlap, hold their own bytes",
     allocations_disjoint},
    {"memory.bad_sizes_refused",
     "allocate(0) is ERROR_INVALID_VALUE; more than the device has is ERROR_OUT_OF_MEMORY (or "
     "SIZE_OVERFLOW) and the context works after",
     bad_sizes},
    {"memory.freed_memory_reused", "memory freed by dropping its handles can be allocated again", freed_memory_reused},
    {"memory.released_under_work_waits",
     "memory released while queued work still writes it serves no allocation before that work is done",
     released_under_work_waits},
    {"memory.released_under_work_reused_after_flush",
     "memory released under queued work is reused only after a flush that waited for that work; where the "
     "synchronise waits for all work, it is reused then",
     released_under_work_reused_after_flush},
    {"memory.pool_stream_order",
     "a MemoryPool block is reused at once on its stream, on another only after its stream's work; "
     "statistics and trim are exact",
     pool_stream_order},
    {"memory.pool_free_on_stream",
     "a MemoryPool block freed on a stream under queued work serves another stream only after that work",
     pool_free_on_stream},
    {"memory.driver_pool_free_on_stream",
     "the same for a MemoryPool backed by the backend's own pool (Capability::DriverMemoryPools)",
     driver_pool_free_on_stream},
};

}  // namespace conformance
}  // namespace gpuhal
